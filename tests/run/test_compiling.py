"""jaxrl lowers its programs with threefry written out on CPU (same bits, no loops, nothing leaks out), and a
second start loads them from `compile_cache`."""

import jax
import numpy as np
import pytest

from jaxrl.run import compiling


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


@pytest.fixture
def restore_cache_settings():
    from jax.experimental.compilation_cache import compilation_cache

    names = (
        "jax_compilation_cache_dir",
        "jax_persistent_cache_min_compile_time_secs",
        "jax_persistent_cache_min_entry_size_bytes",
    )
    before = {name: getattr(jax.config, name) for name in names}
    yield
    compilation_cache.reset_cache()
    for name, value in before.items():
        jax.config.update(name, value)


def test_a_second_start_loads_its_programs_from_compile_cache(tmp_path, restore_cache_settings):
    import jaxrl

    cache = tmp_path / "cache"
    settings = {
        "env": "CartPole-v1",
        "total_timesteps": 2048,
        "num_chunks": 2,
        "progress": False,
        "compile_cache": str(cache),
    }
    first = jaxrl.train(run_dir=tmp_path / "a", **settings)
    entries = sorted(p.name for p in cache.iterdir())
    assert any(name.startswith("jit_") for name in entries), entries  # the chunk and init programs went in
    second = jaxrl.train(run_dir=tmp_path / "b", **settings)
    assert sorted(p.name for p in cache.iterdir()) == entries  # every program was found there
    assert second.summary["final_return"] == first.summary["final_return"]


def test_an_unusable_compile_cache_is_one_clear_error(tmp_path, restore_cache_settings):
    import jaxrl

    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(jaxrl.ConfigError, match=r"^compile_cache=.*/file/cache is not a usable directory"):
        jaxrl.train(
            env="CartPole-v1", total_timesteps=2048, run_dir=tmp_path / "run", compile_cache=str(blocker / "cache")
        )
    assert not (tmp_path / "run").exists()
