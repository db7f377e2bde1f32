"""`python -m jaxrl.train env=snake algo=ppo num_seeds=4 ...`: train, report, write a run directory."""

from __future__ import annotations

import dataclasses
import math
import os
import signal
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Self

import numpy as np

from jaxrl.checkpoint import CheckpointError
from jaxrl.cli_config import UsageError, compose_config, resume_config
from jaxrl.config import ENV_KWARGS, ConfigError, TrainConfig

USAGE = """usage: python -m jaxrl.train [key=value ...]

  env=snake | <gymnax id>    e.g. env=CartPole-v1, env.size=12 (snake)
  algo=ppo | dqn             e.g. algo.lr=3e-4 algo.network=cnn algo.num_steps=64 (ppo)
                             algo.buffer_size=100000 algo.n_step=3 algo.double=false (dqn)
  seed=0 num_seeds=1 num_envs=1024 total_timesteps=2e7 num_chunks=50
  run_dir=PATH device=auto|cpu|gpu|metal progress=true|false
  checkpoint.every_steps=N checkpoint.every_minutes=10 checkpoint.keep=3
  logger=tensorboard | wandb | [tensorboard,wandb]   (metrics.csv is always written)
  resume=RUN_DIR [key=value ...]   continue a run from its newest readable checkpoint
                                   (settings that change the state's shapes are refused)
"""


def make_env(cfg: TrainConfig) -> tuple[Any, Any]:
    """Build the env and apply the config's EnvParams overrides."""
    import envs

    fields = {f.name: getattr(cfg.env, f.name) for f in dataclasses.fields(cfg.env) if f.name != "name"}
    ctor = {k: v for k, v in fields.items() if k in ENV_KWARGS.get(cfg.env.name, ())}
    try:
        env, params = envs.make(cfg.env.name, **ctor)
    except ValueError as e:  # a constructor refusing a setting; its message names the value and what is allowed
        raise ConfigError(f"env: {e}") from None
    overrides = {k: v for k, v in fields.items() if k not in ctor and v is not None}
    unknown = [k for k in overrides if not hasattr(params, k)]
    if unknown:
        raise ConfigError(f"env.{unknown[0]} is not a parameter of {cfg.env.name}")
    params = params.replace(**overrides)
    if hasattr(env, "check_params"):  # our envs; gymnax's own have no such check
        try:
            env.check_params(params)
        except ValueError as e:  # "name=value is invalid: must be ..."
            raise ConfigError(f"env.{e}") from None
    return env, params


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
        from jaxrl.curriculum import Curriculum, build_phases

        self.curriculum = None
        if cfg.curriculum:
            shape_keys = ENV_KWARGS.get(cfg.env.name, ())
            phases = build_phases(
                cfg.curriculum,
                cfg.env.name,
                env_params,
                shape_keys,
                self.steps_per_update,
                getattr(env, "check_params", None),
            )
            self.curriculum = Curriculum(phases, env_params)
        run_chunk = lambda runner, n: self.algo.run_chunk(runner, n, self.chunk)
        self._chunk_fn = jax.jit(jax.vmap(run_chunk, in_axes=(0, None)), donate_argnums=0)
        self._init_fn = jax.jit(jax.vmap(self.algo.init))

    def seed_keys(self):
        import jax

        base = jax.random.key(self.cfg.seed)
        return jax.vmap(lambda i: jax.random.fold_in(base, i))(np.arange(self.cfg.num_seeds))

    def abstract_runner(self) -> Any:
        """Shapes and dtypes of the runner of all seeds (nothing computed)."""
        import jax

        return jax.eval_shape(self._init_fn, self.seed_keys())

    def compile(self, runner: Any = None) -> tuple[Any, float]:
        """The runner (fresh unless given, e.g. restored) and the seconds spent compiling init and one chunk."""
        import jax
        import jax.numpy as jnp

        t0 = time.perf_counter()
        runner = self._init_fn(self.seed_keys()) if runner is None else jax.device_put(runner)
        self._compiled = self._chunk_fn.lower(runner, jnp.int32(self.chunk)).compile()
        jax.block_until_ready(runner)
        return runner, time.perf_counter() - t0

    def with_env_params(self, runner: Any, params: Any) -> Any:
        """The runner with every seed's envs switched to `params` (traced `EnvParams`)."""
        import jax

        seeds = self.cfg.num_seeds
        return runner.replace(env_params=jax.tree.map(lambda x: np.broadcast_to(x, (seeds, *x.shape)).copy(), params))

    def run_chunk(self, runner: Any, active: int) -> tuple[Any, dict[str, np.ndarray]]:
        import jax
        import jax.numpy as jnp

        runner, stats = self._compiled(runner, jnp.int32(active))
        stats = jax.device_get(stats)
        return runner, {k: v[:, :active] for k, v in stats.items()}  # (seeds, active)


