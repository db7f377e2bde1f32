"""Pick the JAX backend a run asks for, before anything touches a device."""

from __future__ import annotations

from jaxrl.config.schema import ConfigError

# jax platform names behind each device= choice: jax-mps registers "mps", Apple's metal-pjrt-plugin
# "mtl", the abandoned jax-metal "METAL".
PLATFORMS = {
    "cpu": ("cpu",),
    "tpu": ("tpu",),
    "gpu": ("cuda", "rocm", "gpu"),
    "metal": ("mps", "mtl", "METAL", "metal"),
}
AUTO_ORDER = ("tpu", "gpu", "metal")  # what device=auto tries, before falling back to the CPU
HINTS = {
    "tpu": "run on a TPU host with a TPU build of jax (pip install 'jax[tpu]'; Colab: a TPU runtime)",
    "gpu": "install a CUDA or ROCm build of jax (pip install 'jax[cuda12]')",
    "metal": "install the experimental Metal extra on Apple silicon (pip install 'jaxrl[metal]')",
}


def find_devices(kind: str) -> list:
    """The devices of the first platform of `kind` (cpu|tpu|gpu|metal) jax has, or [] if none."""
    import jax

    for platform in PLATFORMS[kind]:
        try:
            devices = jax.devices(platform)
        except RuntimeError:  # jax has no such backend (not installed, or not initialized here)
            continue
        if devices:
            return devices
    return []


def own(devices: list) -> object:
    """The first of `devices` that this process drives (in a distributed run jax lists every process's)."""
    import jax

    return next(d for d in devices if d.process_index == jax.process_index())


def select_device(choice: str) -> list:
    """Pin jax's default device for `choice` (auto|cpu|tpu|gpu|metal) and return its platform's devices.

    `auto` takes a TPU, then a CUDA or ROCm GPU, then Apple's GPU (jax-mps or metal-pjrt-plugin),
    else the CPU. The chosen device is pinned as jax's default, so the run computes where the
    start-up line says. An explicit choice jax does not see raises ConfigError with a hint.
    """
    import jax

    if choice == "cpu":
        jax.config.update("jax_platforms", "cpu")
        return jax.devices("cpu")
    kinds = AUTO_ORDER if choice == "auto" else (choice,)
    for kind in kinds:
        devices = find_devices(kind)
        if devices:
            jax.config.update("jax_default_device", own(devices))
            return devices
    if choice == "auto":
        devices = jax.devices("cpu")
        jax.config.update("jax_default_device", own(devices))
        return devices
    raise ConfigError(f"device={choice} requested but jax sees no such backend: {HINTS[choice]}")


def available_bytes(device) -> int | None:
    """Memory a run may still use on `device`: the accelerator's limit, or the host's available RAM for CPU."""
    if device.platform != "cpu":
        try:
            stats = device.memory_stats() or {}
        except Exception:  # noqa: BLE001  (backends without memory stats)
            stats = {}
        limit = stats.get("bytes_limit")
        return int(limit - stats.get("bytes_in_use", 0)) if limit else None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import os

        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(needed: int, device, what: str, setting: str) -> None:
    """ConfigError when `needed` bytes exceed what `device` has free (unknown free memory passes)."""
    free = available_bytes(device)
    if free is not None and needed > 0.9 * free:
        raise ConfigError(
            f"{what} needs ~{needed / 2**30:.2f} GiB but {device.platform} has ~{free / 2**30:.2f} GiB free: "
            f"lower {setting}"
        )
