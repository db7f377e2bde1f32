"""The parts of `python -m bench`, in the order they run. Each module has NAME, TITLE,
`run(ctx) -> dict` (JSON-able, with `headlines`), `report(result) -> markdown` and optionally
`plot(result, device_title, path)`; `ctx.pick(smoke, quick, full)` sizes its work per mode. A new
part is a module here and its name in ORDER; `env` and `train` also run on their own
(`python -m bench.parts.env`, `python -m bench.parts.train`)."""

from __future__ import annotations

import importlib

ORDER = ("env", "arena", "serve", "train", "memory", "score", "precision", "runs", "parity", "seeds", "algos", "sweep")


def load(name: str):
    return importlib.import_module(f"jaxrl.bench.parts.{name}")
