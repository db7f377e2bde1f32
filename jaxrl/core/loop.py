"""The chunked training loop every algorithm runs on: fixed-length chunks, one compile, a pure `train(key)`.

The host drives a run in chunks of `length` updates, one compiled call each. The last chunk
(or one cut at a curriculum boundary) is shorter: `run_chunk` takes the number of updates to
run as a traced value, so one compiled program serves every chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.extend
import jax.numpy as jnp

from jaxrl.core.algorithm import Algorithm
from jaxrl.core.stats import UpdateStats

Update = Callable[[Any], tuple[Any, UpdateStats]]


def run_chunk(update: Update, runner: Any, num_active: jax.Array, length: int) -> tuple[Any, UpdateStats]:
    """`num_active` (<= `length`) calls of `update`; stats stacked as (length, ...), zeros past `num_active`.

    A while loop with a traced trip count rather than a scan whose tail slots are skipped by a
    `cond`: the update body then has no branch around it (measured on CartPole's small batches,
    where anything run once per update shows).
    """
    # The update is traced once: its jaxpr gives the stats' shapes and is the loop's body (tracing it
    # a second time for the body doubled the Python half of every training program's compile).
    closed, out_shape = jax.make_jaxpr(update, return_shape=True)(runner)
    traced_update, out_tree = jax.extend.core.jaxpr_as_fun(closed), jax.tree.structure(out_shape)
    stacked = jax.tree.map(lambda s: jnp.zeros((length, *s.shape), s.dtype), out_shape[1])

    def body(carry: tuple[jax.Array, Any, UpdateStats]) -> tuple[jax.Array, Any, UpdateStats]:
        i, runner, stacked = carry
        runner, stats = jax.tree.unflatten(out_tree, traced_update(*jax.tree.leaves(runner)))
        put = lambda buf, x: jax.lax.dynamic_update_index_in_dim(buf, x, i, axis=0)
        return i + 1, runner, jax.tree.map(put, stacked, stats)

    start = (jnp.zeros((), jnp.int32), runner, stacked)
    _, runner, stacked = jax.lax.while_loop(lambda c: c[0] < num_active, body, start)
    return runner, stacked


def make_train(algo: Algorithm) -> Callable[[jax.Array], tuple[Any, UpdateStats]]:
    """The whole run as one pure function of the key: `jax.jit(jax.vmap(make_train(algo)))(keys)` trains seeds."""

    def train(key: jax.Array) -> tuple[Any, UpdateStats]:
        return jax.lax.scan(lambda r, _: algo.update(r), algo.init(key), None, length=algo.num_updates)

    return train
