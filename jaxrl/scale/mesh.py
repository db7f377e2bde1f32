"""Where a run computes: a named device mesh (`seed` x `env`) and the runner's shardings on it.

`devices=N` (or `all`) lays N local devices out as a 2-D `jax.sharding.Mesh`: `seed_devices` rows
split the seeds, and each row's devices split every seed's env batch. The chunk program is one
`jax.jit` whose runner is sharded with `NamedSharding`: env states, observations, episode sums,
policy carries and DQN's replay columns along `env`; network parameters, optimizer state and
keys replicated along `env`. XLA partitions the program from those shardings. Everything per
env stays on its device (the env step, the rollout, GAE and Q(lambda) over time, each env
group's shuffle or replay sample: `jaxrl.core.groups`), and what reduces over the batch (the
minibatch loss, and so its gradient, advantage normalization, episode sums) becomes an
all-reduce across `env`. So N devices train exactly like one device holding N times the envs in
N env groups, which is what `env_groups` reproduces on one device.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

from jaxrl.config.schema import ConfigError, TrainConfig

SEED, ENV = "seed", "env"  # the mesh's axis names

# Runner fields with an env (stream) axis, and its position in each leaf after the seed axis:
# `envs` (rollout.Streams) is all per env or per stream except the env params and self-play's pool; DQN's replay is
# (rows, streams, ...) except its write counter.
ENV_AXES = {"envs": 0, "replay": 1}
REPLICATED = {("envs", "params"), ("envs", "state", "pool")}  # field paths, at any depth


@dataclasses.dataclass(frozen=True)
class Layout:
    """The devices a run uses and how they split seeds and envs."""

    devices: tuple[Any, ...]
    seed_devices: int
    env_devices: int

    @property
    def size(self) -> int:
        return len(self.devices)

    @property
    def mesh(self) -> jax.sharding.Mesh:
        grid = np.array(self.devices, dtype=object).reshape(self.seed_devices, self.env_devices)
        return jax.sharding.Mesh(grid, (SEED, ENV))

    def describe(self) -> str:
        """One line for the run's start: what is split how."""
        if self.size == 1:
            return "1 device"
        return f"{self.size} devices, mesh seed x env = {self.seed_devices} x {self.env_devices}"


def layout(cfg: TrainConfig, available: list[Any]) -> Layout:
    """The layout of `cfg.devices` over the platform's `available` devices; ConfigError (one line)
    when the count is more than there are or does not divide what it must split."""
    have = len(available)
    n = have if cfg.devices == "all" else cfg.devices
    platform = available[0].platform if available else "?"
    processes = jax.process_count()
    if processes > 1 and n != have:
        raise ConfigError(
            f"devices={cfg.devices}: a distributed run spreads one program over the devices of all {processes}"
            f" processes; use devices=all ({have} {platform} devices here)"
        )
    if n > have:
        raise ConfigError(
            f"devices={cfg.devices} is more than the {have} {platform} device(s) jax sees: use 1 to {have} or all"
        )
    s = cfg.seed_devices
    if n % s:
        raise ConfigError(
            f"seed_devices={s} must divide devices={n}: the mesh is seed_devices x (devices / seed_devices)"
        )
    e = n // s
    if cfg.num_envs % e:
        raise ConfigError(
            f"num_envs={cfg.num_envs} must divide by the {e} devices along env (devices={n} / seed_devices={s})"
        )
    groups = cfg.env_groups or e
    if groups % e:
        raise ConfigError(
            f"env_groups={groups} must be a multiple of the {e} devices along env: each holds whole groups"
        )
    return Layout(tuple(available[:n]), s, e)


def resolve(cfg: TrainConfig, lay: Layout) -> TrainConfig:
    """`cfg` with env_groups filled in (the devices along env unless set), its algorithm checked again
    for the groups (minibatches and samples must split evenly among them)."""
    cfg = dataclasses.replace(cfg, env_groups=cfg.env_groups or lay.env_devices)
    cfg.algo.validate(cfg)
    return cfg


def _env_axis(path: tuple[Any, ...], ndim: int) -> int | None:
    """The env axis of a runner leaf (seed axis not counted), from the field it sits under."""
    names = tuple(str(getattr(p, "name", getattr(p, "key", p))) for p in path)
    if not names or names[0] not in ENV_AXES or any(names[: len(r)] == r for r in REPLICATED):
        return None
    axis = ENV_AXES[names[0]]
    return axis if ndim > axis else None


def runner_shardings(lay: Layout, abstract: Any) -> Any:
    """`NamedSharding`s for a runner of all seeds (leading seed axis): seeds along `seed`, env axes along `env`."""
    mesh = lay.mesh

    def spec(path: tuple[Any, ...], leaf: Any) -> jax.sharding.NamedSharding:
        dims: list[str | None] = [SEED] + [None] * (leaf.ndim - 1)
        axis = _env_axis(path, leaf.ndim - 1)
        if axis is not None:
            dims[1 + axis] = ENV
        return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*dims))

    return jax.tree_util.tree_map_with_path(spec, abstract)


def seed_sharding(lay: Layout) -> jax.sharding.NamedSharding:
    """Arrays with a leading seed axis and nothing per env (the chunk's stats): split along `seed` only."""
    return jax.sharding.NamedSharding(lay.mesh, jax.sharding.PartitionSpec(SEED))


def stats_sharding(lay: Layout) -> jax.sharding.NamedSharding:
    """A chunk's stats (leading seed axis, a few kilobytes): along `seed` within one process; replicated
    when the mesh spans processes, so that every process reads them whole."""
    spec = jax.sharding.PartitionSpec(SEED) if jax.process_count() == 1 else jax.sharding.PartitionSpec()
    return jax.sharding.NamedSharding(lay.mesh, spec)


def put(tree: Any, shardings: Any) -> Any:
    """`tree` placed with `shardings` (a matching tree; None: jax's default device). Host arrays bound for
    devices of several processes are assembled from the shards each process holds a copy of."""
    if shardings is None:
        return jax.device_put(tree)

    def place(x: Any, sharding: jax.sharding.Sharding) -> Any:
        if sharding.is_fully_addressable or (isinstance(x, jax.Array) and not x.is_fully_addressable):
            return jax.device_put(x, sharding)
        host = np.asarray(x)
        return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])

    return jax.tree.map(place, tree, shardings)
