"""The run driver: compile-and-step (`Program`), the host loop, and the run's host-side state.

`Program` compiles one chunk of updates for every seed once; `host_loop` calls it chunk by
chunk and hands each chunk to the hooks (`jaxrl.hooks`: curriculum, metrics, checkpoints,
stop signal, summary), which do every host job. The loop itself does nothing else.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl import algorithm, loop
from jaxrl.config import TrainConfig, agents_per_world
from jaxrl.stats import UpdateStats


def over_seeds(fn: Any, num_seeds: int, in_axes: tuple[Any, ...]) -> Any:
    """`fn` mapped over the leading seed axis of its batched arguments (a vmap)."""
    return jax.vmap(fn, in_axes=in_axes)


class Program:
    """One algorithm's chunk of `chunk` updates compiled for all seeds, and the calls around it."""

    def __init__(self, cfg: TrainConfig, env: Any, env_params: Any, chunk: int | None = None):
        self.cfg = cfg
        self.env, self.env_params = env, env_params
        self.algo: algorithm.Algorithm = algorithm.get(cfg.algo.name).factory(cfg, env, env_params)
        self.num_updates = self.algo.num_updates
        self.steps_per_update = self.algo.steps_per_update  # env (world) steps per update per seed
        self.chunk = chunk or max(1, math.ceil(self.num_updates / cfg.num_chunks))  # updates per compiled call
        self.agents_per_world = agents_per_world(cfg)
        run_chunk = lambda runner, n: loop.run_chunk(self.algo.update, runner, n, self.chunk)
        self._chunk_fn = jax.jit(over_seeds(run_chunk, cfg.num_seeds, (0, None)), donate_argnums=0)
        self._init_fn = jax.jit(over_seeds(self.algo.init, cfg.num_seeds, (0,)))
        self._compiled = None

    def check_memory(self, device: Any) -> None:
        """ConfigError when the algorithm's large allocations for all seeds exceed the device's free memory."""
        from jaxrl.devices import check_fits

        for block in self.algo.memory():
            seeds = self.cfg.num_seeds
            what = f"{block.what} x {seeds} seeds" if seeds > 1 else block.what
            check_fits(block.nbytes * seeds, device, what, f"{block.setting} (or num_seeds)")

    def seed_keys(self) -> jax.Array:
        """One key per seed: fold_in(key(seed), i)."""
        base = jax.random.key(self.cfg.seed)
        return jax.vmap(lambda i: jax.random.fold_in(base, i))(np.arange(self.cfg.num_seeds))

    def abstract_runner(self) -> Any:
        """Shapes and dtypes of the runner of all seeds (nothing computed)."""
        return jax.eval_shape(self._init_fn, self.seed_keys())

    def compile(self, runner: Any = None) -> tuple[Any, float]:
        """The runner (fresh unless given, e.g. restored) and the seconds spent compiling init and one chunk."""
        t0 = time.perf_counter()
        runner = self._init_fn(self.seed_keys()) if runner is None else jax.device_put(runner)
        self._compiled = self._chunk_fn.lower(runner, jnp.int32(self.chunk)).compile()
        jax.block_until_ready(runner)
        return runner, time.perf_counter() - t0

    def with_env_params(self, runner: Any, params: Any) -> Any:
        """The runner with every seed's envs switched to `params` (traced `EnvParams`)."""
        seeds = self.cfg.num_seeds
        stacked = jax.tree.map(lambda x: np.broadcast_to(x, (seeds, *x.shape)).copy(), params)
        return runner.replace(envs=runner.envs.replace(params=stacked))

    def run_chunk(self, runner: Any, active: int) -> tuple[Any, UpdateStats]:
        """`active` updates of every seed; stats on the host as (seeds, active) arrays."""
        runner, stats = self._compiled(runner, jnp.int32(active))
        stats = jax.device_get(stats)
        return runner, jax.tree.map(lambda v: np.asarray(v)[:, :active], stats)


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


@dataclasses.dataclass
class Chunk:
    """One chunk as the hooks see it."""

    active: int  # updates run
    seconds: float  # wall time of the compiled call, stats fetched
    env_steps: int  # env steps per seed after it
    sps: float  # env steps per second, all seeds
    stats: UpdateStats  # (seeds, active) host arrays


@dataclasses.dataclass
class RunContext:
    """What the hooks share: the config, the program, the run directory and the run's progress."""

    cfg: TrainConfig
    resolved: Any  # the resolved DictConfig written as config.yaml
    program: Program
    run_dir: Path
    progress: RunProgress
    device: Any = None  # the jax device the run uses
    resumed: bool = False
    stop_requested: bool = False  # set by the stop signal: finish this chunk, save, end
    phase: Any = None  # the curriculum phase now running (None without a curriculum)
    saved: Path | None = None  # the last checkpoint written
    interrupted: bool = False

    @property
    def env_steps(self) -> int:
        """Env steps per seed done so far."""
        return self.progress.done_updates * self.program.steps_per_update

    @property
    def finished(self) -> bool:
        return self.progress.done_updates >= self.program.num_updates


class Hook:
    """Host-side work around a run's chunks; every method is optional (the base does nothing).

    Order matters: hooks run in list order at every stage.
    """

    def start(self, ctx: RunContext) -> None:
        """Before the first chunk (after compile)."""

    def before_chunk(self, ctx: RunContext, runner: Any, active: int) -> tuple[Any, int]:
        """May change the runner (e.g. env params) and cut the chunk short; returns both."""
        return runner, active

    def after_chunk(self, ctx: RunContext, runner: Any, chunk: Chunk) -> None:
        """After every chunk."""

    def end(self, ctx: RunContext, runner: Any) -> None:
        """After the last chunk, or after a stop request (not after an error)."""

    def close(self, ctx: RunContext) -> None:
        """Always, last: release files and threads."""


def host_loop(ctx: RunContext, runner: Any, hooks: list[Hook]) -> Any:
    """Run chunks until the run is done or a stop is requested; every host job is a hook's."""
    program = ctx.program
    while not ctx.finished and not ctx.stop_requested:
        active = min(program.chunk, program.num_updates - ctx.progress.done_updates)
        for hook in hooks:
            runner, active = hook.before_chunk(ctx, runner, active)
        t0 = time.perf_counter()
        runner, stats = program.run_chunk(runner, active)
        seconds = time.perf_counter() - t0
        ctx.progress.train_s += seconds
        ctx.progress.done_updates += active
        sps = active * program.steps_per_update * ctx.cfg.num_seeds / seconds
        chunk = Chunk(active, seconds, ctx.env_steps, sps, stats)
        for hook in hooks:
            hook.after_chunk(ctx, runner, chunk)
    ctx.interrupted = ctx.stop_requested and not ctx.finished
    return runner
