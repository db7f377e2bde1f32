"""Env groups: the env batch split into `groups` equal, consecutive parts that shuffle and sample on their own.

Data-parallel training shards the env batch over devices. For a device to build its share of a
minibatch (PPO, PQN) or of a replay sample (DQN) from its own envs, the randomness must not mix
envs across shards: each group draws its own permutation or sample from its own envs, and a
minibatch is every group's part side by side. The number of groups is part of the run's math,
not of its layout: `env_groups=4` on one device computes what `devices=4` computes on four (up to
float rounding in the reductions), which is what lets a sharded run be checked against one device.

One group is the plain whole-batch shuffle: these helpers then call the function as it is, with
no vmap (a vmap of size 1 would batch every gather, see `jaxrl.run.driver.over_seeds`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxrl.core import shuffle


def group_major(x: jax.Array, groups: int, axis: int) -> jax.Array:
    """`x` with its stream axis `axis` split into (groups, streams / groups), the group axis moved to the front."""
    n = x.shape[axis]
    x = x.reshape(x.shape[:axis] + (groups, n // groups) + x.shape[axis + 1 :])
    return jnp.moveaxis(x, axis, 0)


def merge_groups(x: jax.Array, axis: int) -> jax.Array:
    """The inverse direction of `group_major` for a per-group result (groups, ...): the group axis
    joins axis `axis` of the per-group result, groups in order (group-major within that axis)."""
    x = jnp.moveaxis(x, 0, axis)
    return x.reshape(x.shape[:axis] + (x.shape[axis] * x.shape[axis + 1],) + x.shape[axis + 2 :])


def by_group(fn: Callable[..., Any], groups: int) -> Callable[..., Any]:
    """`fn` over arrays (or pytrees) whose leading axis is streams, run on each group's streams
    separately; results with a leading stream axis are joined back in stream order."""
    if groups == 1:
        return fn

    def grouped(*args: Any) -> Any:
        split = jax.tree.map(lambda x: group_major(x, groups, 0), args)
        out = jax.vmap(fn)(*split)
        return jax.tree.map(lambda x: merge_groups(x, 0), out)

    return grouped


def keys(key: jax.Array, groups: int) -> jax.Array:
    """One key per group, (groups,); with one group, the key itself (so one group draws exactly
    what the ungrouped code drew)."""
    return key[None] if groups == 1 else jax.random.split(key, groups)


def permutations(key: jax.Array, n: int, count: int, groups: int) -> jax.Array:
    """(count, groups, n / groups): `count` random permutations of each group's n / groups items;
    with one group, `shuffle.permutations(key, n, count)` itself."""
    if groups == 1:
        return shuffle.permutations(key, n, count)[:, None]
    draw = lambda k: shuffle.permutations(k, n // groups, count)
    return jax.vmap(draw, out_axes=1)(keys(key, groups))


def minibatches(cut: Callable[[Any, jax.Array], Any], data: Any, perm: jax.Array, groups: int, join: Any = 1) -> Any:
    """`cut(data, order)` on each group's streams (axis 1 of every array of `data`, time-major as
    collected) with that group's row of `perm` (groups, items per group): each group shuffles its
    own data, and minibatch i is every group's i-th part side by side. `join` is the axis along which
    the groups' parts of each result array meet: one int, or a pytree prefix of the result."""
    if groups == 1:
        return cut(data, perm[0])
    out = jax.vmap(cut)(jax.tree.map(lambda x: group_major(x, groups, 1), data), perm)
    merge = lambda axis, tree: jax.tree.map(lambda x: merge_groups(x, axis), tree)
    return jax.tree.map(merge, join, out)


def check_split(groups: int, total: int, parts: int, what: str) -> None:
    """ConfigError unless each group's share of `total` `what` splits into `parts` equal minibatches
    (or samples): a minibatch is every group's part side by side."""
    from jaxrl.errors import ConfigError

    if groups > 1 and (total // groups) % parts:
        raise ConfigError(
            f"env_groups={groups} gives each group {total // groups} {what}, which must split into {parts}"
            " equal parts (one per minibatch): change num_envs, the minibatches or the device count"
        )
