"""Run-directory outputs: resolved config, metrics.csv, summary.json, and the progress line."""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np


def episode_means(stats: dict[str, np.ndarray]) -> dict[str, float]:
    """Means over finished episodes of per-update sums (any shape; NaN when none finished)."""
    n = float(np.sum(stats["episodes"]))
    out = {}
    for key, name in (("return_sum", "episode_return"), ("length_sum", "episode_length"), ("score_sum", "score")):
        if key in stats:
            out[name] = float(np.sum(stats[key])) / n if n else math.nan
    out["episodes"] = n
    return out


class MetricsCSV:
    """One row per chunk; the header is fixed by the first row.

    `keep_until=steps` (a resumed run) keeps the rows up to that many env steps per seed, drops
    later ones (written after the checkpoint the run resumes from) and appends after them.
    """

    def __init__(self, path: Path, keep_until: int | None = None):
        self.path = path
        self._file = None
        self._writer = None
        self._kept: list[dict[str, str]] = []
        if keep_until is not None and path.exists():
            with open(path, newline="") as f:
                self._kept = [r for r in csv.DictReader(f) if float(r["env_steps"]) <= keep_until]

    def write(self, row: dict[str, Any]) -> None:
        if self._writer is None:
            self._file = open(self.path, "w", newline="")  # noqa: SIM115  (kept open across chunks)
            self._writer = csv.DictWriter(self._file, fieldnames=list(row))
            self._writer.writeheader()
            self._writer.writerows(self._kept)
        self._writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def _no_nan(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        return [_no_nan(v) for v in value]
    return value


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write strict JSON atomically (NaN, also inside lists, becomes null)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({k: _no_nan(v) for k, v in data.items()}, indent=2, allow_nan=False) + "\n")
    tmp.replace(path)


def _fmt(value: float, digits: int = 2) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _si(n: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f}{unit}"
    return f"{n:.0f}"


class Progress:
    """A live tqdm bar on a terminal, plain periodic lines elsewhere (CI, logs)."""

    def __init__(self, total_steps: int, live: bool, start: int = 0):
        self.total = total_steps
        self.live = live and sys.stdout.isatty()
        self.bar = None
        if self.live:
            from tqdm import tqdm

            self.bar = tqdm(total=total_steps, initial=start, unit="step", unit_scale=True, dynamic_ncols=True)

    def update(self, steps: int, sps: float, means: dict[str, float]) -> None:
        left = (self.total - steps) / sps if sps > 0 else math.nan
        parts = [
            f"steps {_si(steps)}/{_si(self.total)} ({100 * steps / self.total:.0f}%)",
            f"{_si(sps)} steps/s",
            f"ETA {_fmt(left, 0)}s",
            f"return {_fmt(means.get('episode_return', math.nan))}",
        ]
        if "score" in means:
            parts.append(f"score {_fmt(means['score'])}")
        if self.bar is not None:
            self.bar.update(steps - self.bar.n)
            self.bar.set_postfix_str(" | ".join(parts[3:]) + f" | {_si(sps)} steps/s")
        else:
            print(" | ".join(parts), flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
