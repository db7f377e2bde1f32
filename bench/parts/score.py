"""Time to score on Snake 10x10: wall-clock seconds until the mean score (apples per episode)
reaches 5, 10, 20 and 30, for jaxrl's default config beside Stable-Baselines3 PPO with the seed
guides' "fast" settings (16 SubprocVecEnv workers stepping the same Snake through
`envs.to_gymnasium`), both under the same wall-clock cap.

jaxrl's clock starts when `jaxrl.train` is called (compile included); its points are the
chunks of `metrics.csv` (mean score of the episodes that ended in the chunk). SB3's clock starts
when its envs and model are built; its points are its rollouts (`bench/sb3_peer.score_curve`).
A run that ends before the cap (jaxrl's default is 2.5e7 steps) is not extended.
"""

from __future__ import annotations

import math
from typing import Any

from bench.common import Context, fmt_rate, whole_run

NAME = "score"
TITLE = "Time to score on Snake 10x10"
THRESHOLDS = (5, 10, 20, 30)


def jaxrl_curve(total_timesteps: float, cap_s: float, seed: int = 0) -> dict[str, Any]:
    summary, rows, elapsed = whole_run("snake", seed=seed, total_timesteps=total_timesteps)
    startup = max(0.0, elapsed - summary["wall_s"])  # config, env and run dir before compiling, final save after
    points = [
        [float(r["wall_s"]) + startup, int(float(r["env_steps"])), float(r["score"])]
        for r in rows
        if r.get("score") not in (None, "", "nan") and math.isfinite(float(r["score"]))
    ]
    points = [p for p in points if p[0] <= cap_s]
    return {
        "points": points,
        "steps": int(float(rows[-1]["env_steps"])) if rows else 0,
        "seconds": elapsed,
        "sps": summary["sps"],
        "compile_s": summary["compile_s"],
        "final_score": summary.get("final_score"),
        "settings": {"config": "default (python -m jaxrl.train env=snake)", "total_timesteps": total_timesteps},
    }


def reached(points: list[list[float]]) -> dict[str, float | None]:
    """Seconds at which the mean score first reaches each threshold (None: not within the run)."""
    return {str(t): next((p[0] for p in points if p[2] >= t), None) for t in THRESHOLDS}


def run(ctx: Context) -> dict[str, Any]:
    cap = ctx.pick(12.0, 60.0, 240.0, 120.0)
    total = ctx.pick(20_000, 1e7, 2.5e7, 2.5e7)
    out: dict[str, Any] = {"cap_s": cap, "curves": {}}
    curve = jaxrl_curve(total, cap)
    curve["reached"] = reached(curve["points"])
    out["curves"]["jaxrl PPO (default config)"] = curve
    ctx.say(
        f"jaxrl: {curve['steps']:,} steps in {curve['seconds']:.0f} s, final score {curve['final_score']}, reached {curve['reached']}"
    )
    from bench import sb3_peer

    missing = sb3_peer.available()
    if missing:
        ctx.skip(f"Stable-Baselines3: {missing}")
    else:
        n_envs = ctx.pick(2, 16, 16)
        sb3 = sb3_peer.score_curve(cap, seed=0, n_envs=n_envs, vec="subproc")
        sb3["reached"] = reached(sb3["points"])
        out["curves"][f"SB3 PPO (seed guides' fast, {n_envs} SubprocVecEnv)"] = sb3
        last = sb3["points"][-1][2] if sb3["points"] else None
        ctx.say(
            f"SB3: {sb3['steps']:,} steps in {sb3['seconds']:.0f} s, last mean score {last}, reached {sb3['reached']}"
        )
    out["headlines"] = headlines(out)
    return out


def describe_reach(curve: dict[str, Any]) -> str:
    got = [f"{t} in {s:.0f} s" for t, s in curve["reached"].items() if s is not None]
    best = max((p[2] for p in curve["points"]), default=None)
    text = ", ".join(got) if got else "no threshold"
    return text + (f" (best mean score {best:.1f})" if best is not None else " (no episode ended)")


def headlines(out: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {"what": f"time to score, {name}, cap {out['cap_s']:.0f} s", "figure": describe_reach(c)}
        for name, c in out["curves"].items()
    ]


def report(result: dict[str, Any]) -> str:
    md = [f"Wall-clock cap {result['cap_s']:.0f} s for both.", ""]
    head = ["trainer", *[f"score {t}" for t in THRESHOLDS], "best mean score", "env steps", "steps/s"]
    md += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, c in result["curves"].items():
        cells = [name] + [
            ("-" if c["reached"][str(t)] is None else f"{c['reached'][str(t)]:.0f} s") for t in THRESHOLDS
        ]
        best = max((p[2] for p in c["points"]), default=None)
        sps = c.get("sps") or (c["steps"] / c["seconds"] if c["seconds"] else None)
        cells += ["-" if best is None else f"{best:.1f}", f"{c['steps']:,}", fmt_rate(sps)]
        md.append("| " + " | ".join(cells) + " |")
    names = list(result["curves"])
    if len(names) == 2:
        a, b = (result["curves"][n]["reached"] for n in names)
        ratios = [f"{t}: {b[str(t)] / a[str(t)]:.0f}x" for t in THRESHOLDS if a[str(t)] and b[str(t)]]
        if ratios:
            md += ["", "SB3's time over jaxrl's, per threshold: " + ", ".join(ratios) + "."]
    return "\n".join(md) + "\n"


def plot(result: dict[str, Any], axes_title: str, path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.6))
    for name, c in result["curves"].items():
        if c["points"]:
            xs, _, ys = zip(*c["points"], strict=True)
            ax.plot(xs, ys, marker=".", label=name)
    for t in THRESHOLDS:
        ax.axhline(t, color="grey", lw=0.6, ls=":")
    ax.set_xlabel("wall-clock seconds (compile / process start included)")
    ax.set_ylabel("mean score (apples per episode)")
    ax.set_xlim(0, result["cap_s"])
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"Snake 10x10: score against wall-clock - {axes_title}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
