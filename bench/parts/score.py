"""Time to score on Snake 10x10: wall-clock seconds until the mean score (apples per episode)
reaches each threshold, over several seeds, for jaxrl's default run and its `snake_perfect`
recipe, beside Stable-Baselines3 PPO with the seed guides' "fast" settings (16 SubprocVecEnv
workers stepping the same Snake through `envs.to_gymnasium`) under the default run's cap.

Each jaxrl seed is its own run, one after another, so each has the machine to itself and its
own wall-clock: its clock starts when `jaxrl.train` is called (compile included) and its points
are the chunks of `metrics.csv` (mean score of the episodes that ended in the chunk, acting as in
training). After each seed's run, its final checkpoint plays greedy episodes (`Run.evaluate`, the
recipe's evaluation hunger limit): the figure `snake_perfect`'s target is set on (greedy mean
score >= 90 of 97 and >= 50% wins within 60 minutes), outside the run's clock. The plot
gives the mean over seeds and the range (min to max) at each moment; a seed counts from its
first point on. SB3's clock starts when its envs and model are built; its points are its
rollouts (`bench/peers/sb3_peer.score_curve`). A run that ends before the cap is not extended.
Quick mode times the default run alone, shortened to 2e6 steps (2 seeds, a 25 s cap), beside SB3
with 4 workers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from jaxrl.bench.common import Context, evaluated_run, fmt_rate

NAME = "score"
TITLE = "Time to score on Snake 10x10"
THRESHOLDS = (5, 10, 20, 30, 40, 60, 90)
PERFECT_TARGET = {"score": 90.0, "win_rate": 0.5}  # greedy, per seed, within the 60-minute cap
GRID = 200  # moments on the wall-clock axis where the seeds' curves are compared


def recipes(ctx: Context) -> list[dict[str, Any]]:
    """The jaxrl runs: label, command, settings, seeds (0: not in this mode) and cap in this mode."""
    smoke = {"total_timesteps": 20_000, "num_envs": 64, "num_chunks": 4}
    return [
        {
            "label": "jaxrl default",
            # quick mode shortens the run to end near its cap (the whole run would be cut off long before
            # its end), and its learning rate anneals over that shorter run
            "command": "python -m jaxrl.train env=snake" + (" total_timesteps=2e6" if ctx.mode == "quick" else ""),
            "settings": ctx.pick({**smoke, "algo.num_steps": 8}, {"total_timesteps": 2e6}, {}),
            "seeds": ctx.pick(2, 2, 4),
            "cap_s": ctx.pick(60.0, 25.0, 300.0),
            "greedy_episodes": ctx.pick(4, 20, 100),
        },
        {
            "label": "jaxrl snake_perfect",
            "command": "python -m jaxrl.train experiment=snake_perfect",
            "settings": {
                "experiment": "snake_perfect",
                **ctx.pick({**smoke, "algo.num_steps": 8, "algo.minibatch_size": 256}, {}, {}),
            },
            # not in quick mode: the recipe takes an hour of a 2-core CPU and reaches no score threshold in minutes
            "seeds": ctx.pick(1, 0, 2),
            "cap_s": ctx.pick(60.0, 0.0, 3600.0),
            "greedy_episodes": ctx.pick(4, 20, 100),
            "target": PERFECT_TARGET,
        },
    ]


def jaxrl_seed(settings: dict[str, Any], seed: int, cap_s: float, episodes: int) -> dict[str, Any]:
    summary, rows, elapsed, played = evaluated_run("snake", episodes, seed=seed, **settings)
    startup = max(0.0, elapsed - summary["wall_s"])  # config, env and run dir before compiling, final save after
    points = [
        [float(r["wall_s"]) + startup, int(float(r["env_steps"])), float(r["score"])]
        for r in rows
        if r.get("score") not in (None, "", "nan") and math.isfinite(float(r["score"]))
    ]
    return {
        "seed": seed,
        "points": [p for p in points if p[0] <= cap_s],
        "steps": int(float(rows[-1]["env_steps"])) if rows else 0,
        "seconds": elapsed,
        "sps": summary["sps"],
        "compile_s": summary["compile_s"],
        "final_score": summary.get("final_score"),
        "final_win_rate": summary.get("final_win_rate"),
        "greedy": greedy_figures(played),
    }


def greedy_figures(played: dict[str, Any]) -> dict[str, Any]:
    """The greedy evaluation's figures kept in score.json (from `Run.evaluate`'s result)."""
    score = played["score"]
    return {
        "episodes": played["episodes_per_seed"],
        "checkpoint_step": played["checkpoint_step"],
        "score_mean": score["mean"],
        "score_median": score["median"],
        "score_min": score["min"],
        "score_max": score["max"],
        "wins": played["wins"],
        "win_rate": played["win_rate"],
        "seconds": played["seconds"],
    }


def meets(run: dict[str, Any], target: dict[str, float]) -> bool:
    """Whether one seed's greedy evaluation meets the target, and its run finished within the cap."""
    g = run["greedy"]
    return g["score_mean"] >= target["score"] and g["win_rate"] >= target["win_rate"] and run["seconds"] <= run["cap_s"]


