"""What a benchmark ran on: CPU model, cores, memory, accelerator and its memory, versions."""

from __future__ import annotations

import os
import platform
import re
from importlib import metadata


def _cpuinfo() -> dict[str, str]:
    """The first processor's block of /proc/cpuinfo ({} where there is none)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what platform knows."""
    return _cpuinfo().get("model name") or platform.processor() or platform.machine()


def cpu_signature() -> str:
    """The CPU's model name with its family and model numbers, e.g. "AMD EPYC (family 25, model 17)": the
    name alone can cover several generations with other vector units, and XLA's CPU code, hence its float
    rounding, follows the vector units. Without /proc/cpuinfo, the model name alone."""
    info = _cpuinfo()
    if "cpu family" in info and "model" in info:
        return f"{cpu_model()} (family {info['cpu family']}, model {info['model']})"
    return cpu_model()


def _host_memory() -> int | None:
    """Total host memory in bytes (Linux /proc/meminfo, else sysconf), None when unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def device_memory(device=None) -> int | None:
    """Bytes the accelerator lets jax allocate (None on CPU, where memory is the host's)."""
    import jax

    device = device or jax.devices()[0]
    try:
        stats = device.memory_stats() or {}
    except Exception:  # noqa: BLE001 - some backends do not implement memory_stats
        stats = {}
    return stats.get("bytes_limit")


def describe() -> dict:
    import jax

    device, info = jax.devices()[0], _cpuinfo()
    return {
        "cpu": cpu_model(),
        # One model name covers several CPUs (two Xeons here, 1.65x apart): the family and model tell them apart.
        "cpu_family": info.get("cpu family"),
        "cpu_model_number": info.get("model"),
        "cores": os.cpu_count(),
        "host_memory_bytes": _host_memory(),
        "platform": device.platform,
        "device": f"{device.platform}:{device.device_kind}",
        "device_count": jax.device_count(),
        "device_memory_bytes": device_memory(device),
        "jax": jax.__version__,
        "jaxlib": _version("jaxlib"),
        "flax": _version("flax"),
        "optax": _version("optax"),
        "python": platform.python_version(),
    }


def title(machine: dict) -> str:
    """One short line naming the device, for plot titles: 'NVIDIA H100 80GB HBM3' or
    '2-core AMD EPYC 7B13, family 25 model 1 (CPU)' (the family and model where the machine has them)."""
    if machine.get("platform") not in (None, "cpu"):
        return machine["device"].split(":", 1)[1]
    cpu = re.sub(r"\s+(\d+-Core )?Processor\s*$", "", machine.get("cpu", "CPU"))
    family, model = machine.get("cpu_family"), machine.get("cpu_model_number")
    which = f", family {family} model {model}" if family and model else ""
    return f"{machine.get('cores')}-core {cpu}{which} (CPU)"


def slug(machine: dict) -> str:
    """A folder-name form of the machine: 'nvidia-h100-80gb-hbm3' or 'cpu-2c-amd-epyc-7b13-model-1'."""
    model = ""
    if machine.get("platform") not in (None, "cpu"):
        name = machine["device"].split(":", 1)[1]
    else:
        name = f"cpu-{machine.get('cores')}c-" + re.sub(r"\s+(\d+-Core )?Processor\s*$", "", machine.get("cpu", ""))
        model = f"-model-{machine['cpu_model_number']}" if machine.get("cpu_model_number") else ""  # kept whole
    return (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[: 60 - len(model)] + model).strip("-") or "machine"
