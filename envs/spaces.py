"""Spaces with an agent axis: one world's actions and observations for `num_agents` agents."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from gymnax.environments import spaces


class AgentsDiscrete(spaces.Discrete):
    """One `Discrete(n)` action per agent of a world: shape `(num_agents,)`, int32.

    A subclass of `Discrete` with its `n`, so code that reads `n` sees one agent's choices;
    `sample` draws every agent's action independently.
    """

    def __init__(self, n: int, num_agents: int):
        super().__init__(n)
        self.shape = (num_agents,)

    def __repr__(self) -> str:
        return f"AgentsDiscrete({self.n}, num_agents={self.shape[0]})"

    def contains(self, x: jax.Array) -> jax.Array:
        return jnp.logical_and(jnp.shape(x) == self.shape, jnp.all(super().contains(x)))


def agents_discrete(n: int, num_agents: int) -> spaces.Discrete:
    """`Discrete(n)` for one agent; `AgentsDiscrete(n, K)`, shape `(K,)`, for K agents."""
    return spaces.Discrete(n) if num_agents == 1 else AgentsDiscrete(n, num_agents)


def agents_box(shape: tuple[int, ...], num_agents: int) -> spaces.Box:
    """0/1 uint8 planes of `shape` for one agent; with K agents a leading agent axis, `(K, *shape)`."""
    return spaces.Box(0, 1, shape if num_agents == 1 else (num_agents, *shape), jnp.uint8)
