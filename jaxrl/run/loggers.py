"""Run-directory outputs (metrics.csv, summary.json, the progress line, the learning curve) and the
loggers that `logger=` names (TensorBoard and W&B ship; `register_logger` adds one to
`jaxrl.config.registry.LOGGERS`, which validation reads)."""

from __future__ import annotations

import csv
import json
import math
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.config.registry import LOGGERS


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
            try:
                with open(path, newline="") as f:
                    self._kept = [r for r in csv.DictReader(f) if float(r["env_steps"]) <= keep_until]
            except (OSError, UnicodeDecodeError, KeyError, ValueError, TypeError, csv.Error) as e:
                from jaxrl.run.rundir import keep_previous

                kept = keep_previous(path)  # unreadable: kept as it is, the resumed run starts a new file
                print(f"warning: {path} is damaged ({type(e).__name__}); kept as {kept}", file=sys.stderr, flush=True)
                self._kept = []

    def write(self, row: dict[str, Any]) -> None:
        if self._writer is None:
            # The kept rows go to a new file that replaces the old one only when written, so a
            # failed write (a full disk) leaves the earlier rows where they were.
            tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:8]}.tmp")
            with open(tmp, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(row), extrasaction="ignore")
                writer.writeheader()
                writer.writerows(self._kept)
            tmp.replace(self.path)
            self._file = open(self.path, "a", newline="")  # noqa: SIM115  (kept open across chunks)
            self._writer = csv.DictWriter(self._file, fieldnames=list(row))
        self._writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def _no_nan(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):  # NaN and inf are not JSON
        return None
    if isinstance(value, list):
        return [_no_nan(v) for v in value]
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    return value


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as Python numbers and lists (NaN and inf become null)."""
    if isinstance(value, np.ndarray | np.generic):
        return _no_nan(value.tolist())
    raise TypeError(f"{type(value).__name__} is not JSON")


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write strict JSON atomically (NaN and inf, also inside lists, become null)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(_no_nan(data), indent=2, allow_nan=False, default=_plain) + "\n")
    tmp.replace(path)


def _fmt(value: float, digits: int = 2) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _si(n: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f}{unit}"
    return f"{n:.0f}"


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (Colab included), where tqdm.auto draws a widget."""
    shell = sys.modules.get("IPython")
    try:
        ip = shell.get_ipython() if shell is not None else None
    except Exception:  # noqa: BLE001
        return False
    return ip is not None and type(ip).__name__ in ("ZMQInteractiveShell", "Shell")  # Shell: Colab


