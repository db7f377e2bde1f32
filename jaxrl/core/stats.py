"""Episode statistics: summed on device per update, turned into means on the host.

An update returns an `UpdateStats`: the `EpisodeStats` sums over the episodes that ended
during it, and the algorithm's own figures (losses, epsilon). Sums, not per-episode lists,
so a chunk of updates comes back to the host as a few kilobytes.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

SCORE = "score"  # an env may report info["score"] per world (Snake: apples eaten); it is averaged like the return
WON = "won"  # an env may report info["won"] per world (Snake: a full board); averaged into a win rate
PLACEMENT = "placement"  # info["placement"] per world (the arena: the learners' mean placement, 1 = last standing)
# Per-world figures an env's step info may report, each averaged over the worlds that ended (`<name>_sum`):
# score (Snake's apples, the grid's learners' units, the arena's learners' length), placement and kills
# (the arena's learners'), bot_score (what the grid's scripted bots collected).
WORLD_FIGURES = (SCORE, PLACEMENT, "kills", "bot_score")


@struct.dataclass
class EpisodeStats:
    """Sums over the episodes that ended: per stream (agent), and per world for the score."""

    episodes: jax.Array  # () float32, stream episodes that ended
    return_sum: jax.Array  # () float32, their returns summed
    length_sum: jax.Array  # () float32, their lengths summed
    world_episodes: jax.Array  # () float32, world episodes that ended (= episodes with one agent per world)
    score_sum: jax.Array | None = None  # () float32, info["score"] summed over ended worlds; None: no score
    won_sum: jax.Array | None = None  # () float32, ended worlds whose info["won"] holds; None: no wins reported
    placement_sum: jax.Array | None = None  # () float32, info["placement"] summed over ended worlds; None: none
    kills_sum: jax.Array | None = None  # () float32, info["kills"] likewise
    bot_score_sum: jax.Array | None = None  # () float32, info["bot_score"] likewise

    @classmethod
    def zeros_like(cls, stats: EpisodeStats) -> EpisodeStats:
        return jax.tree.map(jnp.zeros_like, stats)

    def __add__(self, other: EpisodeStats) -> EpisodeStats:
        return jax.tree.map(jnp.add, self, other)


@struct.dataclass
class UpdateStats:
    """What one update reports: episode sums and the algorithm's own figures (one value each)."""

    episodes: EpisodeStats
    learner: dict[str, jax.Array]  # e.g. policy_loss, value_loss, entropy, grad_norm (PPO); loss, q_mean, epsilon (DQN)
    finite: jax.Array | None = None  # () bool: the update's losses and gradient norm finite (None: check `learner`)


def global_norm(tree: Any) -> jax.Array:
    """() float32: the L2 norm of all arrays in `tree` together (what `clip_by_global_norm` clips)."""
    return jnp.sqrt(sum(jnp.sum(jnp.square(x.astype(jnp.float32))) for x in jax.tree.leaves(tree)))


def all_finite(tree: Any) -> jax.Array:
    """() bool: every float in `tree` finite (no NaN, no inf)."""
    leaves = [jnp.isfinite(x).all() for x in jax.tree.leaves(tree) if jnp.issubdtype(jnp.result_type(x), jnp.inexact)]
    return jnp.stack(leaves).all() if leaves else jnp.bool_(True)


