"""What a benchmark ran on: CPU model, cores, device, versions."""

from __future__ import annotations

import os
import platform


def describe() -> dict:
    import jax

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    device = jax.devices()[0]
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "device": f"{device.platform}:{device.device_kind}",
        "jax": jax.__version__,
        "python": platform.python_version(),
    }
