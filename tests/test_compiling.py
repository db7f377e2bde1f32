"""jaxrl lowers its programs with threefry written out on CPU: same bits, no loops, nothing leaks out."""

import jax
import numpy as np

from jaxrl import compiling


def draws(key):
    a, b = jax.random.split(key)
    return jax.random.uniform(a, (5,)), jax.random.normal(b, (3, 2)), jax.random.randint(a, (4,), 0, 9)


def test_same_bits_as_jax_without_the_loops():
    key = jax.random.key(7)
    expected = jax.jit(draws)(key)
    compiled = compiling.compile_jit(jax.jit(lambda k: draws(k)), key)
    for a, b in zip(expected, compiled(key), strict=True):
        np.testing.assert_array_equal(a, b)
    if compiling._threefry_parts() is not None:  # jax's internals as expected: the loops are gone
        assert "while" not in compiled.as_text()


def test_the_swap_is_undone_after_lowering():
    key = jax.random.key(0)
    with compiling.lowering():
        pass
    outside = jax.jit(lambda k: jax.random.uniform(k, (3,))).lower(key).compile().as_text()
    if compiling._threefry_parts() is not None:
        assert "while" in outside  # jax's own rolled loop for everyone else's programs


def test_compile_aside_gives_the_program_and_its_shapes():
    future, shapes = compiling.compile_aside(jax.jit(lambda k: {"x": jax.random.uniform(k, (2, 3))}), jax.random.key(1))
    assert shapes["x"].shape == (2, 3)
    out = future.result()(jax.random.key(1))
    np.testing.assert_array_equal(out["x"], jax.random.uniform(jax.random.key(1), (2, 3)))