def describe_greedy(run: dict[str, Any]) -> str:
    g = run["greedy"]
    return (
        f"greedy {g['score_mean']:.1f} (median {g['score_median']:.0f}, max {g['score_max']:.0f}),"
        f" {g['wins']}/{g['episodes']} wins"
    )


def spread(runs: list[dict[str, Any]], cap_s: float) -> dict[str, list[float | None]]:
    """Mean, min and max over seeds of the latest score each seed has shown, on a grid of moments
    from 0 to the cap (None before every seed has a point)."""
    times = np.linspace(0, cap_s, GRID + 1)[1:]
    table = np.full((len(runs), len(times)), np.nan)
    for i, run in enumerate(runs):
        if run["points"]:
            at, _, score = (np.array(v, float) for v in zip(*run["points"], strict=True))
            index = np.searchsorted(at, times, side="right") - 1
            table[i] = np.where(index >= 0, score[np.maximum(index, 0)], np.nan)
    complete = ~np.isnan(table).any(axis=0)
    pick = lambda f: [float(v) if ok else None for v, ok in zip(f(np.nan_to_num(table), axis=0), complete, strict=True)]
    return {"t": times.tolist(), "mean": pick(np.mean), "min": pick(np.min), "max": pick(np.max)}


def reached(times: list[float], values: list[float | None]) -> dict[str, float | None]:
    """Seconds at which a curve first reaches each threshold (None: not within the run)."""
    return {
        str(t): next((s for s, v in zip(times, values, strict=True) if v is not None and v >= t), None)
        for t in THRESHOLDS
    }


def run(ctx: Context) -> dict[str, Any]:
    out: dict[str, Any] = {"curves": {}}
    for recipe in recipes(ctx):
        if not recipe["seeds"]:
            ctx.skip(f"{recipe['label']}: full mode only (its first score threshold takes minutes)")
            continue
        runs = []
        for seed in range(recipe["seeds"]):
            last = jaxrl_seed(recipe["settings"], seed, recipe["cap_s"], recipe["greedy_episodes"])
            last["cap_s"] = recipe["cap_s"]
            runs.append(last)
            ctx.say(
                f"{recipe['label']} seed {seed}: {last['steps']:,} steps in {last['seconds']:.0f} s, "
                f"final score {last['final_score']}; {describe_greedy(last)}"
            )
        curve = {**recipe, "runs": runs, "spread": spread(runs, recipe["cap_s"])}
        curve["reached"] = reached(curve["spread"]["t"], curve["spread"]["mean"])
        if "target" in recipe:
            curve["target_met"] = [meets(r, recipe["target"]) for r in runs]
        out["curves"][recipe["label"]] = curve
    from jaxrl.bench.peers import sb3_peer

    missing = sb3_peer.available()
    if missing:
        ctx.skip(f"Stable-Baselines3: {missing}")
    else:
        # the smoke run only checks that SB3's curve is taken and written: a few rollouts, not the 60 s cap
        # quick: 4 workers, as 16 take longer to start on a 2-core CPU than the quick cap
        n_envs, jaxrl_cap = ctx.pick(2, 4, 16), out["curves"]["jaxrl default"]["cap_s"]
        cap = ctx.pick(6.0, jaxrl_cap, jaxrl_cap)
        sb3 = sb3_peer.score_curve(cap, seed=0, n_envs=n_envs, vec="subproc")
        times = [p[0] for p in sb3["points"]]
        sb3.update(cap_s=cap, seeds=1, command=f"SB3 PPO, seed guides' fast, {n_envs} SubprocVecEnv")
        sb3["reached"] = reached(times, [p[2] for p in sb3["points"]])
        out["curves"][f"SB3 PPO (seed guides' fast, {n_envs} SubprocVecEnv)"] = sb3
        best = max((p[2] for p in sb3["points"]), default=None)
        ctx.say(f"SB3: {sb3['steps']:,} steps in {sb3['seconds']:.0f} s, best mean score {best}")
    out["headlines"] = headlines(out)
    return out


def finals(curve: dict[str, Any]) -> list[float]:
    """Each seed's final score (jaxrl), or SB3's best mean score (none: no episode ended)."""
    if "runs" in curve:
        return [r["final_score"] for r in curve["runs"] if r["final_score"] is not None]
    return [max(p[2] for p in curve["points"])] if curve["points"] else []


def describe_reach(curve: dict[str, Any]) -> str:
    got = [f"{t} in {s:.0f} s" for t, s in curve["reached"].items() if s is not None]
    text = ", ".join(got) if got else "no threshold"
    scores = finals(curve)
    if not scores:
        return f"{text} (no episode ended)"
    if "runs" in curve:
        return (
            f"{text}; final score {np.mean(scores):.1f}"
            f" (seeds {min(scores):.1f}-{max(scores):.1f}, {len(scores)} seeds)"
        )
    return f"{text} (best mean score {scores[0]:.1f})"


