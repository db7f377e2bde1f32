"""End-to-end training steps/s (PPO or DQN), compile time reported apart; `--vs purejaxrl` beside PureJaxRL.

python -m bench.train_throughput [--algo ppo|dqn] [--env snake] [--updates 100] [key=value overrides ...]
python -m bench.train_throughput --vs purejaxrl [--env CartPole-v1 Breakout-MinAtar] [--rounds 3]

The first form times one compiled chunk of updates of an env's default config. DQN is timed with
learning on from the first update (`algo.learning_starts=0`), so every timed step pays for its
gradient steps.

`--vs purejaxrl` trains PPO with PureJaxRL's CartPole settings (4 envs x 128 steps, 4 epochs x
4 minibatches, 64x64 tanh, 5e5 steps) twice per round in one process: the reference in PureJaxRL's
shape (`bench/purejaxrl_ref.py`), then `jaxrl.train` with the same hyperparameters, a whole run each
(its run directory, chunks, metrics and checkpoint included). Rounds interleave the two, so a slow
spell of a shared machine hits both. Figures: steps/s over the training run (after compile),
compile seconds, and the final return (mean over the episodes of the last 10% of the run).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jax
from jaxrl.bench.machine import describe

from jaxrl.config.compose import compose_config
from jaxrl.config.schema import make_env
from jaxrl.run.driver import Program

VS_ENVS = ("CartPole-v1", "Breakout-MinAtar")


def purejaxrl_settings(seed: int) -> dict[str, Any]:
    """jaxrl's settings for PureJaxRL's CartPole PPO config (`bench.purejaxrl_ref.PUREJAXRL_CARTPOLE`)."""
    from jaxrl.bench.purejaxrl_ref import PUREJAXRL_CARTPOLE as c

    return {
        "algo": "ppo",
        "num_envs": c["NUM_ENVS"],
        "total_timesteps": c["TOTAL_TIMESTEPS"],
        "seed": seed,
        "progress": False,
        "algo.num_steps": c["NUM_STEPS"],
        "algo.update_epochs": c["UPDATE_EPOCHS"],
        "algo.num_minibatches": c["NUM_MINIBATCHES"],
        "algo.lr": c["LR"],
        "algo.anneal_lr": c["ANNEAL_LR"],
        "algo.gamma": c["GAMMA"],
        "algo.gae_lambda": c["GAE_LAMBDA"],
        "algo.clip_eps": c["CLIP_EPS"],
        "algo.ent_coef": c["ENT_COEF"],
        "algo.vf_coef": c["VF_COEF"],
        "algo.max_grad_norm": c["MAX_GRAD_NORM"],
        "algo.activation": c["ACTIVATION"],
        "algo.hidden": [64, 64],
        "algo.network": "mlp",
        "algo.shared_torso": False,
        "algo.normalize_obs": False,
        "algo.reward_scale": 1.0,
    }


def run_jaxrl(env: str, seed: int) -> dict[str, float]:
    """One whole `jaxrl.train` run with PureJaxRL's settings: steps/s, compile seconds, final return."""
    import jaxrl

    with tempfile.TemporaryDirectory() as tmp:
        run = jaxrl.train(env=env, run_dir=Path(tmp) / "run", **purejaxrl_settings(seed))
        s = run.summary
    return {"sps": s["sps"], "compile_s": s["compile_s"], "final_return": s["final_return"], "seconds": s["train_s"]}


def vs_purejaxrl(envs: list[str], rounds: int, seed: int) -> dict[str, Any]:
    """Both trainers on each env, interleaved over `rounds` rounds; per env the runs and their summary."""
    from jaxrl.bench.purejaxrl_ref import run_reference

    out: dict[str, Any] = {}
    for env in envs:
        runs: dict[str, list[dict[str, float]]] = {"purejaxrl": [], "jaxrl": []}
        for r in range(rounds):
            runs["purejaxrl"].append(run_reference(env, seed + r))
            runs["jaxrl"].append(run_jaxrl(env, seed + r))
            for name, rs in runs.items():
                x = rs[-1]
                print(
                    f"  {env} round {r + 1}/{rounds} {name:9s}: {x['sps']:,.0f} steps/s, compile {x['compile_s']:.2f}s,"
                    f" final return {x['final_return']:.1f}",
                    flush=True,
                )
        out[env] = summarize(runs)
    return out


