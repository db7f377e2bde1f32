"""Whole training runs on Snake 10x10 as a user starts them: the default config, and on an
accelerator `preset=heavy` and `preset=beast`; then PPO's peak steps/s with the default network
at large num_envs, per precision.

Each run is `jaxrl.train(env="snake", ...)` as `python -m jaxrl.train env=snake [preset=...]`
would run it (run directory, metrics, checkpoints), timed by its own summary: compile seconds,
steps/s after compile, wall-clock and final score. The peak figures time one compiled chunk (as
the `train` part does) of the default config with `num_envs` raised and
`algo.minibatch_size=auto`.
"""

from __future__ import annotations

from typing import Any

from jaxrl.bench.common import Context, fmt_rate, whole_run
from jaxrl.bench.parts.train import program_sps

NAME = "runs"
TITLE = "Training runs on Snake: default config and presets"


def run(ctx: Context) -> dict[str, Any]:
    runs = []
    presets = ctx.pick([{}], [{}], [{}], [{}, {"preset": "heavy"}, {"preset": "beast"}])
    total = ctx.pick(20_000, 1e6, None)  # None: the config's own length (the default run's)
    for settings in presets:
        label = f"preset={settings['preset']}" if settings else "default"
        length = {} if total is None else {"total_timesteps": total}
        summary, _, _ = whole_run("snake", **settings, **length)
        keys = ("env_steps", "sps", "compile_s", "wall_s", "final_score", "final_return")
        row = {"run": label, **{k: summary.get(k) for k in keys}}
        runs.append(row)
        ctx.say(
            f"{label}: {fmt_rate(row['sps'])} steps/s, compile {row['compile_s']:.1f} s,"
            f" final score {row['final_score']:.2f}"
        )
    peak = []
    sizes = ctx.pick([64], [2048], [2048, 8192], [8192, 65536])
    target = ctx.pick(2_000, 300_000, 2_000_000, 16_000_000)
    for n in sizes:
        for precision in ("fp32", "tf32", "bf16") if ctx.accelerator else ("fp32",):
            overrides = ["env=snake", f"num_envs={n}", "algo.minibatch_size=auto", f"precision={precision}"]
            row = {"n_envs": n, "precision": precision, **program_sps(overrides, target)}
            peak.append(row)
            ctx.say(f"PPO default network, {n:,} envs, {precision}: {fmt_rate(row['sps'])} steps/s")
    out: dict[str, Any] = {"total_timesteps": total, "runs": runs, "peak": peak}
    out["headlines"] = headlines(out)
    return out


def headlines(out: dict[str, Any]) -> list[dict[str, str]]:
    lines = [
        {
            "what": f"`python -m jaxrl.train env=snake{'' if r['run'] == 'default' else ' ' + r['run']}`",
            "figure": f"final score {r['final_score']:.1f} in {r['wall_s']:.0f} s"
            f" ({fmt_rate(r['sps'])} steps/s after a {r['compile_s']:.0f} s compile)",
        }
        for r in out["runs"]
    ]
    if out["peak"]:
        top = max(out["peak"], key=lambda r: r["sps"])
        lines.append(
            {
                "what": "PPO on Snake, peak steps/s (default network, num_envs raised)",
                "figure": f"{fmt_rate(top['sps'])} steps/s at {top['n_envs']:,} envs, {top['precision']}",
            }
        )
    return lines


def report(result: dict[str, Any]) -> str:
    total = result["total_timesteps"]
    length = "each config's own length" if total is None else f"{total:,.0f} env steps"
    md = [
        f"Whole runs of {length} (seed 0):",
        "",
        "| run | env steps | final score | wall-clock s | compile s | steps/s after compile |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["runs"]:
        md.append(
            f"| {r['run']} | {r['env_steps']:,.0f} | {r['final_score']:.2f} | {r['wall_s']:.0f} |"
            f" {r['compile_s']:.1f} | {fmt_rate(r['sps'])} |"
        )
    if result["peak"]:
        md += ["", "PPO's default network at larger num_envs (one timed chunk):", ""]
        md += ["| num_envs | precision | steps/s | compile s |", "|---|---|---|---|"]
        for r in result["peak"]:
            md.append(f"| {r['n_envs']:,} | {r['precision']} | {fmt_rate(r['sps'])} | {r['compile_s']:.1f} |")
    return "\n".join(md) + "\n"
