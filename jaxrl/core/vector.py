"""The env batch as a learner sees it: `num_envs` worlds of `num_agents` agents are `num_envs * num_agents` streams.

Every agent is one stream of (observation, action, reward, done) with the policy's parameters
shared: observations, actions and rewards are flattened world-major, `(worlds * agents, ...)`,
and a world's terminated / truncated flags are repeated for each of its agents (agents of one
world start and end their episodes together). With one agent per world (every gymnax env)
this is a plain `vmap` over worlds.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from gymnax.environments import spaces

from jaxrl.envs.base import hook, offers


def make(env: Any, num_envs: int) -> VectorEnv:
    """The batch of `num_envs` worlds an algorithm steps: the env's own (`env.vectorized`, e.g. self-play's)
    or a `VectorEnv`."""
    return env.vectorized(num_envs) if offers(env, "vectorized") else VectorEnv(env, num_envs)


class VectorEnv:
    """`reset` and `step` of `num_envs` worlds, in streams."""

    def __init__(self, env: Any, num_envs: int):
        self.env = env
        self.num_envs = num_envs
        self.num_agents = int(hook(env, "num_agents"))
        self.streams = num_envs * self.num_agents

    def observation_space(self, params: Any):
        """One stream's (one agent's) observation space: the env's without the agent axis."""
        space = self.env.observation_space(params)
        if self.num_agents == 1:
            return space
        strip = lambda bound: bound[0] if jnp.ndim(bound) == len(space.shape) else bound
        return spaces.Box(strip(space.low), strip(space.high), tuple(space.shape[1:]), space.dtype)

    def action_space(self, params: Any):
        """One stream's (one agent's) action space: `Discrete(n)` for an env with an agent axis."""
        space = self.env.action_space(params)
        if self.num_agents == 1:
            return space
        if not isinstance(space, spaces.Discrete):
            raise TypeError(f"several agents per world need discrete actions, got {space}")
        return spaces.Discrete(space.n, dtype=space.dtype)

    def _flat(self, x: jax.Array) -> jax.Array:
        """(worlds, agents, ...) -> (streams, ...); unchanged with one agent per world."""
        return x if self.num_agents == 1 else x.reshape((self.streams, *x.shape[2:]))

    def _per_agent(self, x: jax.Array) -> jax.Array:
        """(worlds,) -> (streams,): a world's value for each of its agents."""
        return x if self.num_agents == 1 else jnp.repeat(x, self.num_agents, axis=0)

    def reset(self, key: jax.Array, params: Any) -> tuple[jax.Array, Any]:
        obs, state = jax.vmap(self.env.reset, in_axes=(0, None))(jax.random.split(key, self.num_envs), params)
        return self._flat(obs), state

    def step_keys(self, key: jax.Array, steps: int) -> jax.Array:
        """(steps, num_envs) keys for `steps` vector steps, drawn at once: one threefry call per
        rollout instead of one per step (on CPU each call is a loop of ~80 small kernels)."""
        return jax.random.split(key, (steps, self.num_envs))

    def step(self, keys: jax.Array, state: Any, action: jax.Array, params: Any):
        """(obs, state, reward, terminated, truncated, info), all but `state` in streams; `keys` is
        one key per world, (num_envs,) (see `step_keys`).

        `info["final_observation"]` is in streams; `info["world_done"]` (worlds,) marks worlds whose
        episode ended; other info entries (e.g. `score`) stay per world.
        """
        if self.num_agents > 1:
            action = action.reshape((self.num_envs, self.num_agents, *action.shape[1:]))
        obs, state, reward, terminated, truncated, info = jax.vmap(self.env.step, in_axes=(0, 0, 0, None))(
            keys, state, action, params
        )
        info = {
            **info,
            "final_observation": self._flat(info["final_observation"]),
            "world_done": terminated | truncated,
        }
        return (
            self._flat(obs),
            state,
            self._flat(reward),
            self._per_agent(terminated),
            self._per_agent(truncated),
            info,
        )
