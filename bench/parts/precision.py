"""Precision: steps/s and final score of PPO on Snake 10x10 with `precision=fp32|tf32|bf16`, on
the device the benchmark runs on.

`tf32` sets JAX's default matmul precision to TensorFloat-32 for the run; `bf16` runs the
network's forward and backward passes in bfloat16 with float32 master parameters, optimizer
state, losses, returns and advantages. Steps/s: one compiled chunk of the default config (as in
the `train` part). Final score: a whole run of the default config per precision, same seed. On
a CPU tf32 changes nothing (quick mode leaves it out there) and bf16 is emulated, so expect it
no faster there.
"""

from __future__ import annotations

from typing import Any

from jaxrl.bench.common import Context, fmt_rate, fmt_ratio, whole_run
from jaxrl.bench.parts.train import program_sps

NAME = "precision"
TITLE = "Precision: fp32, tf32, bf16"
PRECISIONS = ("fp32", "tf32", "bf16")


def final_score(precision: str, total: float) -> dict[str, Any]:
    s, _, _ = whole_run("snake", precision=precision, total_timesteps=total)
    return {
        "final_score": s.get("final_score"),
        "final_return": s["final_return"],
        "run_sps": s["sps"],
        "run_s": s["wall_s"],
    }


def run(ctx: Context) -> dict[str, Any]:
    target = ctx.pick(2_000, 200_000, 1_000_000, 30_000_000)
    total = ctx.pick(20_000, 1e6, 2.5e7, 2.5e7)
    precisions = PRECISIONS
    if ctx.mode == "quick" and not ctx.accelerator:
        ctx.skip("tf32: full mode only on a CPU, where it changes nothing")
        precisions = ("fp32", "bf16")
    rows = []
    for p in precisions:
        row = {"precision": p, **program_sps(["env=snake", f"precision={p}"], target), **final_score(p, total)}
        rows.append(row)
        ctx.say(
            f"{p}: {fmt_rate(row['sps'])} steps/s (compile {row['compile_s']:.1f} s), final score {row['final_score']}"
        )
    fp32 = rows[0]["sps"]
    for r in rows:
        r["ratio_to_fp32"] = r["sps"] / fp32
    out = {"total_timesteps": total, "rows": rows}
    out["headlines"] = [
        {
            "what": "PPO on Snake, steps/s by precision (ratio to fp32), final score",
            "figure": "; ".join(
                f"{r['precision']} {fmt_rate(r['sps'])} ({fmt_ratio(r['ratio_to_fp32'])}), score {r['final_score']:.1f}"
                for r in rows
            ),
        }
    ]
    return out


def report(result: dict[str, Any]) -> str:
    md = [
        f"Default Snake PPO config; final score after {result['total_timesteps']:,.0f} env steps (seed 0).",
        "",
        (
            "| precision | steps/s (one chunk) | ratio to fp32 | compile s | final score | final return |"
            " whole-run steps/s |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        md.append(
            f"| {r['precision']} | {fmt_rate(r['sps'])} | {fmt_ratio(r['ratio_to_fp32'])} | {r['compile_s']:.1f} |"
            f" {r['final_score']:.2f} | {r['final_return']:.2f} | {fmt_rate(r['run_sps'])} |"
        )
    return "\n".join(md) + "\n"
