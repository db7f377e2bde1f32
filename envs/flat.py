"""Many worlds of a big-board env stepped as one flat board, and the random placement both open arenas
reset with.

An env whose step is per snake (gathers and scatters at a few hundred cells of a large board) loses
most of its speed to vmap's batching of those scatters and of its while loops (3-4x on the CPU).
`FlatWorlds` gives it `_stepper`, one world's step whose vmap instead calls the env's `_step_worlds` once on every
world's leaves stacked (each leaf, params included, with a leading worlds axis), where the worlds
lie end to end as one flat board; a vmap of that (over seeds) merges its axis into the worlds'.
The flat board's indexes are int32: more worlds than fit below 2**31 are stepped as groups that do, in
turn (`lax.map`), each group one flat board.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.envs.checks import INT32_MAX


class FlatWorlds:
    """Mixin: `_stepper(key, state, action, params)` is one world's step through `_step_worlds`."""

    index_limit = INT32_MAX  # the largest flat-board index (int32); tests lower it to step small maps in groups

    def _step_worlds(self, keys, state, action, params):  # pragma: no cover - each env defines it
        raise NotImplementedError

    def _world_span(self) -> int:
        """Flat indexes one world takes in the largest of its flat arrays: its board by default."""
        return self.num_cells

    def _grouped(self, keys, state, action, params):
        """_step_worlds on every world: at once where their flat indexes fit in int32, else in groups that fit,
        one after another (the last group padded with copies of the last world, dropped after)."""
        worlds = keys.shape[0]
        most = max(1, (self.index_limit - 1) // self._world_span())  # `nowhere` (worlds x span) is an index too
        if worlds <= most:
            return self._step_worlds(keys, state, action, params)
        groups = -(-worlds // most)
        per = -(-worlds // groups)  # groups as even as they go: fewer than `groups` copies pad the last

        def grouped(x):
            x = jnp.concatenate([x, jnp.broadcast_to(x[-1:], (groups * per - worlds, *x.shape[1:]))])
            return x.reshape(groups, per, *x.shape[1:])

        out = jax.lax.map(lambda a: self._step_worlds(*a), jax.tree.map(grouped, (keys, state, action, params)))
        return jax.tree.map(lambda x: x.reshape(groups * per, *x.shape[2:])[:worlds], out)

    @functools.cached_property
    def _stepper(self):
        @jax.custom_batching.custom_vmap
        def one(key, state, action, params):
            out = self._worlds(*jax.tree.map(lambda x: jnp.asarray(x)[None], (key, state, action, params)))
            return jax.tree.map(lambda x: x[0], out)

        @one.def_vmap
        def many(axis_size, in_batched, *args):
            args = jax.tree.map(lambda x, b: full(x, b, axis_size), args, tuple(in_batched))
            out = self._worlds(*args)
            return out, jax.tree.map(lambda _: True, out)

        return one

    def _worlds(self, keys, state, action, params):
        """_step_worlds, whose own vmap merges its axis into the worlds' (vmap over seeds of vmap over worlds)."""

        @jax.custom_batching.custom_vmap
        def run(keys, state, action, params):
            return self._grouped(keys, state, action, params)

        @run.def_vmap
        def merged(axis_size, in_batched, *args):
            args = jax.tree.map(lambda x, b: full(x, b, axis_size), args, tuple(in_batched))
            args = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), args)
            out = self._worlds(*args)
            out = jax.tree.map(lambda x: x.reshape(axis_size, -1, *x.shape[1:]), out)
            return out, jax.tree.map(lambda _: True, out)

        return run(keys, state, action, params)


def full(x, batched, size):
    """x with a leading axis of `size`: as it is when vmap batched it, else broadcast."""
    x = jnp.asarray(x)
    return x if batched else jnp.broadcast_to(x, (size, *x.shape))


def distinct_cells(u: jax.Array, cells: int, count: int) -> jax.Array:
    """(count,) distinct int32 indices in [0, cells) from two uniforms `u`: a random affine permutation of
    the cells (a random unit coprime with their count, times i, plus a random offset)."""
    most = min(cells, 4096, INT32_MAX // max(count, 1))  # unit * i stays below 2**31
    units = np.array([a for a in range(1, most) if np.gcd(a, cells) == 1] or [1], np.int32)
    unit = jnp.asarray(units)[jnp.minimum((u[0] * len(units)).astype(jnp.int32), len(units) - 1)]
    offset = jnp.minimum((u[1] * cells).astype(jnp.int32), cells - 1)
    return (unit * jnp.arange(count, dtype=jnp.int32) + offset) % cells


__all__ = ["FlatWorlds", "distinct_cells", "full"]