@dataclasses.dataclass
class RunProgress:
    """Host-side bookkeeping of a run, saved in every checkpoint's meta."""

    done_updates: int = 0
    train_s: float = 0.0
    compile_s: float = 0.0  # summed over this run's processes
    history: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # per chunk: env_steps, per-seed sums

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> RunProgress:
        return cls(meta["done_updates"], meta["train_s"], meta["compile_s"], meta["history"])


class StopRequest:
    """First Ctrl-C: finish the chunk, save, exit. Second: stop at once (KeyboardInterrupt)."""

    def __init__(self):
        self.requested = False
        self._previous = None

    def __enter__(self) -> Self:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("\ninterrupt: saving a checkpoint after this chunk (Ctrl-C again stops without saving)", flush=True)

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def _kill_after_chunks() -> int | None:
    """Fault injection for the resume tests: SIGKILL this process after that many chunks."""
    value = os.environ.get("JAXRL_KILL_AFTER_CHUNKS")
    return int(value) if value else None


def checkpoint_meta(cfg: TrainConfig, resolved: Any, progress: RunProgress, trainer: Trainer) -> dict[str, Any]:
    from omegaconf import OmegaConf

    from jaxrl.checkpoint import versions

    env_fields = {f.name: getattr(cfg.env, f.name) for f in dataclasses.fields(cfg.env) if f.name != "name"}
    return {
        **dataclasses.asdict(progress),
        "env_steps_per_seed": progress.done_updates * trainer.steps_per_update,
        "num_updates": trainer.num_updates,
        "config": OmegaConf.to_container(resolved, resolve=True),
        "env": {"name": cfg.env.name, "kwargs": env_fields},
        "algo": cfg.algo.name,
        "versions": versions(),
    }


def chunk_record(steps: int, stats: dict[str, np.ndarray]) -> dict[str, Any]:
    """Per-seed sums of one chunk's episode stats (JSON-ready)."""
    sums = {k: v.sum(axis=1).tolist() for k, v in stats.items() if k.endswith(("_sum", "episodes"))}
    return {"env_steps": steps, **sums}


