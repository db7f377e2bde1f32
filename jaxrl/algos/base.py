"""What the core needs of a learning algorithm, and the registry the CLI, config checks and driver read.

An algorithm is one module in `jaxrl/algos/` that defines its config dataclass (fields, one
doc line each, and `validate(cfg)`), a class implementing `Algorithm`, and calls
`register(name, config_cls, factory)`. Every module in `jaxrl.algos` is imported when the
registry is first read, so a new algorithm needs no edit anywhere else.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
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

    A sweep (`jaxrl.scale.sweep`) builds the algorithm again inside the traced program from a config
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


@dataclasses.dataclass(frozen=True)
class AlgorithmSpec:
    """A registered algorithm: its config schema and how to build it."""

    name: str
    config: type  # dataclass with `name` and `validate(cfg)`; the `algo` config group's schema
    factory: Callable[[Any, Any, Any], Algorithm]  # (TrainConfig, env, env_params) -> Algorithm
    doc: str = ""  # one line for --help


_REGISTRY: dict[str, AlgorithmSpec] = {}
_LOADED = False


def register(name: str, config: type, factory: Callable[[Any, Any, Any], Algorithm], doc: str = "") -> None:
    """Make `algo=<name>` available to the CLI, the Python API, config checks and the driver."""
    _REGISTRY[name] = AlgorithmSpec(name, config, factory, doc)


def _load() -> None:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        import jaxrl.algos as package

        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{module.name}")


def algorithms() -> dict[str, AlgorithmSpec]:
    """Every registered algorithm by name (PPO first)."""
    _load()
    return dict(sorted(_REGISTRY.items(), key=lambda kv: (kv[0] != "ppo", kv[0])))


def get(name: str) -> AlgorithmSpec:
    """The algorithm registered as `name`; KeyError naming the valid ones otherwise."""
    found = algorithms().get(name)
    if found is None:
        raise KeyError(f"unknown algo '{name}'; valid: {', '.join(algorithms())}")
    return found
