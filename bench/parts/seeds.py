"""Seed spread: how much what an agent learns depends on its seed.

Each case trains one program of 8 seeds (`num_seeds=8`: what 8 runs from the same keys compute, to
float rounding, as `tests/run/test_reliability.py` checks; seed i's key is fold_in(key(seed), i), not
the key of the run `seed=i`) with a shipped config at its own budget, then evaluates every seed's
final policy greedily (100 episodes per seed). Per case: each seed's training-time final return
(`summary.json`'s `final_return_per_seed`: the episodes that ended in the run's last ~10%) and its
greedy figure (the score on Snake, the return elsewhere), the mean, the worst seed and the spread.

The env-groups check trains PPO on CartPole-v1 with 8 envs in 1, 4 and 8 env groups (what 1, 4 and
8 devices compute; see docs/devices.md) over 32 seeds each: whether smaller shuffle pools learn worse.

Smoke: one tiny case and tiny env-groups runs (the plumbing); quick: PPO and PQN on CartPole over 4 seeds
(20 greedy episodes each); full: every case over 8 seeds, and 32 seeds per group count.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from jaxrl.bench.common import Context, evaluated_run, whole_run
from jaxrl.bench.parts.parity import seed_figures

NAME = "seeds"
TITLE = "Seed spread: every seed's final figures, the worst seed beside the mean"

SEEDS = 8
QUICK_SEEDS, QUICK_EPISODES = 4, 20  # quick mode: a worst seed beside the mean, in half the time
# (label, env, algo, settings): each at its shipped config's own budget
CASES = (
    ("PPO on CartPole-v1 (tuned default, 5e5 steps)", "CartPole-v1", "ppo", {}),
    ("DQN on CartPole-v1 (tuned default, 5e5 steps)", "CartPole-v1", "dqn", {}),
    ("PQN on CartPole-v1 (tuned default, 5e5 steps)", "CartPole-v1", "pqn", {}),
    ("PPO on Snake (python -m jaxrl.train env=snake)", "snake", "ppo", {}),
    ("PQN on Snake (tuned default, 1e7 steps)", "snake", "pqn", {}),
)
GROUPS = (1, 4, 8)
GROUP_SEEDS = 32


def spread(values: list[float]) -> dict[str, Any]:
    """Per-seed values with the parity part's mean, min and max over the finite ones (a seed that ended
    no episode is NaN and left out), named worst and best, their standard deviation and the mean's
    standard error."""
    figures = seed_figures(values)
    finite = [v for v in values if math.isfinite(v)]
    sd = statistics.stdev(finite) if len(finite) > 1 else 0.0
    return {
        "per_seed": values,
        "mean": figures["mean"],
        "worst": figures["min"],
        "best": figures["max"],
        "sd": sd,
        "se": sd / math.sqrt(len(finite)) if finite else math.nan,
    }


def seed_case(env: str, algo: str, settings: dict[str, Any], seeds: int, episodes: int, budget: float | None):
    extra = {} if budget is None else {"total_timesteps": budget}
    summary, _, seconds, figures = evaluated_run(env, episodes, algo=algo, num_seeds=seeds, seed=0, **settings, **extra)
    greedy_key = "score_per_seed" if "score_per_seed" in figures else "return_per_seed"
    return {
        "env_steps_per_seed": summary["env_steps_per_seed"],
        "seconds": seconds,
        "sps": summary["sps"],
        "train": spread([float(x) for x in summary["final_return_per_seed"]]),
        "greedy": spread([float(x) for x in figures[greedy_key]]),
        "greedy_figure": "score" if greedy_key == "score_per_seed" else "return",
        "wins_per_seed": figures.get("win_rate_per_seed"),
    }


def env_groups(seeds: int, budget: float) -> list[dict[str, Any]]:
    rows = []
    for groups in GROUPS:
        summary, _, seconds = whole_run(
            "CartPole-v1", algo="ppo", num_envs=8, env_groups=groups, num_seeds=seeds, seed=0, total_timesteps=budget
        )
        rows.append(
            {"env_groups": groups, "seconds": seconds, **spread(list(map(float, summary["final_return_per_seed"])))}
        )
    return rows


def run(ctx: Context) -> dict[str, Any]:
    cases = ctx.pick(CASES[:1], (CASES[0], CASES[2]), CASES)
    if ctx.mode == "quick":
        ctx.skip(f"{CASES[1][0]}: full mode only (50,000 vector steps of 10 envs, one after another)")
        ctx.skip("PPO on CartPole-v1 by env_groups: full mode only (docs/devices.md has its figures)")
    seeds = ctx.pick(2, QUICK_SEEDS, SEEDS)
    episodes = ctx.pick(4, QUICK_EPISODES, 100)
    rows = []
    for label, env, algo, settings in cases:
        figures = seed_case(env, algo, settings, seeds, episodes, ctx.pick(4096, None, None))
        rows.append({"label": label, "env": env, "algo": algo, "seeds": seeds, "episodes": episodes, **figures})
        g, t = figures["greedy"], figures["train"]
        ctx.say(
            f"{label}: greedy {figures['greedy_figure']} mean {g['mean']:.1f}, worst seed {g['worst']:.1f}"
            f" (training return mean {t['mean']:.1f}, worst {t['worst']:.1f}) in {figures['seconds']:.0f} s"
        )
    groups = [] if ctx.mode == "quick" else env_groups(ctx.pick(2, GROUP_SEEDS, GROUP_SEEDS), ctx.pick(4096, 5e5, 5e5))
    for r in groups:
        ctx.say(
            f"PPO CartPole-v1, 8 envs, env_groups={r['env_groups']}: mean {r['mean']:.1f} +- {r['se']:.1f},"
            f" worst {r['worst']:.1f} ({len(r['per_seed'])} seeds)"
        )
    out: dict[str, Any] = {"rows": rows, "env_groups": groups}
    out["headlines"] = headlines(out)
    return out


def headlines(out: dict[str, Any]) -> list[dict[str, str]]:
    lines = []
    for r in out["rows"]:
        g = r["greedy"]
        lines.append(
            {
                "what": f"{r['label']}: greedy {r['greedy_figure']} over {r['seeds']} seeds",
                "figure": f"mean {g['mean']:.1f}, worst seed {g['worst']:.1f}, best {g['best']:.1f};"
                f" training {r['greedy_figure']}: worst seed {r['train']['worst']:.1f}",
            }
        )
    groups = out["env_groups"]
    if groups:
        lines.append(
            {
                "what": f"PPO on CartPole-v1, 8 envs, by env_groups ({len(groups[0]['per_seed'])} seeds each)",
                "figure": "; ".join(
                    f"{r['env_groups']} groups: {r['mean']:.1f} +- {r['se']:.1f}, worst {r['worst']:.1f}"
                    for r in groups
                ),
            }
        )
    return lines


def report(result: dict[str, Any]) -> str:
    first = result["rows"][0] if result["rows"] else {"seeds": SEEDS, "episodes": 100}
    md = [
        (
            f"Each case: one program of {first['seeds']} seeds (`num_seeds`), its shipped config and budget; greedy"
            f" figures over {first.get('episodes', 100)} episodes per seed at the end; training return = the last"
            " ~10% of the run's episodes."
        ),
        "",
        "| case | seeds | greedy: mean | worst seed | best | per seed | training return: mean | worst | seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        g, t = r["greedy"], r["train"]
        per = ", ".join(f"{v:.1f}" for v in g["per_seed"])
        md.append(
            f"| {r['label']} | {r['seeds']} | {g['mean']:.1f} | {g['worst']:.1f} | {g['best']:.1f} | {per}"
            f" | {t['mean']:.1f} | {t['worst']:.1f} | {r['seconds']:.0f} |"
        )
    if not result["env_groups"]:  # quick mode
        return "\n".join(md) + "\n"
    md += [
        "",
        "**Env groups** (PPO on CartPole-v1, 8 envs, 5e5 steps; training return per seed):",
        "",
        "| env_groups | seeds | mean +- standard error | worst | below 400 |",
        "|---|---|---|---|---|",
    ]
    for r in result["env_groups"]:
        below = sum(v < 400 for v in r["per_seed"])
        md.append(
            f"| {r['env_groups']} | {len(r['per_seed'])} | {r['mean']:.1f} +- {r['se']:.1f} |"
            f" {r['worst']:.1f} | {below} |"
        )
    return "\n".join(md) + "\n"