def train(cfg: TrainConfig, resolved: Any, resume: Path | None = None) -> dict[str, Any]:
    """Run (or resume) training as configured; write the run directory; return the summary."""
    from omegaconf import OmegaConf

    from jaxrl.checkpoint import Checkpointer
    from jaxrl.config import logger_names
    from jaxrl.devices import select_device
    from jaxrl.runlog import (
        MetricsCSV,
        Progress,
        check_loggers,
        episode_means,
        open_loggers,
        plot_learning_curve,
        write_json,
    )

    try:
        check_loggers(logger_names(cfg.logger))
    except ImportError as e:
        raise ConfigError(str(e)) from None
    devices = select_device(cfg.device)
    env, env_params = make_env(cfg)
    trainer = Trainer(cfg, env, env_params)  # checks sizes (replay memory) before anything is written
    run_dir = resume or (Path(cfg.run_dir) if cfg.run_dir else default_run_dir(cfg))
    if resume is None:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(resolved, resolve=True))
    checkpoints = Checkpointer(run_dir / "checkpoints", keep=cfg.checkpoint.keep)
    print(f"device: {devices[0].platform} x{len(devices)} ({devices[0].device_kind})", flush=True)
    print(
        f"env: {cfg.env.name} | algo: {cfg.algo.name} | seeds: {cfg.num_seeds} | envs/seed: {cfg.num_envs}"
        f" | run dir: {run_dir}",
        flush=True,
    )

    runner, run = None, RunProgress()
    if resume is not None:
        warn = lambda line: print(line, file=sys.stderr, flush=True)
        step, runner, meta = checkpoints.restore_latest(trainer.abstract_runner(), warn=warn)
        run = RunProgress.from_meta(meta)
        (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(resolved, resolve=True))  # with the overrides
        print(f"resumed from {checkpoints.path(step)} ({step:,} env steps per seed)", flush=True)
    runner, compile_s = trainer.compile(runner)
    run.compile_s += compile_s
    total_steps = trainer.num_updates * trainer.steps_per_update
    rounded = (
        ""
        if total_steps == int(cfg.total_timesteps)
        else f" ({total_steps:,} env steps: total_timesteps rounded down to whole updates)"
    )
    print(
        f"compiled in {compile_s:.1f}s; {trainer.num_updates} updates in chunks of {trainer.chunk}{rounded}", flush=True
    )

    start_steps = run.done_updates * trainer.steps_per_update
    progress = Progress(total_steps, cfg.progress, start=start_steps)
    metrics = MetricsCSV(run_dir / "metrics.csv", keep_until=start_steps if resume is not None else None)
    config_dict = OmegaConf.to_container(resolved, resolve=True)
    loggers = open_loggers(logger_names(cfg.logger), run_dir, cfg.wandb_project, config_dict)
    every_steps, every_minutes = cfg.checkpoint.every_steps, cfg.checkpoint.every_minutes
    saved_steps, saved_at = start_steps, time.monotonic()
    kill_after, chunks_here, interrupted, saved = _kill_after_chunks(), 0, False, None
    try:
        with StopRequest() as stop:
            curriculum, phase = trainer.curriculum, None
            while run.done_updates < trainer.num_updates and not stop.requested:
                active = min(trainer.chunk, trainer.num_updates - run.done_updates)
                if curriculum is not None:
                    if curriculum.phase(run.done_updates) is not phase:
                        phase = curriculum.phase(run.done_updates)
                        runner = trainer.with_env_params(runner, curriculum.params(phase))
                    active = min(active, curriculum.updates_left(run.done_updates) or active)
                t0 = time.perf_counter()
                runner, stats = trainer.run_chunk(runner, active)
                dt = time.perf_counter() - t0
                run.train_s += dt
                run.done_updates += active
                chunks_here += 1
                steps = run.done_updates * trainer.steps_per_update
                run.history.append(chunk_record(steps, stats))
                sps = active * trainer.steps_per_update * cfg.num_seeds / dt
                means = episode_means(stats)
                losses = {
                    k: nanmean(v) for k, v in stats.items() if not k.endswith("_sum") and not k.endswith("episodes")
                }
                row = {"env_steps": steps, "sps": sps, "wall_s": run.train_s + run.compile_s, **means, **losses}
                if phase is not None:
                    row["phase"] = phase.index
                metrics.write(row)
                for logger in loggers:
                    logger.write(steps, row)
                progress.update(steps, sps, means, phase=f"{phase.index}/{len(curriculum)}" if phase else None)
                due = (every_steps is not None and steps - saved_steps >= every_steps) or (
                    every_minutes is not None and time.monotonic() - saved_at >= 60 * every_minutes
                )
                if due and run.done_updates < trainer.num_updates and not stop.requested:
                    checkpoints.save(steps, runner, checkpoint_meta(cfg, resolved, run, trainer))
                    saved_steps, saved_at = steps, time.monotonic()
                if kill_after is not None and chunks_here >= kill_after:
                    os.kill(os.getpid(), signal.SIGKILL)
            interrupted = stop.requested and run.done_updates < trainer.num_updates
        steps = run.done_updates * trainer.steps_per_update
        if steps > saved_steps or not checkpoints.steps():
            saved = checkpoints.save(steps, runner, checkpoint_meta(cfg, resolved, run, trainer), wait=True)
        else:
            saved = checkpoints.path(steps)
    finally:
        progress.close()
        metrics.close()
        for logger in loggers:
            logger.close()
        checkpoints.close()

    summary = summarize(cfg, run, trainer.steps_per_update)
    if plot_learning_curve(run.history, run_dir / "learning_curve.png", f"{cfg.env.name} {cfg.algo.name}"):
        summary["learning_curve"] = str(run_dir / "learning_curve.png")
    summary.update(interrupted=interrupted, device=devices[0].platform, run_dir=str(run_dir), checkpoint=str(saved))
    write_json(run_dir / "summary.json", summary)
    final = f"final return {summary['final_return']:.2f}" if summary["final_return"] is not None else ""
    if summary.get("final_world_return") is not None:
        final += f" per agent, {summary['final_world_return']:.2f} per world"
    if summary.get("final_score") is not None:
        final += f", final score {summary['final_score']:.2f}"
    print(
        f"{'interrupted' if interrupted else 'done'}: {summary['env_steps']:,} env steps in "
        f"{summary['wall_s']:.1f}s ({summary['sps']:,.0f} steps/s after compile); {final}; {run_dir}"
    )
    print(f"checkpoint: {saved}" + (f" (resume: python -m jaxrl.train resume={run_dir})" if interrupted else ""))
    return summary


