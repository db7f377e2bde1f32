"""Building blocks of env steps, for code that runs inside the compiled step: hashing, a fusion boundary,
static table lookups, and the compass the snake envs move by."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

# Row and column offsets of the four directions: 0 up, 1 right, 2 down, 3 left (Snake and the arena).
DROW = (-1, 0, 1, 0)
DCOL = (0, 1, 0, -1)


def hash32(x: jax.Array) -> jax.Array:
    """Murmur3's 32-bit finalizer: a bijection of uint32 with full avalanche."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def mix(key: jax.Array, salt: int) -> jax.Array:
    """() uint32: a key's bits hashed with a salt (distinct salts, independent words)."""
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    words = key.reshape(-1).astype(jnp.uint32)
    return hash32(words[0] ^ hash32(words[-1] ^ jnp.uint32(salt)))


def fusion_boundary(tree: Any, token: jax.Array | None = None) -> Any:
    """`tree` unchanged, but computed into buffers of its own before any consumer reads it.

    XLA's CPU fusion folds a producer into every consumer that reads it, and a consumer that reads
    a value per element it writes recomputes the producer per element: an observation of 300 cells
    recomputed the whole env step (and the policy's action draw before it) 300 times per env. A
    one-trip while loop whose trip count XLA cannot prove is a fusion boundary (it starts at
    min(token, 0), with `token` non-negative; by default a word of the tree's first leaf, shifted
    so that it is); the select inside keeps the loop from being removed. `optimization_barrier`
    does not stop fusion on CPU. Under vmap the loop is batched: one pass over the tree's values.
    """
    if token is None:
        word = jnp.ravel(jax.tree.leaves(tree)[0])[0].astype(jnp.uint32) >> 1
        token = jax.lax.bitcast_convert_type(word, jnp.int32)

    def body(carry):
        i, x = carry
        return i + 1, jax.tree.map(lambda a: jnp.where(i > 1, jnp.zeros_like(a), a), x)

    start = jnp.minimum(jnp.asarray(token, jnp.int32), 0)
    return jax.lax.while_loop(lambda c: c[0] < 1, body, (start, tree))[1]


def pick(values: tuple[int, ...], index: jax.Array) -> jax.Array:
    """values[index] for a small static table, as selects (no gather under vmap)."""
    out = jnp.int32(values[-1])
    for i in range(len(values) - 2, -1, -1):
        out = jnp.where(index == i, jnp.int32(values[i]), out)
    return out