def episode_step(
    reward: jax.Array,
    done: jax.Array,
    world_done: jax.Array,
    info: dict[str, Any],
    ep_return: jax.Array,
    ep_length: jax.Array,
) -> tuple[jax.Array, jax.Array, EpisodeStats]:
    """Advance the running per-stream return and length by one step; sum the episodes that ended.

    `done` is per stream (streams,); `world_done` per world (worlds,); with one agent per world
    they are the same array. Returns the running sums for the next step and this step's stats.
    """
    ep_return = ep_return + reward
    ep_length = ep_length + 1
    won = info.get(WON)
    summed = {
        f"{name}_sum": jnp.where(world_done, info[name], 0).sum(dtype=jnp.float32)
        for name in WORLD_FIGURES
        if name in info
    }
    stats = EpisodeStats(
        episodes=done.sum(dtype=jnp.float32),
        return_sum=jnp.where(done, ep_return, 0.0).sum(),
        length_sum=jnp.where(done, ep_length, 0).sum(dtype=jnp.float32),
        world_episodes=world_done.sum(dtype=jnp.float32),
        won_sum=None if won is None else (world_done & won).sum(dtype=jnp.float32),
        **summed,
    )
    return jnp.where(done, 0.0, ep_return), jnp.where(done, 0, ep_length), stats


# -- host side ----------------------------------------------------------------------------


def as_dict(stats: EpisodeStats) -> dict[str, Any]:
    """The record's fields by name (absent optional ones left out): for JSON and tables."""
    return {f.name: getattr(stats, f.name) for f in dataclasses.fields(stats) if getattr(stats, f.name) is not None}


def from_dict(values: dict[str, Any]) -> EpisodeStats:
    """Inverse of `as_dict` (host arrays or lists; missing world counts mean one agent per world)."""
    get = lambda k: None if values.get(k) is None else np.asarray(values[k], np.float64)
    world = get("world_episodes")
    return EpisodeStats(
        episodes=get("episodes"),
        return_sum=get("return_sum"),
        length_sum=get("length_sum"),
        world_episodes=get("episodes") if world is None else world,
        won_sum=get("won_sum"),
        **{f"{name}_sum": get(f"{name}_sum") for name in WORLD_FIGURES},
    )


def means(stats: EpisodeStats, agents_per_world: int = 1) -> dict[str, float]:
    """Means over the finished episodes of summed stats (any shape; NaN where none finished).

    `episode_return` is per stream (per agent); with several agents per world `world_return`
    (a world's return: the sum over its agents) is added. `win_rate` and the WORLD_FIGURES are per world.
    """
    n = float(np.sum(stats.episodes))
    worlds = float(np.sum(stats.world_episodes))
    per = lambda total, count: float(np.sum(total)) / count if count else math.nan
    out = {"episode_return": per(stats.return_sum, n), "episode_length": per(stats.length_sum, n)}
    if agents_per_world > 1:
        out["world_return"] = per(stats.return_sum, worlds)
    for name in WORLD_FIGURES:
        total = getattr(stats, f"{name}_sum")
        if total is not None:
            out[name] = per(total, worlds)
    if stats.won_sum is not None:
        out["win_rate"] = per(stats.won_sum, worlds)
    out["episodes"] = n
    return out


@struct.dataclass
class ObsStats:
    """Running mean and variance of observations (Chan's parallel update), as SB3's VecNormalize keeps."""

    mean: jax.Array  # obs_shape float32
    var: jax.Array  # obs_shape float32
    count: jax.Array  # () float32

    @classmethod
    def create(cls, obs_shape: tuple[int, ...]) -> ObsStats:
        return cls(jnp.zeros(obs_shape, jnp.float32), jnp.ones(obs_shape, jnp.float32), jnp.float32(1e-4))

    def update(self, batch: jax.Array) -> ObsStats:
        """Fold in a batch of observations (any leading axes)."""
        x = batch.reshape((-1,) + self.mean.shape).astype(jnp.float32)
        n = jnp.float32(x.shape[0])
        mean, var = x.mean(axis=0), x.var(axis=0)
        total = self.count + n
        delta = mean - self.mean
        m2 = self.var * self.count + var * n + delta**2 * self.count * n / total
        return ObsStats(self.mean + delta * n / total, m2 / total, total)

    def normalize(self, obs: jax.Array, clip: float = 10.0) -> jax.Array:
        return jnp.clip((obs.astype(jnp.float32) - self.mean) / jnp.sqrt(self.var + 1e-8), -clip, clip)
