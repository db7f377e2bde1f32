"""Minibatch shuffles: valid, independent, uniform permutations (jaxrl/core/shuffle.py)."""

import jax
import numpy as np
import pytest

from jaxrl.core import shuffle


@pytest.mark.parametrize("n", [1, 2, 7, 512, 3000, 16384])
def test_every_row_is_a_permutation(n):
    perms = np.asarray(jax.jit(shuffle.permutations, static_argnums=(1, 2))(jax.random.key(0), n, 4))
    assert perms.shape == (4, n) and perms.dtype == np.int32
    for row in perms:
        np.testing.assert_array_equal(np.sort(row), np.arange(n))
    if n >= 7:
        assert len({tuple(row) for row in perms}) == 4  # epochs get different orders


def test_rounds_grow_until_ties_are_unlikely():
    assert shuffle.rounds_for(512) == (9, 1)  # 23 random bits: 512^2 / 2^24 < 1 tied pair expected
    assert shuffle.rounds_for(16384) == (14, 2)  # 18 bits per round would leave ~512 tied pairs
    bits, rounds = shuffle.rounds_for(2**20)
    assert rounds * (32 - bits) >= 2 * bits


@pytest.mark.parametrize("n", [5, 2048 + 3])  # one round; two rounds (the chained path)
def test_positions_are_uniform(n):
    # Where element 0 lands and which element lands first, over many draws: a chi-square test per
    # marginal. A bias (e.g. ties kept in index order) shows in both.
    draws = 6000 if n == 5 else 1500
    perms = np.asarray(shuffle.permutations(jax.random.key(1), n, draws))
    cells = min(n, 5)
    landing = np.bincount(np.argmax(perms == 0, axis=1) * cells // n, minlength=cells)
    first = np.bincount(perms[:, 0] * cells // n, minlength=cells)
    for counts in (landing, first):
        expected = draws / cells
        chi2 = float(((counts - expected) ** 2 / expected).sum())
        assert chi2 < 18.5, counts  # p ~ 0.001 at 4 degrees of freedom


def test_refuses_sizes_it_cannot_pack():
    with pytest.raises(ValueError, match="n=0"):
        shuffle.permutations(jax.random.key(0), 0, 1)


def test_minibatches_flatten_steps_and_streams_then_cut_in_the_order_of_the_permutation():
    data = {"x": np.arange(6).reshape(2, 3), "y": np.arange(12).reshape(2, 3, 2)}  # (steps, streams, ...)
    perm = np.array([5, 0, 4, 1, 3, 2])
    out = shuffle.minibatches(data, perm, 3)
    np.testing.assert_array_equal(out["x"], [[5, 0], [4, 1], [3, 2]])
    assert out["y"].shape == (3, 2, 2)
    np.testing.assert_array_equal(out["y"][0], [[10, 11], [0, 1]])
