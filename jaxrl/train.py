"""`python -m jaxrl.train env=snake algo=ppo num_seeds=4 ...`: train, report, write a run directory."""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.cli_config import UsageError, compose_config
from jaxrl.config import ENV_KWARGS, ConfigError, TrainConfig

USAGE = """usage: python -m jaxrl.train [key=value ...]

  env=snake | <gymnax id>    e.g. env=CartPole-v1, env.size=12 (snake)
  algo=ppo | dqn             e.g. algo.lr=3e-4 algo.network=cnn algo.num_steps=64 (ppo)
                             algo.buffer_size=100000 algo.n_step=3 algo.double=false (dqn)
  seed=0 num_seeds=1 num_envs=1024 total_timesteps=2e7 num_chunks=50
  run_dir=PATH device=auto|cpu|gpu|metal progress=true|false
"""


def make_env(cfg: TrainConfig) -> tuple[Any, Any]:
    """Build the env and apply the config's EnvParams overrides."""
    import envs

    fields = {f.name: getattr(cfg.env, f.name) for f in dataclasses.fields(cfg.env) if f.name != "name"}
    ctor = {k: v for k, v in fields.items() if k in ENV_KWARGS.get(cfg.env.name, ())}
    env, params = envs.make(cfg.env.name, **ctor)
    overrides = {k: v for k, v in fields.items() if k not in ctor and v is not None}
    unknown = [k for k in overrides if not hasattr(params, k)]
    if unknown:
        raise ConfigError(f"env.{unknown[0]} is not a parameter of {cfg.env.name}")
    return env, params.replace(**overrides)


def nanmean(values: np.ndarray) -> float:
    """Mean over the finite entries (NaN marks updates without that figure, e.g. DQN before learning starts)."""
    finite = np.asarray(values, np.float64)
    finite = finite[np.isfinite(finite)]
    return float(finite.mean()) if finite.size else math.nan


def default_run_dir(cfg: TrainConfig) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{cfg.env.name}-{cfg.algo.name}-{stamp}"


class Trainer:
    """Compiles one chunk of updates for all seeds and drives it from the host."""

    def __init__(self, cfg: TrainConfig, env: Any, env_params: Any, chunk: int | None = None):
        import jax

        from jaxrl import dqn, ppo

        self.cfg = cfg
        self.algo = {"ppo": ppo.make_train, "dqn": dqn.make_train}[cfg.algo.name](cfg, env, env_params)
        self.num_updates = self.algo.num_updates
        self.chunk = chunk or max(1, math.ceil(self.num_updates / cfg.num_chunks))  # updates per compiled call
        self.steps_per_update = self.algo.steps_per_update  # per seed
        if hasattr(self.algo, "buffer"):  # the replay buffer is the one large allocation: check before compiling
            from jaxrl.devices import check_fits

            check_fits(
                self.algo.buffer.nbytes() * cfg.num_seeds,
                jax.config.jax_default_device or jax.devices()[0],
                f"the replay buffer ({self.algo.buffer.capacity:,} transitions x {cfg.num_seeds} seeds)",
                "algo.buffer_size (or num_seeds)",
            )
        run_chunk = lambda runner, n: self.algo.run_chunk(runner, n, self.chunk)
        self._chunk_fn = jax.jit(jax.vmap(run_chunk, in_axes=(0, None)), donate_argnums=0)
        self._init_fn = jax.jit(jax.vmap(self.algo.init))

    def seed_keys(self):
        import jax

        base = jax.random.key(self.cfg.seed)
        return jax.vmap(lambda i: jax.random.fold_in(base, i))(np.arange(self.cfg.num_seeds))

    def compile(self) -> tuple[Any, float]:
        """Initial runner state and the seconds spent compiling init and one chunk."""
        import jax
        import jax.numpy as jnp

        t0 = time.perf_counter()
        runner = self._init_fn(self.seed_keys())
        self._compiled = self._chunk_fn.lower(runner, jnp.int32(self.chunk)).compile()
        jax.block_until_ready(runner)
        return runner, time.perf_counter() - t0

    def run_chunk(self, runner: Any, active: int) -> tuple[Any, dict[str, np.ndarray]]:
        import jax
        import jax.numpy as jnp

        runner, stats = self._compiled(runner, jnp.int32(active))
        stats = jax.device_get(stats)
        return runner, {k: v[:, :active] for k, v in stats.items()}  # (seeds, active)