def summarize(cfg: TrainConfig, run: RunProgress, steps_per_update: int) -> dict[str, Any]:
    """Summary figures; final_* are means over the finished episodes of the last ~10% of chunks, all
    seeds (widened back to the last chunks that finished an episode, when episodes outlast that span)."""
    from jaxrl.runlog import episode_means

    summary: dict[str, Any] = {
        "env": cfg.env.name,
        "algo": cfg.algo.name,
        "num_seeds": cfg.num_seeds,
        "env_steps": run.done_updates * steps_per_update * cfg.num_seeds,
        "env_steps_per_seed": run.done_updates * steps_per_update,
        "updates": run.done_updates,
        "compile_s": run.compile_s,
        "train_s": run.train_s,
        "wall_s": run.compile_s + run.train_s,
        "sps": run.done_updates * steps_per_update * cfg.num_seeds / run.train_s if run.train_s else 0.0,
        "final_return": math.nan,
    }
    if run.history:
        span = max(1, math.ceil(0.1 * len(run.history)))
        while span < len(run.history) and not np.sum([chunk["episodes"] for chunk in run.history[-span:]]):
            span += 1
        tail = run.history[-span:]
        keys = [k for k in tail[0] if k != "env_steps"]
        per_seed = {k: np.array([chunk[k] for chunk in tail]).T for k in keys}  # (seeds, chunks)
        last = episode_means(per_seed)
        summary["final_return"] = last.get("episode_return", math.nan)
        seeds = [episode_means({k: v[s] for k, v in per_seed.items()}) for s in range(cfg.num_seeds)]
        summary["final_return_per_seed"] = [m["episode_return"] for m in seeds]
        if "world_return" in last:  # several agents per world: final_return is per agent
            summary["final_world_return"] = last["world_return"]
            summary["final_world_return_per_seed"] = [m["world_return"] for m in seeds]
        if "score" in last:
            summary["final_score"] = last["score"]
            summary["final_score_per_seed"] = [m["score"] for m in seeds]
    return summary


def check_same_state(saved: TrainConfig, cfg: TrainConfig, overrides: list[str]) -> None:
    """UsageError when resume overrides would change the shapes or dtypes of the saved training state."""
    import jax

    shapes = lambda c: jax.tree.map(lambda a: (a.shape, str(a.dtype)), Trainer(c, *make_env(c)).abstract_runner())
    before, after = shapes(saved), shapes(cfg)
    if jax.tree.structure(before) != jax.tree.structure(after) or jax.tree.leaves(before) != jax.tree.leaves(after):
        raise UsageError(
            f"{' '.join(overrides)} would change the shapes of the saved training state; a resumed run keeps them"
            " (start a new run to change them)"
        )


def main(argv: list[str] | None = None) -> int:
    """Exit codes: 0 done, 2 bad input, 130 stopped by Ctrl-C (after saving a checkpoint)."""
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help", "help") for a in argv):
        print(USAGE)
        return 0
    try:
        resume = [a.partition("=")[2] for a in argv if a.startswith("resume=")]
        overrides = [a for a in argv if not a.startswith("resume=")]
        if resume:
            run_dir = Path(resume[-1]).expanduser()
            cfg, resolved, saved = resume_config(run_dir, overrides)
            if overrides:
                check_same_state(saved, cfg, overrides)
            summary = train(cfg, resolved, resume=run_dir)
        else:
            cfg, resolved = compose_config(overrides)
            summary = train(cfg, resolved)
    except (UsageError, ConfigError, CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # before training started, or a second Ctrl-C: nothing more is saved
        print("\nstopped; checkpoints already written are kept", file=sys.stderr)
        return 130
    return 130 if summary["interrupted"] else 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
