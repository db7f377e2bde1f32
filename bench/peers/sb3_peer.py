"""Stable-Baselines3 on Snake 10x10: the stack users run today, measured for `python -m bench`.

SB3 steps jaxrl's own Snake through the Gymnasium adapter (`envs.to_gymnasium("snake", size=10)`,
one jitted call per step), so both sides learn the very same rules. Two measurements:

- `throughput`: end-to-end training env steps/s, collection and gradient updates together as
  `model.learn` does them, after a warm-up. PPO uses the "fast" preset of the SB3 GPU guide we
  were given (n_steps 256, batch_size 2048, n_epochs 15, net_arch [512, 512], SubprocVecEnv),
  every other hyperparameter at SB3's default (the guide states none). A timed segment is whole
  rollouts: `steps` is rounded up to a multiple of `n_envs * 256` (at least one rollout and its
  15 epochs), and batch_size is `min(2048, n_envs * 256)` so that it divides the rollout.
  The warm-up (not timed) is the first rollout and its update; `setup_s` is construction plus
  warm-up, `env_start_s` the vector env's start alone (every worker up and reset). DQN is SB3's
  defaults (`python -m bench.parts.train --vs sb3` times it beside jaxrl's DQN); its warm-up is
  `learning_starts + 1000` steps, so every timed step includes its share of gradient steps (one
  every 4 vector steps: with `n_envs` envs one per `4 * n_envs` env steps). The reported steps
  are the ones `learn` took (`num_timesteps`).
- `score_curve`: PPO "fast" learning for at most `cap_s` seconds of wall clock counted from the
  start of env and model construction, as a jaxrl run is timed from its start, compile included.
  One point per completed rollout: the mean `info["score"]` (apples eaten) of the episodes that
  ended during that rollout, as jaxrl logs its score per update; rollouts where none ended give
  no point. A callback stops collection once the cap has passed; the update that follows the last
  completed rollout may run past the cap (up to one rollout's train phase).

Vector envs: "dummy" steps the envs one after another in this process; "subproc" is SB3's
SubprocVecEnv with start_method "forkserver", SB3's own default on Linux and the guide's choice.
"fork" is unsafe here: importing `envs` starts JAX's CPU client (threads), and forked workers
hung until killed (with and without jax work in the parent). "spawn" works as well, about as fast.
Either way every worker imports torch, jax and `envs` and compiles Snake itself before it steps,
which `setup_s`, `env_start_s` and the score curve's first point include.
Steps run on the CPU, as a Python env's would: workers see only JAX's CPU platform (16 workers
would otherwise each claim most of a GPU) and steps in this process run under
`jax.default_device(cpu)`.

Torch runs on `threads` CPU threads, default `os.cpu_count()`; the guide sets 1 so that torch
leaves the cores to the env workers. Every core was the fastest on a quiet machine and by far the
slowest when other jobs ran, where 1 thread held up: `settings["torch_threads"]` says which a figure used.

    pip install '.[bench]'
    python -m bench.peers.sb3_peer --algo ppo --vec subproc --n-envs 8 --steps 4096
    python -m bench.peers.sb3_peer --score-cap 120
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import multiprocessing
import os
import time
from collections.abc import Iterator
from typing import Any

PPO_FAST = {"n_steps": 256, "batch_size": 2048, "n_epochs": 15, "net_arch": [512, 512]}  # the guide's "fast" preset
START_METHOD = "forkserver"  # fork hangs with jax in the parent; see the module docstring
VECS = ("subproc", "dummy")
ALGOS = ("ppo", "dqn")


def available() -> str | None:
    """None when SB3, gymnasium and torch import; else one line naming what is missing."""
    missing = []
    for name in ("stable_baselines3", "gymnasium", "torch"):
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    return f"{', '.join(missing)} not installed: pip install '.[bench]'" if missing else None


def _snake(in_worker: bool) -> Any:
    """Snake 10x10 through the Gymnasium adapter, stepped on the CPU."""
    import gymnasium
    import jax

    if in_worker:  # before `envs` is imported, which starts JAX's clients
        jax.config.update("jax_platforms", "cpu")
    from jaxrl import envs

    class OnCpu(gymnasium.Wrapper):
        def reset(self, **kwargs: Any) -> Any:
            with jax.default_device(jax.devices("cpu")[0]):
                return self.env.reset(**kwargs)

        def step(self, action: Any) -> Any:
            with jax.default_device(jax.devices("cpu")[0]):
                return self.env.step(action)

    return OnCpu(envs.to_gymnasium("snake", size=10))


@contextlib.contextmanager
def _vec_env(vec: str, n_envs: int, seed: int) -> Iterator[Any]:
    """`n_envs` Snakes as an SB3 VecEnv (with SB3's Monitor, as `make_vec_env` builds it), reset once, so every
    worker is up (SubprocVecEnv's constructor waits for the first only); closed on exit, and workers left by a
    failed start are terminated."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    if vec not in VECS:
        raise ValueError(f"vec={vec!r} is not supported; allowed: {', '.join(VECS)}")
    subproc = vec == "subproc"
    before = set(multiprocessing.active_children())
    env = None
    try:
        env = make_vec_env(
            functools.partial(_snake, in_worker=subproc),
            n_envs=n_envs,
            seed=seed,
            vec_env_cls=SubprocVecEnv if subproc else DummyVecEnv,
            vec_env_kwargs={"start_method": START_METHOD} if subproc else None,
        )
        env.reset()
        yield env
    finally:
        try:
            if env is not None:
                env.close()
        finally:  # also when close fails on a dead worker
            for process in set(multiprocessing.active_children()) - before:
                process.terminate()
                process.join(timeout=10)


@contextlib.contextmanager
def _torch_threads(threads: int | None) -> Iterator[int]:
    """Torch on `threads` CPU threads (default os.cpu_count()) for the block, restored after."""
    import torch

    previous = torch.get_num_threads()
    threads = threads or os.cpu_count() or 1
    torch.set_num_threads(threads)
    try:
        yield threads
    finally:
        torch.set_num_threads(previous)


def silent(model: Any) -> Any:
    """`model` with a logger that writes nowhere: SB3's default makes a folder in the temp dir at every `learn`."""
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


def _ppo(env: Any, n_envs: int, seed: int, preset: dict[str, Any]) -> Any:
    from stable_baselines3 import PPO

    return silent(
        PPO(
            "MlpPolicy",
            env,
            n_steps=preset["n_steps"],
            batch_size=min(preset["batch_size"], n_envs * preset["n_steps"]),
            n_epochs=preset["n_epochs"],
            policy_kwargs={"net_arch": preset["net_arch"]},
            seed=seed,
            device="cpu",
            verbose=0,
        )
    )


def _dqn(env: Any, seed: int) -> Any:
    from stable_baselines3 import DQN

    return silent(DQN("MlpPolicy", env, seed=seed, device="cpu", verbose=0))


def _settings(model: Any, algo: str) -> dict[str, Any]:
    """The hyperparameters the model runs with, read back from it, as plain values."""
    from stable_baselines3.common.utils import FloatSchedule

    names = {
        "ppo": ["learning_rate", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range"]
        + ["normalize_advantage", "ent_coef", "vf_coef", "max_grad_norm"],
        "dqn": ["learning_rate", "buffer_size", "learning_starts", "batch_size", "tau", "gamma", "gradient_steps"]
        + ["target_update_interval", "exploration_fraction", "exploration_initial_eps", "exploration_final_eps"]
        + ["max_grad_norm"],
    }[algo]
    out = {}
    for name in names:
        value = getattr(model, name)
        out[name] = float(value(1.0)) if isinstance(value, FloatSchedule) else value
    if algo == "dqn":
        out["train_freq"] = [model.train_freq.frequency, model.train_freq.unit.value]
    out["net_arch"] = model.policy_kwargs.get("net_arch", getattr(model.policy, "net_arch", None))
    return out


def throughput(
    algo: str, vec: str, n_envs: int, steps: int, seed: int = 0, threads: int | None = None
) -> dict[str, Any]:
    """SB3 `algo` ("ppo" fast preset or "dqn" defaults) training env steps/s on Snake 10x10 after a warm-up."""
    if algo not in ALGOS:
        raise ValueError(f"algo={algo!r} is not supported; allowed: {', '.join(ALGOS)}")
    t0 = time.perf_counter()
    with _torch_threads(threads) as torch_threads, _vec_env(vec, n_envs, seed) as env:
        env_start_s = time.perf_counter() - t0
        if algo == "ppo":
            model = _ppo(env, n_envs, seed, PPO_FAST)
            rollout = n_envs * model.n_steps
            warmup, timed = rollout, max(1, math.ceil(steps / rollout)) * rollout
        else:
            model = _dqn(env, seed)
            warmup, timed = model.learning_starts + 1000, steps
        model.learn(total_timesteps=warmup)
        setup_s, start = time.perf_counter() - t0, model.num_timesteps
        t1 = time.perf_counter()
        model.learn(total_timesteps=timed, reset_num_timesteps=False)
        seconds = time.perf_counter() - t1
        taken = model.num_timesteps - start
        settings = {**_settings(model, algo), "torch_threads": torch_threads}
    return {
        "sps": taken / seconds,
        "setup_s": setup_s,
        "env_start_s": env_start_s,
        "steps": taken,
        "seconds": seconds,
        "n_envs": n_envs,
        "vec": vec,
        "algo": algo,
        "settings": settings,
    }


def _score_callback(t0: float, cap_s: float) -> Any:
    """An SB3 callback that keeps [wall_s, env_steps, mean_score] per rollout and stops once `cap_s` has passed."""
    from stable_baselines3.common.callbacks import BaseCallback

    class ScoreCurve(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.points: list[list[float]] = []
            self.scores: list[float] = []  # of the episodes that ended since the last point

        def _on_step(self) -> bool:
            for done, info in zip(self.locals["dones"], self.locals["infos"], strict=True):
                if done:
                    self.scores.append(float(info["score"]))
            return time.perf_counter() - t0 < cap_s

        def _on_rollout_end(self) -> None:
            if self.scores:
                self.points.append([time.perf_counter() - t0, self.num_timesteps, sum(self.scores) / len(self.scores)])
                self.scores = []

    return ScoreCurve()


def score_curve(
    cap_s: float, seed: int = 0, n_envs: int = 16, vec: str = "subproc", threads: int | None = None
) -> dict[str, Any]:
    """SB3 PPO "fast" learning Snake 10x10 for at most `cap_s` s from its start: mean score per rollout."""
    t0 = time.perf_counter()
    with _torch_threads(threads) as torch_threads, _vec_env(vec, n_envs, seed) as env:
        env_start_s = time.perf_counter() - t0
        model = _ppo(env, n_envs, seed, PPO_FAST)
        callback = _score_callback(t0, cap_s)
        model.learn(total_timesteps=2**62, callback=callback)  # the callback ends it
        seconds = time.perf_counter() - t0
        settings = {**_settings(model, "ppo"), "torch_threads": torch_threads, "n_envs": n_envs, "vec": vec}
    return {
        "points": callback.points,
        "steps": model.num_timesteps,
        "seconds": seconds,
        "env_start_s": env_start_s,
        "settings": settings,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", choices=ALGOS, default="ppo")
    parser.add_argument("--vec", choices=VECS, default="subproc")
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=4096, help="env steps timed (PPO: rounded up to whole rollouts)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: os.cpu_count())")
    parser.add_argument("--score-cap", type=float, default=None, help="seconds: run score_curve instead")
    args = parser.parse_args()
    if (reason := available()) is not None:
        parser.exit(2, f"{reason}\n")
    if args.score_cap is not None:
        result = score_curve(args.score_cap, args.seed, args.n_envs, args.vec, args.threads)
    else:
        result = throughput(args.algo, args.vec, args.n_envs, args.steps, args.seed, args.threads)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