def train(cfg: TrainConfig, resolved: Any) -> dict[str, Any]:
    """Run training as configured; write the run directory; return the summary."""
    from omegaconf import OmegaConf

    from jaxrl.devices import select_device
    from jaxrl.runlog import MetricsCSV, Progress, episode_means, write_json

    devices = select_device(cfg.device)
    env, env_params = make_env(cfg)
    trainer = Trainer(cfg, env, env_params)  # checks sizes (replay memory) before anything is written
    run_dir = Path(cfg.run_dir) if cfg.run_dir else default_run_dir(cfg)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(resolved, resolve=True))
    print(f"device: {devices[0].platform} x{len(devices)} ({devices[0].device_kind})", flush=True)
    print(
        f"env: {cfg.env.name} | algo: {cfg.algo.name} | seeds: {cfg.num_seeds} | envs/seed: {cfg.num_envs}"
        f" | run dir: {run_dir}",
        flush=True,
    )

    runner, compile_s = trainer.compile()
    print(f"compiled in {compile_s:.1f}s; {trainer.num_updates} updates in chunks of {trainer.chunk}", flush=True)

    total_steps = trainer.num_updates * trainer.steps_per_update
    progress = Progress(total_steps, cfg.progress)
    metrics = MetricsCSV(run_dir / "metrics.csv")
    history: list[dict[str, np.ndarray]] = []
    done_updates, train_s, interrupted = 0, 0.0, False
    try:
        while done_updates < trainer.num_updates:
            active = min(trainer.chunk, trainer.num_updates - done_updates)
            t0 = time.perf_counter()
            runner, stats = trainer.run_chunk(runner, active)
            dt = time.perf_counter() - t0
            train_s += dt
            done_updates += active
            history.append(stats)
            steps = done_updates * trainer.steps_per_update
            sps = active * trainer.steps_per_update * cfg.num_seeds / dt
            means = episode_means(stats)
            losses = {k: nanmean(v) for k, v in stats.items() if not k.endswith("_sum") and k != "episodes"}
            metrics.write({"env_steps": steps, "sps": sps, "wall_s": train_s + compile_s, **means, **losses})
            progress.update(steps, sps, means)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        progress.close()
        metrics.close()

    summary = summarize(cfg, history, trainer.steps_per_update, done_updates, compile_s, train_s)
    summary.update(interrupted=interrupted, device=devices[0].platform, run_dir=str(run_dir))
    write_json(run_dir / "summary.json", summary)
    final = f"final return {summary['final_return']:.2f}" if summary["final_return"] is not None else ""
    if "final_score" in summary and summary["final_score"] is not None:
        final += f", final score {summary['final_score']:.2f}"
    print(
        f"{'interrupted' if interrupted else 'done'}: {summary['env_steps']:,} env steps in "
        f"{summary['wall_s']:.1f}s ({summary['sps']:,.0f} steps/s after compile); {final}; {run_dir}"
    )
    return summary


def summarize(cfg, history, steps_per_update, done_updates, compile_s, train_s) -> dict[str, Any]:
    """Summary figures; final_* are means over the last ~10% of updates' finished episodes, all seeds."""
    from jaxrl.runlog import episode_means

    summary: dict[str, Any] = {
        "env": cfg.env.name,
        "algo": cfg.algo.name,
        "num_seeds": cfg.num_seeds,
        "env_steps": done_updates * steps_per_update * cfg.num_seeds,
        "env_steps_per_seed": done_updates * steps_per_update,
        "updates": done_updates,
        "compile_s": compile_s,
        "train_s": train_s,
        "wall_s": compile_s + train_s,
        "sps": done_updates * steps_per_update * cfg.num_seeds / train_s if train_s else 0.0,
    }
    if history:
        per_update = {k: np.concatenate([h[k] for h in history], axis=1) for k in history[0]}
        tail = max(1, math.ceil(0.1 * per_update["episodes"].shape[1]))
        last = episode_means({k: v[:, -tail:] for k, v in per_update.items()})
        summary["final_return"] = last.get("episode_return", math.nan)
        if "score" in last:
            summary["final_score"] = last["score"]
        per_seed = [
            episode_means({k: v[s : s + 1, -tail:] for k, v in per_update.items()}) for s in range(cfg.num_seeds)
        ]
        summary["final_return_per_seed"] = [m["episode_return"] for m in per_seed]
        if "score" in last:
            summary["final_score_per_seed"] = [m["score"] for m in per_seed]
    else:
        summary["final_return"] = math.nan
    return summary


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help", "help") for a in argv):
        print(USAGE)
        return 0
    try:
        cfg, resolved = compose_config(argv)
        train(cfg, resolved)
    except (UsageError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
