"""Classic-control parity with PureJaxRL: the final return of jaxrl's tuned default for each gymnax
classic-control id (PPO on all five, DQN on the two discrete ones with PureJaxRL's DQN, A2C on CartPole-v1) beside
the PureJaxRL-shaped reference with PureJaxRL's own defaults, same env-step budget, same seeds
count, same machine.

jaxrl: `jaxrl.train(env=..., algo=..., num_seeds=4)`, the tuned default (`configs/tuned/`) as one
program of 4 seeds (keys `fold_in(key(0), i)`), at PureJaxRL's budget of 5e5 env steps per seed
(1e6 on MountainCar-v0 and MountainCarContinuous-v0); its figure per seed is `summary.json`'s
`final_return_per_seed` (the training-time return: the mean over the episodes that finished in
the last ~10% of the run). References, each seed its own run from `PRNGKey(seed)`, seeds 0-3:
`bench/peers/purejaxrl_ref.py` (ppo.py with its CartPole settings) on the discrete ids,
`bench/peers/purejaxrl_ppo_continuous_ref.py` (ppo_continuous_action.py) on the continuous ones,
`bench/peers/purejaxrl_dqn_ref.py` (dqn.py), each with PureJaxRL's defaults and the same budget; and for
A2C, which PureJaxRL does not have, Stable-Baselines3's own A2C (`bench/peers/sb3_a2c_ref.py`, RL Zoo's
CartPole settings; left out, with a line, when SB3 is not installed). Their figure is the same
training-time mean (`bench.peers.purejaxrl_ref.final_return`). The verdict compares
the means over the seeds. As in PureJaxRL, the DQN reference's seeds share one network init and
exploration stream (dqn.py's fixed "dummy" key): only the envs' starts differ by seed. Quick mode
runs one pair per PureJaxRL reference (PPO on CartPole-v1 and Pendulum-v1, DQN on CartPole-v1), one seed;
it leaves out A2C against SB3.
"""

from __future__ import annotations

import math
import time
from typing import Any

from jaxrl.bench.common import Context, whole_run
from jaxrl.bench.peers import sb3_peer

NAME = "parity"
TITLE = "Classic control: jaxrl's tuned defaults against PureJaxRL's defaults (SB3's for A2C)"

# (algo, env id, env steps per seed: PureJaxRL's budget, the reference module in bench/peers/)
PAIRS = (
    ("ppo", "CartPole-v1", 5e5, "purejaxrl_ref"),
    ("ppo", "Acrobot-v1", 5e5, "purejaxrl_ref"),
    ("ppo", "MountainCar-v0", 1e6, "purejaxrl_ref"),
    ("ppo", "Pendulum-v1", 5e5, "purejaxrl_ppo_continuous_ref"),
    ("ppo", "MountainCarContinuous-v0", 1e6, "purejaxrl_ppo_continuous_ref"),
    ("dqn", "CartPole-v1", 5e5, "purejaxrl_dqn_ref"),
    ("dqn", "Acrobot-v1", 5e5, "purejaxrl_dqn_ref"),
    ("a2c", "CartPole-v1", 5e5, "sb3_a2c_ref"),  # PureJaxRL has no A2C: SB3's own, at RL Zoo's settings
)

# Who each reference module is, for the report.
PEERS = {
    "purejaxrl_ref": "PureJaxRL",
    "purejaxrl_ppo_continuous_ref": "PureJaxRL",
    "purejaxrl_dqn_ref": "PureJaxRL",
    "sb3_a2c_ref": "SB3",
}


def seed_figures(values: list[float]) -> dict[str, Any]:
    """Per-seed final returns with the mean, min and max of those that are numbers. A seed whose
    run finished no episode at all has NaN (the continuous reference on MountainCarContinuous-v0:
    2048 envs take 488 steps each in 1e6, and only envs that reach the flag end an episode); it is
    left out of the mean, which is then the mean of the episodes that did end."""
    finite = [v for v in values if math.isfinite(v)]
    nan = math.nan
    return {
        "per_seed": values,
        "mean": sum(finite) / len(finite) if finite else nan,
        "min": min(finite, default=nan),
        "max": max(finite, default=nan),
        "seeds_without_episodes": len(values) - len(finite),
    }