def summarize(runs: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    """Best and median steps/s and compile seconds per trainer, and jaxrl's ratios (best against best)."""
    table: dict[str, Any] = {"runs": runs}
    for name, rs in runs.items():
        table[name] = {
            "sps_best": max(x["sps"] for x in rs),
            "sps_median": statistics.median(x["sps"] for x in rs),
            "compile_s_best": min(x["compile_s"] for x in rs),
            "compile_s_median": statistics.median(x["compile_s"] for x in rs),
            "final_return_mean": statistics.fmean(x["final_return"] for x in rs),
        }
    ours, ref = table["jaxrl"], table["purejaxrl"]
    table["sps_ratio"] = ours["sps_best"] / ref["sps_best"]
    table["sps_ratio_median"] = ours["sps_median"] / ref["sps_median"]
    table["compile_ratio"] = ours["compile_s_best"] / ref["compile_s_best"]
    return table


def print_vs(results: dict[str, Any]) -> None:
    print("\nPPO with PureJaxRL's CartPole settings, one process, interleaved (best of rounds; median in brackets)")
    print(
        f"{'env':18s} {'jaxrl steps/s':>22s} {'PureJaxRL steps/s':>22s} {'ratio':>12s} {'compile jaxrl / ref':>22s} {'return':>14s}"
    )
    for env, t in results.items():
        o, r = t["jaxrl"], t["purejaxrl"]
        print(
            f"{env:18s} {o['sps_best']:>12,.0f} ({o['sps_median']:>7,.0f}) {r['sps_best']:>12,.0f} ({r['sps_median']:>7,.0f})"
            f" {t['sps_ratio']:>5.2f}x ({t['sps_ratio_median']:.2f})"
            f" {o['compile_s_best']:>9.2f}s / {r['compile_s_best']:.2f}s"
            f" {o['final_return_mean']:>6.1f} / {r['final_return_mean']:.1f}"
        )


def chunk_throughput(args: argparse.Namespace) -> dict[str, Any]:
    """Steps/s of one timed chunk of an env's default config (after a warm-up chunk)."""
    overrides = [f"env={args.env}", f"algo={args.algo}"]
    overrides += ["algo.learning_starts=0"] if args.algo == "dqn" else []
    overrides += args.overrides
    cfg, _ = compose_config(overrides)
    env, env_params = make_env(cfg)
    if args.updates is None:
        args.updates = max(20, 300_000 // Program(cfg, env, env_params).steps_per_update)
    program = Program(cfg, env, env_params, chunk=args.updates)  # one timed chunk of exactly this many updates

    runner, compile_s = program.compile()
    runner, _ = program.run_chunk(runner, 1)  # warm-up (first-call allocations)
    t0 = time.perf_counter()
    runner, _stats = program.run_chunk(runner, args.updates)
    jax.block_until_ready(runner)
    dt = time.perf_counter() - t0
    steps = args.updates * program.steps_per_update * program.population
    sps = steps / dt
    print(
        f"{args.algo.upper()} on {cfg.env.name}: {sps:,.0f} env steps/s ({steps:,} steps in {dt:.1f}s);"
        f" compile {compile_s:.1f}s"
    )
    return {
        "benchmark": "train_throughput",
        "algo": args.algo,
        "env": cfg.env.name,
        "overrides": overrides,
        "num_envs": cfg.num_envs,
        "steps_per_update": program.steps_per_update,
        "network": cfg.algo.network,
        "hidden": list(cfg.algo.hidden),
        "sps": sps,
        "compile_s": compile_s,
        "timed_steps": steps,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", default="ppo", choices=["ppo", "dqn"])
    parser.add_argument(
        "--env", nargs="+", default=None, help="env id(s); default snake (with --vs: CartPole-v1 Breakout-MinAtar)"
    )
    parser.add_argument(
        "--updates", type=int, default=None, help="updates timed after compile (default: ~300k env steps)"
    )
    parser.add_argument("--vs", choices=["purejaxrl"], default=None, help="train beside PureJaxRL's PPO in one process")
    parser.add_argument("--rounds", type=int, default=3, help="--vs: interleaved rounds per env")
    parser.add_argument("--seed", type=int, default=30, help="--vs: seed of the first round (one more per round)")
    parser.add_argument("--out", default=None, help="JSON path (default bench/results/train_throughput_<...>.json)")
    parser.add_argument("overrides", nargs="*", help="config overrides, as for python -m jaxrl.train")
    args = parser.parse_args()

    if args.vs:
        envs = args.env or list(VS_ENVS)
        result = {"benchmark": "train_throughput_vs_purejaxrl", "envs": vs_purejaxrl(envs, args.rounds, args.seed)}
        print_vs(result["envs"])
        default_out = "bench/results/train_throughput_vs_purejaxrl.json"
    else:
        args.env = (args.env or ["snake"])[0]
        result = chunk_throughput(args)
        suffix = "" if args.env == "snake" else f"_{args.env}"
        default_out = f"bench/results/train_throughput_{args.algo}{suffix}.json"
    result.update(when=datetime.now(UTC).isoformat(timespec="seconds"), machine=describe())
    out = Path(args.out or default_out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {out}")


if __name__ == "__main__":
    main()
