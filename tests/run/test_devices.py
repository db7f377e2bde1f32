"""device=auto finds TPUs, CUDA/ROCm GPUs and Apple GPUs (jax-mps `mps`, metal-pjrt-plugin `mtl`) and pins
the one it picks; an explicit device jax does not see is one clear error. jax's platform lookup is
faked, so every case runs on this CPU."""

import jax
import pytest

from jaxrl.config.schema import ConfigError
from jaxrl.run import devices as devmod


class FakeDevice:
    process_index = 0  # this process's, as jax's own devices say

    def __init__(self, platform):
        self.platform = platform

    def __repr__(self):
        return f"FakeDevice({self.platform})"


@pytest.fixture
def platforms(monkeypatch):
    """Set which platforms jax 'has'; returns the list of devices pinned as default."""
    pinned = []
    present = {}

    def devices(platform=None):
        if platform in present:
            return present[platform]
        raise RuntimeError(f"Unknown backend {platform}")

    def update(name, value):
        assert name in ("jax_default_device", "jax_platforms")
        pinned.append(value)

    monkeypatch.setattr(jax, "devices", devices)
    monkeypatch.setattr(jax.config, "update", update)

    def have(*names):
        present.clear()
        present.update({name: [FakeDevice(name), FakeDevice(name)] for name in (*names, "cpu")})
        pinned.clear()
        return pinned

    return have


@pytest.mark.parametrize(
    "present, expected",
    [
        (("tpu", "cuda"), "tpu"),  # a TPU runtime first
        (("cuda",), "cuda"),
        (("rocm",), "rocm"),
        (("mps",), "mps"),  # jax-mps
        (("mtl",), "mtl"),  # Apple's metal-pjrt-plugin
        (("cuda", "mps"), "cuda"),
        ((), "cpu"),
    ],
)
def test_auto_finds_and_pins_the_best_device(platforms, present, expected):
    pinned = platforms(*present)
    found = devmod.select_device("auto")
    assert found[0].platform == expected and len(found) == 2
    assert pinned == [found[0]]  # pinned, so the run computes where the start-up line says


@pytest.mark.parametrize("choice, platform", [("tpu", "tpu"), ("gpu", "rocm"), ("metal", "mtl")])
def test_an_explicit_device_is_pinned(platforms, choice, platform):
    pinned = platforms("tpu", "rocm", "mtl")
    found = devmod.select_device(choice)
    assert found[0].platform == platform and pinned == [found[0]]


@pytest.mark.parametrize("choice", ["tpu", "gpu", "metal"])
def test_an_explicit_device_jax_lacks_is_one_clear_error(platforms, choice):
    platforms()
    with pytest.raises(ConfigError) as raised:
        devmod.select_device(choice)
    assert str(raised.value) == f"device={choice} requested but jax sees no such backend: {devmod.HINTS[choice]}"


def test_auto_finds_what_jax_computes_on_here():
    found = devmod.select_device("auto")
    assert found[0].platform == jax.default_backend()
