"""What every part of `python -m bench` shares: the run's context (mode, machine, output folder),
compile-then-time helpers, and the one-line skip notice for a missing peer."""

from __future__ import annotations

import contextlib
import io
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax

MODES = ("smoke", "quick", "full")  # smoke: the test's tiny budget; quick: minutes, a look at every part


@dataclass
class Context:
    """One `python -m bench` invocation: its mode, the machine, where results go, what was skipped."""

    mode: str
    out: Path
    machine: dict
    notes: list[str] = field(default_factory=list)  # one line per skipped peer or size, for the report
    shared: dict = field(default_factory=dict)  # what the parts of one run share: the machine's ceilings

    @property
    def accelerator(self) -> bool:
        return self.machine.get("platform") not in (None, "cpu")

    def pick(self, smoke: Any, quick: Any, full: Any, full_accelerator: Any = None) -> Any:
        """The setting for this mode (full mode on a GPU/TPU may ask for more)."""
        if self.mode == "smoke":
            return smoke
        if self.mode == "quick":
            return quick
        return full_accelerator if self.accelerator and full_accelerator is not None else full

    def skip(self, line: str) -> None:
        """Print and keep one line saying what was skipped and why."""
        if line not in self.notes:
            print(f"  skipped: {line}", flush=True)
            self.notes.append(line)

    def say(self, line: str) -> None:
        print(f"  {line}", flush=True)


def peer_missing(module: str, what: str) -> str | None:
    """None when `module` imports, else the line that says the peer is skipped."""
    try:
        __import__(module)
    except Exception as e:  # noqa: BLE001 - ImportError, or a peer broken against this jax
        reason = "not installed" if isinstance(e, ImportError) else f"fails to import ({type(e).__name__})"
        return f"{what}: `{module}` {reason} (pip install 'jaxrl[bench]')"
    return None


@contextlib.contextmanager
def quiet():
    """Hold back what a whole training run prints (its progress and summary lines)."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def whole_run(env: str, **settings: Any) -> tuple[dict[str, Any], list[dict[str, str]], float]:
    """One quiet `jaxrl.train` run in a scratch run directory: (its summary, its metrics.csv rows,
    seconds from the call to its return, compile and the final save included)."""
    summary, rows, elapsed, _ = evaluated_run(env, 0, **settings)
    return summary, rows, elapsed


def evaluated_run(
    env: str, episodes: int, **settings: Any
) -> tuple[dict[str, Any], list[dict[str, str]], float, dict[str, Any] | None]:
    """`whole_run`, then (episodes > 0) a greedy evaluation of its final checkpoint: `Run.evaluate`'s
    eval.json figures, plus the seconds it took (not counted in the run's seconds)."""
    import csv
    import tempfile

    import jaxrl

    with tempfile.TemporaryDirectory() as tmp, quiet():
        t0 = time.perf_counter()
        run = jaxrl.train(env=env, run_dir=Path(tmp) / "run", progress=False, **settings)
        elapsed = time.perf_counter() - t0
        with open(run.run_dir / "metrics.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        figures = None
        if episodes > 0:
            t0 = time.perf_counter()
            figures = run.evaluate(episodes=episodes, greedy=True)
            figures["seconds"] = time.perf_counter() - t0
        return run.summary, rows, elapsed, figures


def log_axes(ax, title: str, xlabel: str, ylabel: str, log_y: bool = True) -> None:
    """The look every plot shares: num_envs on a log2 axis, a log y axis, grid and legend."""
    ax.set_xscale("log", base=2)
    if log_y:
        ax.set_yscale("log")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def save_figure(fig, title: str, path) -> None:
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)


def compile_timed(fn: Callable, *args: Any) -> tuple[Any, float]:
    """(`jax.jit(fn)` compiled for `args`, seconds spent tracing and compiling)."""
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    return compiled, time.perf_counter() - t0


def timed_program(cfg: Any, updates: int | None, warmup: int = 1) -> tuple[dict[str, Any], Any]:
    """Steps/s of one compiled chunk of exactly `updates` updates of a config (default: about 300k env
    steps, at least 20 updates), after `warmup` updates (first-call allocations; a DQN warm-up chunk also
    fills part of the replay); and the compiled program."""
    from jaxrl import build

    if updates is None:
        updates = max(20, 300_000 // build.program(cfg).steps_per_update)
    program = build.program(cfg, chunk=updates)
    runner, compile_s = program.compile()
    runner, _ = program.run_chunk(runner, warmup)
    jax.block_until_ready(runner)
    t0 = time.perf_counter()
    runner, _ = program.run_chunk(runner, updates)
    jax.block_until_ready(runner)
    seconds = time.perf_counter() - t0
    steps = updates * program.steps_per_update * program.population
    return {"sps": steps / seconds, "compile_s": compile_s, "steps": steps, "seconds": seconds}, program


def best_times(calls: dict[str, Callable[[int], Any]], repeats: int) -> dict[str, float]:
    """Best-of-`repeats` seconds of each call, after one warm-up call each.

    The calls take turns (one timed call each per round), so a slow spell of a shared machine
    hits all of them alike instead of one's figures. `call(i)` gets the round number (a seed).
    """
    for call in calls.values():
        jax.block_until_ready(call(0))
    best = dict.fromkeys(calls, math.inf)
    for i in range(repeats):
        for name, call in calls.items():
            t0 = time.perf_counter()
            jax.block_until_ready(call(i + 1))
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def out_of_memory(error: BaseException) -> bool:
    """Whether an error is the device (or host) running out of memory."""
    text = f"{type(error).__name__}: {error}"
    return isinstance(error, MemoryError) or "RESOURCE_EXHAUSTED" in text or "Out of memory" in text


def fmt_rate(x: float | None) -> str:
    """Steps per second at a glance: 1.23G, 45.6M, 789k, 950."""
    if x is None or not math.isfinite(x):
        return "-"
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def fmt_bytes(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    for scale, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x:.0f} B"


def fmt_ratio(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.3g}x"