class Progress:
    """A live tqdm bar (`tqdm.auto`: a widget in a notebook, text on a terminal), plain periodic lines elsewhere
    (CI, logs)."""

    def __init__(self, total_steps: int, live: bool, start: int = 0, seeds: int = 1):
        self.total = total_steps  # env steps per seed, like `steps` in `update`
        self.seeds = seeds  # `sps` counts every seed's steps
        self.live = live and (sys.stdout.isatty() or in_notebook())
        self.bar = None
        if self.live:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total_steps, initial=start, unit="step", unit_scale=True, dynamic_ncols=True)

    def update(self, steps: int, sps: float, means: dict[str, float], phase: str | None = None) -> None:
        left = (self.total - steps) * self.seeds / sps if sps > 0 else math.nan
        parts = [
            f"steps {_si(steps)}/{_si(self.total)} ({100 * steps / self.total:.0f}%)",
            f"{_si(sps)} steps/s",
            f"ETA {_fmt(left, 0)}s",
            f"return {_fmt(means.get('episode_return', math.nan))}",
        ]
        if "score" in means:
            parts.append(f"score {_fmt(means['score'])}")
        if means.get("win_rate", 0) > 0 or "placement" in means:  # shown once the agent starts winning (Snake)
            parts.append(f"wins {100 * means['win_rate']:.0f}%")
        if "placement" in means:
            parts.append(f"place {_fmt(means['placement'])}")
        if phase is not None:
            parts.append(f"phase {phase}")
        if self.bar is not None:
            self.bar.update(steps - self.bar.n)
            self.bar.set_postfix_str(" | ".join(parts[3:]) + f" | {_si(sps)} steps/s")
        else:
            print(" | ".join(parts), flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class TensorBoardLog:
    """Scalars per chunk as TensorBoard event files in <run_dir>/tensorboard (x: env steps per seed)."""

    def __init__(self, run_dir: Path):
        from tensorboardX import SummaryWriter

        self.writer = SummaryWriter(str(run_dir / "tensorboard"))

    def write(self, step: int, row: dict[str, Any]) -> None:
        for key, value in row.items():
            if key != "env_steps" and isinstance(value, int | float) and math.isfinite(value):
                self.writer.add_scalar(f"train/{key}", value, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbLog:
    """Scalars per chunk to Weights & Biases; a resumed run continues the same W&B run (id kept in the run dir)."""

    def __init__(self, run_dir: Path, project: str, config: dict[str, Any]):
        import wandb

        id_file = run_dir / "wandb_id.txt"
        run_id = id_file.read_text().strip() if id_file.exists() else uuid.uuid4().hex[:12]
        id_file.write_text(run_id + "\n")
        self.wandb = wandb
        self.run = wandb.init(
            project=project, dir=str(run_dir), id=run_id, resume="allow", name=run_dir.name, config=config
        )

    def write(self, step: int, row: dict[str, Any]) -> None:
        values = {k: v for k, v in row.items() if isinstance(v, int | float) and math.isfinite(v)}
        self.run.log(values, step=step)

    def close(self) -> None:
        self.run.finish()


@dataclass(frozen=True)
class LoggerSpec:
    """A logger that `logger=<name>` opens at the start of a run (after the run directory is claimed).

    `opens(run_dir, project, config)` returns an object with `write(env_steps, row)`, called once per
    chunk with that chunk's metrics.csv row (a sweep's: the first member's figures and each member's
    under `member<K>/`), and `close()`, called when the run ends. `needs` names the module it imports and
    `extra` the jaxrl extra that brings it (None: a package of its own, `pip install <needs>`): a missing
    one is reported before anything is written.
    """

    name: str
    opens: Callable[[Path, str, dict[str, Any]], Any] | None  # None: written anyway (metrics.csv)
    needs: str | None = None
    extra: str | None = None


def register_logger(
    name: str,
    opens: Callable[[Path, str, dict[str, Any]], Any] | None,
    needs: str | None = None,
    extra: str | None = None,
) -> None:
    """Make `logger=<name>` available to the CLI (from a script that registers it first) and `jaxrl.train`."""
    LOGGERS.add(name, LoggerSpec(name, opens, needs, extra))


def logger_specs() -> dict[str, LoggerSpec]:
    """Every registered logger by name."""
    specs: dict[str, LoggerSpec] = LOGGERS.all()
    return specs


def check_loggers(names: tuple[str, ...]) -> None:
    """ImportError naming the package and the extra when a chosen logger's module is missing."""
    import importlib.util

    for name in names:
        spec = LOGGERS.get(name)
        if spec.needs is not None and importlib.util.find_spec(spec.needs) is None:
            how = f"'jaxrl[{spec.extra}]'" if spec.extra else spec.needs
            raise ImportError(f"logger={name} needs {spec.needs}: pip install {how}")


def open_loggers(names: tuple[str, ...], run_dir: Path, project: str, config: dict[str, Any]) -> list[Any]:
    """The chosen loggers, opened (metrics.csv is always written by MetricsCSV)."""
    specs = logger_specs()
    return [specs[n].opens(run_dir, project, config) for n in names if specs[n].opens is not None]


register_logger("csv", None)
register_logger("tensorboard", lambda run_dir, project, config: TensorBoardLog(run_dir), "tensorboardX", "tensorboard")
register_logger("wandb", WandbLog, "wandb", "wandb")


def plot_learning_curve(
    history: list[dict[str, Any]], path: Path, title: str, members: list[tuple[str, slice]] | None = None
) -> bool:
    """learning_curve.png: episode return per seed (thin) and their mean (thick) against env steps per seed;
    with a sweep (`members`: each member's label and entries of the seed axis), one line per member, the
    mean over its seeds.

    Chunks where a seed finished no episode are gaps in its line. False when there is nothing to draw.
    """
    if not history or "return_sum" not in history[0]:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.array([h["env_steps"] for h in history], np.float64)
    sums = np.array([h["return_sum"] for h in history], np.float64)  # (chunks, seeds)
    counts = np.array([h["episodes"] for h in history], np.float64)

    def mean_of(part: slice) -> np.ndarray:
        total, n = sums[:, part].sum(1), counts[:, part].sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, total / n, np.nan)

    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    if members:
        for label, part in members:
            ax.plot(steps, mean_of(part), lw=1.6, label=label)
    else:
        if sums.shape[1] > 1:
            for s in range(sums.shape[1]):
                ax.plot(steps, mean_of(slice(s, s + 1)), lw=0.8, alpha=0.5, label=f"seed {s}")
        ax.plot(steps, mean_of(slice(None)), lw=2.2, color="black", label="mean" if sums.shape[1] > 1 else "return")
    ax.set_xlabel("env steps per seed")
    ax.set_ylabel("episode return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(path)
    return True
