"""What the core needs of a learning algorithm: the `Algorithm` protocol the training loop (`core/loop.py`),
evaluation, sweeps and self-play call, the acting policy's signature, and the allocations an algorithm
declares. Algorithms implement it in jaxrl/algos (`jaxrl.algos.base` re-exports it beside the registry)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import jax

from jaxrl.core.stats import UpdateStats

# (params, carry, obs, key) -> (carry, action): obs and the carry have a leading batch axis
# (one row per stream); `carry` is None for feed-forward networks.
PolicyFn = Callable[[Any, Any, jax.Array, jax.Array], tuple[Any, jax.Array]]


@dataclasses.dataclass(frozen=True)
class Allocation:
    """A large on-device allocation an algorithm makes per seed, checked against free memory before compiling."""

    what: str  # e.g. "the replay buffer (200,000 transitions)"
    nbytes: int  # bytes per seed
    setting: str  # what to lower when it does not fit, e.g. "algo.buffer_size"


@runtime_checkable
class Algorithm(Protocol):
    """One algorithm's math on a runner pytree (one seed; the core vmaps seeds and scans updates).

    A runner is a `flax.struct` dataclass with at least `envs: jaxrl.core.rollout.Streams` and
    `update: jax.Array` (updates done); the rest (parameters, optimizer state, replay, keys)
    is the algorithm's own.

    A sweep (`jaxrl.config.sweep`) builds the algorithm again inside the traced program from a config
    whose swept float fields are traced scalars: the constructor and the math must treat those
    fields as numbers (no Python `if` or `max` on them), which the sweep tests check for every
    float field of every registered algorithm.
    """

    num_updates: int  # updates in the run (total_timesteps rounded down to whole updates)
    steps_per_update: int  # env (world) steps per update per seed

    def init(self, key: jax.Array, env_params: Any = None) -> Any:
        """A fresh runner for one seed, its envs started with `env_params` (None: the algorithm's own)."""
        ...

    def update(self, runner: Any) -> tuple[Any, UpdateStats]:
        """One update: act in the envs and learn; returns the runner and the update's stats."""
        ...

    def policy(self, greedy: bool = True) -> PolicyFn:
        """The acting policy: greedy (evaluation) or as in training (sampled / epsilon-greedy)."""
        ...

    def policy_params(self, runner: Any) -> Any:
        """What `policy` needs from a runner (network params, observation statistics)."""
        ...

    def initial_carry(self, batch: int) -> Any:
        """The policy's carry for `batch` fresh streams (None for feed-forward networks)."""
        ...

    def memory(self) -> list[Allocation]:
        """Large allocations per seed beyond the network (replay, rollout storage)."""
        ...

    # Self-play (`jaxrl.algos.selfplay`) plays the opponents' seats from these.
    sampled_scores: bool  # True: `action_scores` are logits to sample from; False: values to take the argmax of

    def action_scores(self) -> Callable[[Any, Any, jax.Array], tuple[Any, jax.Array]]:
        """`(params, carry, obs) -> (carry, per-action scores)`: what `policy` chooses from."""
        ...

    # The play page (`jaxrl.play`) shows this beside each step.
    def readout(self) -> Callable[[Any, Any, jax.Array], tuple[jax.Array, jax.Array]]:
        """`(params, carry, obs) -> (per-action numbers, value)`: the policy's action probabilities and the critic's
        value (actor-critics), or the Q-values and their maximum (value-based: `sampled_scores` is False)."""
        ...
