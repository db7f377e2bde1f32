"""DQN on Snake 10x10: jaxrl's default config beside Stable-Baselines3 DQN (defaults), same run.

SB3 steps the same Snake through the Gymnasium adapter (`envs.to_gymnasium`), so both learn the
very same rules. The adapter dispatches one jitted call per step from Python: measured on the
2-core CPU (2026-11-24) SB3 ran 1.84-1.88k steps/s on it and 3.0-3.3k on a hand-written numpy
Snake with the same rules (since removed), so a Python env written for speed would make SB3 up
to ~1.7x faster than this benchmark's figure.

    pip install -e ".[bench]"   # stable-baselines3, gymnasium and the CPU build of torch 2.13.0
    python -m bench.dqn_vs_sb3 [--sb3-steps 20000] [--updates 300]

SB3 is timed after its `learning_starts`, so every timed step includes its gradient steps.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime
from pathlib import Path

from jaxrl.bench.machine import describe


def sb3_dqn_sps(steps: int) -> float:
    import torch
    from stable_baselines3 import DQN

    from jaxrl import envs

    torch.set_num_threads(2)
    model = DQN("MlpPolicy", envs.to_gymnasium("snake", size=10), seed=0, verbose=0)
    model.learn(total_timesteps=model.learning_starts + 1000)  # past learning_starts, warmed up
    t0 = time.perf_counter()
    model.learn(total_timesteps=steps, reset_num_timesteps=False)
    return steps / (time.perf_counter() - t0)


def jaxrl_dqn_sps(updates: int) -> tuple[float, float]:
    import jax

    from jaxrl.config.compose import compose_config
    from jaxrl.config.schema import make_env
    from jaxrl.run.driver import Program

    cfg, _ = compose_config(["env=snake", "algo=dqn", f"algo.learning_starts={0}"])  # time learning updates only
    env, params = make_env(cfg)
    program = Program(cfg, env, params, chunk=updates)
    runner, compile_s = program.compile()
    runner, _ = program.run_chunk(runner, updates)  # warm-up: fills part of the replay
    t0 = time.perf_counter()
    runner, _ = program.run_chunk(runner, updates)
    jax.block_until_ready(runner)
    return updates * program.steps_per_update / (time.perf_counter() - t0), compile_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sb3-steps", type=int, default=20_000, help="SB3 env steps timed")
    parser.add_argument("--updates", type=int, default=300, help="jaxrl DQN updates timed")
    parser.add_argument("--out", default="bench/results/dqn_vs_sb3.json")
    args = parser.parse_args()

    ours, compile_s = jaxrl_dqn_sps(args.updates)
    print(f"jaxrl DQN (default Snake config): {ours:,.0f} env steps/s (compile {compile_s:.1f}s)", flush=True)
    sb3 = sb3_dqn_sps(args.sb3_steps)
    print(f"Stable-Baselines3 DQN (defaults, Snake through envs.to_gymnasium): {sb3:,.0f} env steps/s")
    print(f"ratio: {ours / sb3:.0f}x")
    result = {
        "benchmark": "dqn_vs_sb3",
        "board": 10,
        "jaxrl_sps": ours,
        "jaxrl_compile_s": compile_s,
        "sb3_sps": sb3,
        "sb3_env": "envs.to_gymnasium('snake', size=10)",
        "ratio": ours / sb3,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": describe(),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
