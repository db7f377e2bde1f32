"""Random permutations for minibatch shuffling, by sorting one packed uint32 array.

`jax.random.permutation` sorts random keys together with the indices (a two-operand sort, and
two rounds from 2^11 elements up). XLA's CPU sort calls a compiled comparator per comparison
for that, while a single uint32 operand gets a plain integer sort, several times faster (figures:
docs/benchmarks.md, "Measured choices in the code").

Each round sorts `random bits | index` and so orders by the random bits, ties kept in index
order. Rounds chain (a round's ties keep the previous round's order), so the permutation is
uniform up to ties in all `rounds * random_bits` bits at once; rounds are added until the
expected number of such tied pairs, n^2 / 2^(bits + 1), is below one.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def rounds_for(n: int) -> tuple[int, int]:
    """(index bits, sorting rounds) for permutations of n elements."""
    index_bits = max(1, (n - 1).bit_length())
    random_bits = 32 - index_bits
    return index_bits, max(1, -(-2 * index_bits // random_bits))


def permutations(key: jax.Array, n: int, count: int) -> jax.Array:
    """(count, n) int32: `count` independent uniformly random permutations of range(n)."""
    if not 1 <= n <= 2**31:
        raise ValueError(f"n={n} is invalid: permutations need 1 <= n <= 2^31")
    index_bits, rounds = rounds_for(n)
    index = jnp.arange(n, dtype=jnp.uint32)
    high = jnp.uint32((0xFFFFFFFF << index_bits) & 0xFFFFFFFF)
    bits = jax.random.bits(key, (rounds, count, n), jnp.uint32)
    perm = None
    for r in range(rounds):
        order = jax.lax.sort((bits[r] & high) | index, dimension=1) & ~high  # positions, by random bits
        perm = order if perm is None else jnp.take_along_axis(perm, order, axis=1)
    return perm.astype(jnp.int32)


def minibatches(data: Any, perm: jax.Array, count: int) -> Any:
    """Every array of `data` (steps, streams, ...) flattened to its steps x streams items, put in the
    order of `perm` (a permutation of them) and cut into `count` minibatches: (count, items / count, ...)."""

    def cut(x: jax.Array) -> jax.Array:
        x = x.reshape((-1,) + x.shape[2:])[perm]
        return x.reshape((count, -1) + x.shape[1:])

    return jax.tree.map(cut, data)