def jaxrl_side(algo: str, env: str, budget: float, seeds: int) -> dict[str, Any]:
    """jaxrl's tuned default, `seeds` seeds in one program, at `budget` env steps per seed."""
    summary, _, seconds = whole_run(env, algo=algo, num_seeds=seeds, seed=0, total_timesteps=budget)
    per_seed = summary["final_return_per_seed"] if seeds > 1 else [summary["final_return"]]
    return {
        **seed_figures([float(x) for x in per_seed]),
        "pooled": summary["final_return"],  # over every seed's episodes together, as summary.json's final_return
        "env_steps": summary["env_steps_per_seed"],
        "seconds": seconds,
    }


def reference_side(module: str, env: str, budget: float, seeds: int) -> dict[str, Any]:
    """The PureJaxRL-shaped reference with its defaults, one run per seed (one compile), at `budget`."""
    import importlib

    reference = importlib.import_module(f"jaxrl.bench.peers.{module}")
    t0 = time.perf_counter()
    runs = reference.run_references(env, range(seeds), TOTAL_TIMESTEPS=budget)
    return {
        **seed_figures([r["final_return"] for r in runs]),
        "seconds": time.perf_counter() - t0,
        "compile_s": runs[0]["compile_s"],
    }


def verdict(jaxrl: float, reference: float, peer: str) -> str:
    if math.isnan(reference):
        return "reference ended no episode"
    return f"jaxrl >= {peer}" if jaxrl >= reference else f"jaxrl below {peer}"


def run(ctx: Context) -> dict[str, Any]:
    # Smoke: the plumbing on one pair and a tiny budget; quick: one pair per reference, one seed; full:
    # every pair, four seeds.
    pairs = ctx.pick(PAIRS[:1], [PAIRS[0], PAIRS[3], PAIRS[5]], PAIRS)
    seeds = ctx.pick(2, 1, 4)
    rows = []
    for algo, env, budget, module in pairs:
        missing = sb3_peer.available() if module.startswith("sb3") else None
        if missing:
            ctx.say(f"{algo} {env}: left out, SB3's side cannot run ({missing})")
            continue
        budget = ctx.pick(4096, budget, budget)
        jaxrl = jaxrl_side(algo, env, budget, seeds)
        reference = reference_side(module, env, budget, seeds)
        row = {
            "algo": algo,
            "env": env,
            "budget": budget,
            "seeds": seeds,
            "reference": module,
            "jaxrl": jaxrl,
            "peer": PEERS[module],
            "reference_side": reference,
            "difference": jaxrl["mean"] - reference["mean"],
            "verdict": verdict(jaxrl["mean"], reference["mean"], PEERS[module]),
        }
        rows.append(row)
        ctx.say(
            f"{algo} {env} ({budget:,.0f} steps, {seeds} seeds): jaxrl {jaxrl['mean']:.1f}, "
            f"{PEERS[module]} {reference['mean']:.1f}: {row['verdict']}"
        )
    out: dict[str, Any] = {"rows": rows}
    out["headlines"] = headlines(rows)
    return out


def headlines(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    met = sum(r["jaxrl"]["mean"] >= r["reference_side"]["mean"] for r in rows)
    seeds = rows[0]["seeds"]
    return [
        {
            "what": "classic control, final return of jaxrl's tuned defaults against PureJaxRL's (SB3's for A2C)"
            f" (mean of {seeds} seeds)",
            "figure": f"jaxrl at or above on {met} of {len(rows)} (algo, env) pairs",
        }
    ]


def fmt_side(side: dict[str, Any]) -> str:
    text = f"{side['mean']:.1f} ({side['min']:.1f} to {side['max']:.1f})"
    missing = side.get("seeds_without_episodes", 0)
    if missing:
        text += f", {missing} of {len(side['per_seed'])} seeds ended no episode"
    return text


def report(result: dict[str, Any]) -> str:
    rows = result["rows"]
    seeds = rows[0]["seeds"]
    md = [
        f"Final training return, mean over {seeds} seeds (per-seed min to max); jaxrl's seeds are one program.",
        "",
        (
            "| env | algo | env steps per seed | jaxrl tuned default | reference | reference's defaults |"
            " jaxrl - reference | verdict | seconds (jaxrl / reference) |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        j, p = r["jaxrl"], r["reference_side"]
        md.append(
            f"| {r['env']} | {r['algo']} | {r['budget']:,.0f} | {fmt_side(j)} | {r['peer']} | {fmt_side(p)} |"
            f" {r['difference']:+.1f} | {r['verdict']} | {j['seconds']:.0f} / {p['seconds']:.0f} |"
        )
    return "\n".join(md) + "\n"
