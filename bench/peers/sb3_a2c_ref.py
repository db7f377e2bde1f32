"""Stable-Baselines3's own A2C, the peer of jaxrl's A2C in the parity part: RL Baselines3 Zoo's CartPole-v1
settings (SB3's A2C defaults with 8 envs) on Gymnasium's CartPole-v1, one run per seed, same env-step budget.

Its figure matches jaxrl's `final_return`: the mean return of the episodes that ended in the last 10% of
the run's env steps (the Monitor wrapper's episode returns, recorded as each episode ends).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from jaxrl.bench.peers.sb3_peer import silent

ZOO_CARTPOLE = {"n_envs": 8}  # rl-baselines3-zoo hyperparams/a2c.yml, CartPole-v1: the defaults otherwise


def run_reference(env_name: str, seed: int, **overrides: Any) -> dict[str, float]:
    """One SB3 A2C run: its final return, episodes ended and seconds. `TOTAL_TIMESTEPS` (default 5e5), as the
    PureJaxRL references name their budget, is the only override."""
    unknown = set(overrides) - {"TOTAL_TIMESTEPS"}
    if unknown:
        raise KeyError(f"unknown SB3 A2C reference settings: {sorted(unknown)}; known: ['TOTAL_TIMESTEPS']")
    from stable_baselines3 import A2C
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    ended: list[tuple[int, float]] = []  # (env steps so far, return) per episode, in the order they ended

    class Episodes(BaseCallback):
        def _on_step(self) -> bool:
            ended.extend(
                (self.num_timesteps, info["episode"]["r"]) for info in self.locals["infos"] if "episode" in info
            )
            return True

    total = int(overrides.get("TOTAL_TIMESTEPS", 5e5))
    env = make_vec_env(env_name, n_envs=ZOO_CARTPOLE["n_envs"], seed=seed)
    model = silent(A2C("MlpPolicy", env, seed=seed, device="cpu", verbose=0))
    t0 = time.perf_counter()
    model.learn(total_timesteps=total, callback=Episodes())
    seconds = time.perf_counter() - t0
    late = [r for t, r in ended if t > 0.9 * total] or [r for _, r in ended[-1:]]
    final = sum(late) / len(late) if late else float("nan")
    return {"final_return": float(final), "episodes": len(ended), "seconds": seconds, "compile_s": 0.0}


def run_references(env_name: str, seeds: Sequence[int], **overrides: Any) -> list[dict[str, float]]:
    """`run_reference`'s figures for each seed."""
    return [run_reference(env_name, seed, **overrides) for seed in seeds]