def headlines(out: dict[str, Any]) -> list[dict[str, str]]:
    lines = [
        {"what": f"time to score, {name}, cap {c.get('cap_s', out.get('cap_s')):.0f} s", "figure": describe_reach(c)}
        for name, c in out["curves"].items()
    ]
    for name, c in out["curves"].items():
        if any(r.get("greedy") for r in c.get("runs", [])):
            figure = "; ".join(f"seed {r['seed']}: {describe_greedy(r)}" for r in c["runs"])
            if "target_met" in c:
                figure += f"; target met on {sum(c['target_met'])} of {len(c['target_met'])} seeds"
            lines.append({"what": f"greedy evaluation at the end, {name}", "figure": figure})
    return lines


def report(result: dict[str, Any]) -> str:
    intro = "Time for the mean over seeds to reach each score; each jaxrl seed is its own run (its own clock)."
    md = [intro, ""]
    head = ["trainer", "seeds", "cap", *[f"score {t}" for t in THRESHOLDS], "final score (range)", "steps/s"]
    md += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, c in result["curves"].items():
        cap = c.get("cap_s", result.get("cap_s"))  # results written before issue 16 had one cap and one seed
        cells = [name, str(c.get("seeds", 1)), f"{cap:.0f} s"]
        cells += [("-" if c["reached"].get(str(t)) is None else f"{c['reached'][str(t)]:.0f} s") for t in THRESHOLDS]
        scores = finals(c)
        cells.append(f"{np.mean(scores):.1f} ({min(scores):.1f}-{max(scores):.1f})" if scores else "-")
        if "runs" in c:
            sps = float(np.mean([r["sps"] for r in c["runs"]]))
        else:
            sps = c["steps"] / c["seconds"] if c["seconds"] else None
        cells.append(fmt_rate(sps))
        md.append("| " + " | ".join(cells) + " |")
    greedy = [(name, c) for name, c in result["curves"].items() if any(r.get("greedy") for r in c.get("runs", []))]
    if greedy:
        md += ["", "Greedy evaluation of each seed's final checkpoint (outside its clock):", ""]
        md += [
            "| trainer | seed | run | greedy mean score | median | max | wins | target |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, c in greedy:
            for i, r in enumerate(c["runs"]):
                g = r["greedy"]
                met = ("met" if c["target_met"][i] else "not met") if "target_met" in c else "-"
                md.append(
                    f"| {name} | {r['seed']} | {r['steps']:,} steps in {r['seconds']:.0f} s | {g['score_mean']:.1f} "
                    f"| {g['score_median']:.0f} | {g['score_max']:.0f} | {g['wins']}/{g['episodes']} | {met} |"
                )
        md += [
            "",
            (
                f"snake_perfect's target: greedy mean score >= {PERFECT_TARGET['score']:.0f} of 97 and "
                f">= {PERFECT_TARGET['win_rate']:.0%} wins within the cap."
            ),
        ]
    default, sb3 = (
        result["curves"].get("jaxrl default"),
        next((c for n, c in result["curves"].items() if n.startswith("SB3")), None),
    )
    if default and sb3:
        ratios = [
            f"{t}: {sb3['reached'][str(t)] / default['reached'][str(t)]:.0f}x"
            for t in THRESHOLDS
            if default["reached"].get(str(t)) and sb3["reached"].get(str(t))
        ]
        if ratios:
            md += ["", "SB3's time over jaxrl's default, per score: " + ", ".join(ratios) + "."]
    return "\n".join(md) + "\n"


def plot(result: dict[str, Any], axes_title: str, path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    cap = max(c.get("cap_s", result.get("cap_s", 0)) for c in result["curves"].values())
    for name, c in result["curves"].items():
        if "spread" in c:
            s = c["spread"]
            t = [x for x, m in zip(s["t"], s["mean"], strict=True) if m is not None]
            if not t:
                continue
            low = [v for v in s["min"] if v is not None]
            high = [v for v in s["max"] if v is not None]
            mean = [v for v in s["mean"] if v is not None]
            (line,) = ax.plot(t, mean, label=f"{name}: mean of {c['seeds']} seeds")
            ax.fill_between(t, low, high, color=line.get_color(), alpha=0.2, lw=0)
        elif c["points"]:
            xs, _, ys = zip(*c["points"], strict=True)
            ax.plot(xs, ys, marker=".", label=name)
    for t in THRESHOLDS:
        ax.axhline(t, color="grey", lw=0.6, ls=":")
    ax.set_xscale("symlog", linthresh=60)
    ax.set_xlabel("wall-clock seconds per run (compile included); linear to 60 s, then log")
    ax.set_ylabel("mean score (apples per episode)")
    ax.set_xlim(0, cap)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    ax.set_title(f"Snake 10x10: score against wall-clock, range over seeds shaded - {axes_title}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
