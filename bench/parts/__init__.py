"""The parts of `python -m bench`, in the order they run. Each module has NAME, TITLE,
`run(ctx) -> dict` (JSON-able, with `headlines`), `report(result) -> markdown` and optionally
`plot(result, device_title, path)`."""

from __future__ import annotations

import importlib

ORDER = ("env", "train", "memory", "score", "precision", "runs", "parity", "algos", "sweep")


def load(name: str):
    return importlib.import_module(f"jaxrl.bench.parts.{name}")
