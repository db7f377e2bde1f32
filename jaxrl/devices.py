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
