"""Pick the JAX backend a run asks for, before anything touches a device."""

from __future__ import annotations

from jaxrl.config import ConfigError

# jax platform names behind each device= choice (jax-mps registers "mps"; jax-metal registered "METAL").
PLATFORMS = {"cpu": ("cpu",), "gpu": ("cuda", "rocm", "gpu"), "metal": ("mps", "METAL", "metal")}
HINTS = {
    "gpu": "install a CUDA build of jax (pip install 'jax[cuda12]')",
    "metal": "install the experimental Metal extra on Apple silicon (pip install 'jaxrl[metal]')",
}


def select_device(choice: str) -> list:
    """Set the backend for `choice` (auto|cpu|gpu|metal) and return its devices, or raise ConfigError."""
    import jax

    if choice == "cpu":
        jax.config.update("jax_platforms", "cpu")
        return jax.devices("cpu")
    if choice == "auto":
        for platform in PLATFORMS["gpu"]:
            try:
                return jax.devices(platform)
            except RuntimeError:
                continue
        return jax.devices("cpu")
    for platform in PLATFORMS[choice]:
        try:
            devices = jax.devices(platform)
        except RuntimeError:
            continue
        jax.config.update("jax_default_device", devices[0])
        return devices
    raise ConfigError(f"device={choice} requested but jax sees no such backend: {HINTS[choice]}")
