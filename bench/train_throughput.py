"""End-to-end training steps/s (PPO or DQN) with an env's default config, compile time reported apart.

python -m bench.train_throughput [--algo ppo|dqn] [--env snake] [--updates 100] [key=value overrides ...]

DQN is timed with learning on from the first update (`algo.learning_starts=0`), so every timed
step pays for its gradient steps.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime
from pathlib import Path

import jax

from bench.machine import describe
from jaxrl.cli_config import compose_config
from jaxrl.config import make_env
from jaxrl.driver import Program


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", default="ppo", choices=["ppo", "dqn"])
    parser.add_argument("--env", default="snake", help="env id (snake or a gymnax id such as CartPole-v1)")
    parser.add_argument(
        "--updates", type=int, default=None, help="updates timed after compile (default: ~300k env steps)"
    )
    parser.add_argument("--out", default=None, help="default bench/results/train_throughput_<algo>[_<env>].json")
    parser.add_argument("overrides", nargs="*", help="config overrides, as for python -m jaxrl.train")
    args = parser.parse_args()

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
    steps = args.updates * program.steps_per_update * cfg.num_seeds
    sps = steps / dt
    print(
        f"{args.algo.upper()} on {cfg.env.name}: {sps:,.0f} env steps/s ({steps:,} steps in {dt:.1f}s); compile {compile_s:.1f}s"
    )
    result = {
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
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": describe(),
    }
    suffix = "" if args.env == "snake" else f"_{args.env}"
    args.out = args.out or f"bench/results/train_throughput_{args.algo}{suffix}.json"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
