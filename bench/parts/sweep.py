"""Sweeps as one program against one member's run and against one process per member.

Each case times whole `python -m jaxrl.train` commands, as a user runs them (process start,
imports, compile, training, final save), one after the other on the same machine:
- one member: the config with `num_seeds` seeds and one learning rate;
- the sweep: `sweep.algo.lr=[three values]` with the same seeds, one process;
- three processes, one per learning rate (the seed guides' way: a process per setting).

The target is the sweep's wall-clock under 1.5x one member's. A sweep does three times the env
steps of one member; it can finish in less than three times the wall-clock only where one member
leaves the device idle (per-update overhead, small batches). So the cases are the default Snake
config, which keeps two CPU cores busy, and PureJaxRL's CartPole settings (4 envs per seed),
which do not: the steps/s columns show which is which. Quick mode runs the CartPole case alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from jaxrl.bench.common import Context, fmt_rate

NAME = "sweep"
TITLE = "Sweeps as one program"

RATES = (1e-4, 3e-4, 1e-3)


def timed_command(args: list[str], run_dir: Path) -> dict[str, Any]:
    """One `python -m jaxrl.train` process: its wall-clock and its summary's figures."""
    cmd = [sys.executable, "-m", "jaxrl.train", *args, f"run_dir={run_dir}", "progress=false"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    summary = json.loads((run_dir / "summary.json").read_text())
    keys = ("env_steps", "sps", "compile_s", "wall_s", "final_return", "final_score", "best_member")
    return {"seconds": seconds, **{k: summary.get(k) for k in keys}, "members": summary.get("members")}


def case(name: str, base: list[str], ctx: Context) -> dict[str, Any]:
    """One member, the sweep, and one process per member, for the config `base`."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        one = timed_command([*base, f"algo.lr={RATES[1]}"], root / "one")
        ctx.say(f"{name}: one member {one['seconds']:.1f} s ({fmt_rate(one['sps'])} steps/s)")
        sweep = timed_command([*base, f"sweep.algo.lr=[{','.join(map(str, RATES))}]"], root / "sweep")
        ctx.say(f"{name}: sweep of {len(RATES)} {sweep['seconds']:.1f} s ({fmt_rate(sweep['sps'])} steps/s)")
        apart = [timed_command([*base, f"algo.lr={lr}"], root / f"apart-{i}") for i, lr in enumerate(RATES)]
        seconds = sum(r["seconds"] for r in apart)
        ctx.say(f"{name}: {len(RATES)} processes {seconds:.1f} s")
    ranking = [
        {"lr": r["settings"]["algo.lr"], "final_return": r["final_return"], "final_score": r.get("final_score")}
        for r in sweep["members"]
    ]
    alone = {lr: r["final_return"] for lr, r in zip(RATES, apart, strict=True)}
    return {
        "case": name,
        "args": base,
        "one": {k: v for k, v in one.items() if k != "members"},
        "sweep": {k: v for k, v in sweep.items() if k != "members"},
        "apart": [{k: v for k, v in r.items() if k != "members"} for r in apart],
        "apart_seconds": seconds,
        "ratio_to_one": sweep["seconds"] / one["seconds"],
        "ratio_to_apart": sweep["seconds"] / seconds,
        "ranking": ranking,
        "alone_final_return": alone,
    }


def run(ctx: Context) -> dict[str, Any]:
    snake_steps = ctx.pick(16_384, 1_000_000, 5_000_000)
    cartpole_steps = ctx.pick(2_048, 50_000, 500_000)
    cases = [
        ("Snake, default config, 4 seeds", ["env=snake", "num_seeds=4", f"total_timesteps={snake_steps}"]),
        (
            "CartPole-v1, PureJaxRL's settings (4 envs x 128 steps), 4 seeds",
            ["env=CartPole-v1", "num_seeds=4", f"total_timesteps={cartpole_steps}"],
        ),
    ]
    if ctx.mode == "smoke":  # the CartPole case: quick mode's, and the cheaper of the two to compile
        cases = [(n, [*a, "num_chunks=2"]) for n, a in cases[1:]]
    elif ctx.mode == "quick":  # ten processes of the two cases would take minutes of start-up and compiles alone
        ctx.skip(f"{cases[0][0]}: full mode only (quick mode runs the CartPole case)")
        cases = cases[1:]
    out: dict[str, Any] = {"rates": list(RATES), "cases": [case(name, args, ctx) for name, args in cases]}
    out["headlines"] = headlines(out)
    return out


def headlines(out: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {
            "what": f"{c['case']}: a {len(out['rates'])}-member lr sweep in one process",
            "figure": f"{c['ratio_to_one']:.2f}x one member's wall-clock ({c['sweep']['seconds']:.0f} s against"
            f" {c['one']['seconds']:.0f} s), {c['ratio_to_apart']:.2f}x of {len(out['rates'])} processes"
            f" ({c['apart_seconds']:.0f} s)",
        }
        for c in out["cases"]
    ]


def report(result: dict[str, Any]) -> str:
    md = [
        "Whole `python -m jaxrl.train` commands, wall-clock from start to exit (steps/s after compile):",
        "",
        "| case | one member | sweep of 3 | 3 processes | sweep / one | sweep / 3 processes |",
        "|---|---|---|---|---|---|",
    ]
    for c in result["cases"]:
        one, sweep = c["one"], c["sweep"]
        md.append(
            f"| {c['case']} | {one['seconds']:.1f} s ({fmt_rate(one['sps'])}/s) | {sweep['seconds']:.1f} s"
            f" ({fmt_rate(sweep['sps'])}/s) | {c['apart_seconds']:.1f} s | {c['ratio_to_one']:.2f}x |"
            f" {c['ratio_to_apart']:.2f}x |"
        )
    md += [
        "",
        (
            "Final training return per learning rate, the sweep's members against the separate runs. A member"
            " computes what its separate run computes up to float rounding (a vmap of 12 entries batches the"
            " matmuls differently from one of 4; `tests/scale/test_sweep.py` pins it after two updates), and over"
            " millions of steps that rounding can grow into another trajectory, as another seed would:"
        ),
        "",
    ]
    md += ["| case | lr | in the sweep | alone |", "|---|---|---|---|"]
    for c in result["cases"]:
        for r in sorted(c["ranking"], key=lambda r: r["lr"]):
            alone = c["alone_final_return"].get(r["lr"], c["alone_final_return"].get(str(r["lr"])))
            md.append(f"| {c['case']} | {r['lr']:g} | {r['final_return']:.2f} | {alone:.2f} |")
    return "\n".join(md) + "\n"
