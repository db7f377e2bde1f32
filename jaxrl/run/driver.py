"""The run driver: compile-and-step (`Program`), the host loop, and the run's host-side state.

`Program` compiles one chunk of updates for every seed once; `host_loop` calls it chunk by
chunk and hands each chunk to the hooks (`jaxrl.run.hooks`: curriculum, metrics, checkpoints,
stop signal, summary), which do every host job. The loop itself does nothing else.
"""

from __future__ import annotations

import dataclasses
import math
import time
import uuid
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxrl.algos import base, selfplay
from jaxrl.config.schema import ConfigError, TrainConfig, agents_per_world
from jaxrl.core import loop
from jaxrl.core.precision import with_matmul_precision
from jaxrl.core.stats import UpdateStats, all_finite
from jaxrl.envs.checks import INT32_MAX
from jaxrl.errors import NonFiniteError
from jaxrl.run.compiling import compile_aside, compile_jit
from jaxrl.scale.distributed import any_process
from jaxrl.scale.mesh import put


def over_seeds(fn: Any, num_seeds: int, in_axes: tuple[Any, ...]) -> Any:
    """`fn` mapped over the leading seed axis of its batched arguments (`in_axes` 0; None: shared).

    Several seeds are a vmap. One seed is `fn` itself on the seed's slice, its outputs given the
    seed axis back: a vmap of size 1 would batch every op (dots become batched dots, gathers and
    sorts gain a dimension), which small-batch runs such as PureJaxRL's CartPole settings pay for.
    """
    if num_seeds > 1:
        return jax.vmap(fn, in_axes=in_axes)

    def one_seed(*args: Any) -> Any:
        args = [arg if axis is None else jax.tree.map(lambda x: x[0], arg) for arg, axis in zip(args, in_axes)]
        return jax.tree.map(lambda x: x[None], fn(*args))

    return one_seed


class Program:
    """One algorithm's chunk of `chunk` updates compiled for all seeds, and the calls around it.

    The seed axis holds `population` entries: every seed of every sweep member, member-major
    (`jaxrl.config.sweep`). A member's swept algorithm values are a traced input of the compiled chunk
    (`hypers`), and its swept env values are the env params its envs start with.
    """

    def __init__(
        self,
        cfg: TrainConfig,
        env: Any,
        env_params: Any,
        chunk: int | None = None,
        layout: Any = None,
        agents: Any = None,
    ):
        """`layout` (`jaxrl.scale.mesh.layout`): the devices the program is sharded over; None, or one device:
        jax's default device, unsharded. `cfg` has its env_groups filled in for the layout. `agents`: the loader
        of a self-play league's frozen agents (`jaxrl.trained.frozen.league_agents`, which jaxrl.build passes)."""
        from jaxrl.config import sweep as sweeps

        if layout is not None:
            from jaxrl.scale.mesh import resolve

            cfg = resolve(cfg, layout)
        self.cfg = cfg
        self.layout = layout if layout is not None and layout.size > 1 else None
        self.env, self.env_params = env, env_params
        self.agents = agents
        self.algo: base.Algorithm = selfplay.wrap(base.get(cfg.algo.name).factory, cfg, env, env_params, agents)
        self.sweep = sweeps.parse(cfg)
        self.population = cfg.num_seeds * self.sweep.size  # entries of the seed axis
        self.hypers = self.sweep.algo_values(cfg.num_seeds)  # {field: (population,) float32}
        self.start_params, self.swept_env_fields = sweeps.member_env_params(cfg, self.sweep, env, env_params)
        self.num_updates = self.algo.num_updates
        self.steps_per_update = self.algo.steps_per_update  # env (world) steps per update per seed
        if self.num_updates > INT32_MAX:  # the runners count updates in int32
            raise ConfigError(
                f"total_timesteps={cfg.total_timesteps:g} is {self.num_updates:,} updates of {self.steps_per_update}"
                f" env steps; at most {INT32_MAX:,} fit the update counter: take more env steps per update"
                " (num_envs, or algo.num_steps / algo.train_freq)"
            )
        self.chunk = chunk or max(1, math.ceil(self.num_updates / cfg.num_chunks))  # updates per compiled call
        self.agents_per_world = agents_per_world(cfg)

        def run_chunk(runner: Any, hypers: dict[str, jax.Array], n: jax.Array) -> tuple[Any, UpdateStats]:
            return loop.run_chunk(lambda r: self.guarded_update(r, hypers), runner, n, self.chunk)

        def init(key_data: jax.Array, hypers: dict[str, jax.Array], start_params: Any) -> Any:
            return self.algorithm(hypers).init(jax.random.wrap_key_data(key_data), start_params)

        run_chunk, init = (with_matmul_precision(cfg.precision, fn) for fn in (run_chunk, init))
        n = self.population
        chunk_fn, init_fn = over_seeds(run_chunk, n, (0, 0, None)), over_seeds(init, n, (0, 0, 0))
        self.shardings = None
        self.chunk_hypers = self.hypers  # what the compiled chunk takes: on the mesh when there is one
        if self.layout is None:
            self._chunk_fn = jax.jit(chunk_fn, donate_argnums=0)
            self._init_fn = jax.jit(init_fn)
        else:
            from jaxrl.scale.mesh import runner_shardings, seed_sharding, stats_sharding

            self.shardings = runner_shardings(self.layout, jax.eval_shape(init_fn, *self.init_args()))
            seeds, stats = seed_sharding(self.layout), stats_sharding(self.layout)
            self._chunk_fn = jax.jit(
                chunk_fn,
                in_shardings=(self.shardings, seeds, None),
                out_shardings=(self.shardings, stats),
                donate_argnums=0,
            )
            self._init_fn = jax.jit(init_fn, out_shardings=self.shardings)
            # placed once: host arrays with a sharding that splits them are no jit input across processes
            self.chunk_hypers = put(self.hypers, jax.tree.map(lambda _: seeds, self.hypers))
        self._compiled = None

    def algorithm(self, hypers: dict[str, Any] | None = None) -> base.Algorithm:
        """The run's algorithm; with swept values (traced inside the program, or one member's numbers)
        the algorithm built from the config with those values set."""
        if not hypers:
            return self.algo
        algo_cfg = dataclasses.replace(self.cfg.algo, **hypers)
        swept = dataclasses.replace(self.cfg, algo=algo_cfg)
        with jax.ensure_compile_time_eval():  # what the constructor computes from constants stays concrete
            return selfplay.wrap(base.get(self.cfg.algo.name).factory, swept, self.env, self.env_params, self.agents)

    def member_hypers(self, member: int) -> dict[str, float]:
        """The swept algorithm values of one member, as numbers ({} without an algorithm sweep)."""
        return {name: float(values[member * self.cfg.num_seeds]) for name, values in self.hypers.items()}

    def guarded_update(self, runner: Any, hypers: dict[str, Any] | None = None) -> tuple[Any, UpdateStats]:
        """The algorithm's update, its stats' `finite` flag also covering the parameters it leaves.

        One reduction over the parameters per update, a small share even of a CartPole PPO update's time.
        """
        algo = self.algorithm(hypers)
        runner, stats = algo.update(runner)
        learned = stats.finite if stats.finite is not None else all_finite(stats.learner)
        return runner, stats.replace(finite=learned & all_finite(algo.policy_params(runner)))

    def policy(self, greedy: bool = True, member: int = 0) -> base.PolicyFn:
        """The algorithm's policy (`Algorithm.policy`) with a sweep member's values, traced at the run's matmul
        precision wherever it is jitted."""
        return with_matmul_precision(self.cfg.precision, self.algorithm(self.member_hypers(member)).policy(greedy))

    def scores(self, member: int = 0) -> Any:
        """The algorithm's `action_scores` (logits or Q-values) with a sweep member's values, at the run's matmul
        precision: what an exported policy computes."""
        return with_matmul_precision(self.cfg.precision, self.algorithm(self.member_hypers(member)).action_scores())

    def readout(self, member: int = 0) -> Any:
        """The algorithm's `readout` (action probabilities or Q-values, and the value) with a sweep member's
        values, at the run's matmul precision."""
        return with_matmul_precision(self.cfg.precision, self.algorithm(self.member_hypers(member)).readout())

    def check_memory(self, device: Any) -> None:
        """ConfigError when the algorithm's large allocations for all seeds exceed the device's free memory."""
        from jaxrl.run.devices import check_fits

        share = 1 if self.layout is None else self.layout.size  # each device holds its seeds' and envs' share
        for block in self.algo.memory():
            seeds = self.population
            what = f"{block.what} x {seeds} seeds" if seeds > 1 else block.what
            if share > 1:
                what += f", split over {share} devices"
            check_fits(block.nbytes * seeds // share, device, what, f"{block.setting} (or num_seeds)")

    def seed_keys(self) -> np.ndarray:
        """One key per entry of the seed axis, as raw key data: fold_in(key(seed), i) for seed i of every member."""
        base = jax.random.key(self.cfg.seed)
        seeds = np.tile(np.arange(self.cfg.num_seeds), self.sweep.size)
        return np.asarray(jax.random.key_data(jax.vmap(lambda i: jax.random.fold_in(base, i))(seeds)))

    def init_args(self) -> tuple[Any, ...]:
        """The compiled init's inputs: host arrays only (a multi-host program takes no process-local device arrays)."""
        return self.seed_keys(), self.hypers, self.start_params

    def abstract_runner(self) -> Any:
        """Shapes and dtypes of the runner of all seeds (nothing computed)."""
        return jax.eval_shape(self._init_fn, *self.init_args())

    def compile(self, runner: Any = None) -> tuple[Any, float]:
        """The runner (fresh unless given, e.g. restored) and the seconds spent compiling init and one chunk.

        A fresh run's init compiles on another thread while the chunk is traced and compiled
        against its output shapes, so a start waits for the longer of the two, not for both.
        """
        t0 = time.perf_counter()
        init = None
        if runner is None:
            args = self.init_args()
            init, abstract = compile_aside(self._init_fn, *args)
        else:
            runner = abstract = put(runner, self.shardings)
        self._compiled = compile_jit(self._chunk_fn, abstract, self.chunk_hypers, np.int32(self.chunk))
        if init is not None:
            runner = init.result()(*args)
        jax.block_until_ready(runner)
        return runner, time.perf_counter() - t0

    def with_env_params(self, runner: Any, params: Any) -> Any:
        """The runner with every seed's envs switched to `params` (traced `EnvParams`); the fields a sweep
        sets keep each member's own values."""
        stacked = jax.tree.map(lambda x: np.broadcast_to(x, (self.population, *x.shape)).copy(), params)
        if self.swept_env_fields:
            stacked = stacked.replace(**{f: getattr(self.start_params, f) for f in self.swept_env_fields})
        if self.shardings is not None:
            stacked = put(stacked, self.shardings.envs.params)
        return runner.replace(envs=runner.envs.replace(params=stacked))

    def dispatch(self, runner: Any, active: int) -> tuple[Any, UpdateStats]:
        """Start `active` updates of every seed; returns at once with the runner and stats to come
        (jax's asynchronous dispatch). The runner passed in is donated: do not use it again."""
        return self._compiled(runner, self.chunk_hypers, np.int32(active))

    @staticmethod
    def fetch(stats: UpdateStats, active: int) -> UpdateStats:
        """A dispatched chunk's stats on the host as (seeds, active) arrays; waits for the chunk."""
        stats = jax.device_get(stats)
        return jax.tree.map(lambda v: np.asarray(v)[:, :active], stats)

    def run_chunk(self, runner: Any, active: int) -> tuple[Any, UpdateStats]:
        """`active` updates of every seed, waited for; stats on the host as (seeds, active) arrays."""
        runner, stats = self.dispatch(runner, active)
        return runner, self.fetch(stats, active)


def first_non_finite(stats: UpdateStats) -> tuple[int, str] | None:
    """(index of the first update whose `finite` flag is down, in any seed; what was not finite) or None.

    What: the first learner figure that is NaN or inf in that update, else "parameters".
    """
    bad = ~np.asarray(stats.finite, bool)  # (seeds, active)
    if not bad.any():
        return None
    index = int(np.argmax(bad.any(axis=0)))
    seeds = bad[:, index]
    losses_first = sorted(stats.learner, key=lambda k: ("loss" not in k, k != "grad_norm"))
    for name in losses_first:
        values = stats.learner[name]
        if not np.isfinite(np.asarray(values)[seeds, index]).all():
            return index, name
    return index, "parameters"


@dataclasses.dataclass
class RunProgress:
    """Host-side bookkeeping of a run, saved in every checkpoint's meta."""

    done_updates: int = 0
    train_s: float = 0.0
    compile_s: float = 0.0  # summed over this run's processes
    history: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # per chunk: env_steps, per-seed sums
    run_id: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex[:12])  # kept across resumes

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> RunProgress:
        run_id = meta.get("run_id") or uuid.uuid4().hex[:12]  # checkpoints before run ids had none
        return cls(meta["done_updates"], meta["train_s"], meta["compile_s"], meta["history"], run_id)


@dataclasses.dataclass
class Plan:
    """A chunk about to be dispatched, as `Hook.before_chunk` may shape it."""

    start: int  # updates done before it
    active: int  # updates it runs (a hook may cut it short)
    phase: Any = None  # the curriculum phase it runs in (None without a curriculum)


@dataclasses.dataclass
class Chunk:
    """One chunk as the hooks see it after it ran."""

    active: int  # updates run
    seconds: float  # wall time it kept the device busy (from its start or the previous chunk's end)
    env_steps: int  # env steps per seed after it
    sps: float  # env steps per second, all seeds
    stats: UpdateStats  # (seeds, active) host arrays
    phase: Any = None  # the curriculum phase it ran in


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
    stop_requested: bool = False  # finish the chunks dispatched, save, end (agreed by every process of a run)
    stop_signals: int = 0  # Ctrl-Cs this process received (`jaxrl.run.hooks.StopSignal`)
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

    def before_chunk(self, ctx: RunContext, runner: Any, plan: Plan) -> Any:
        """Before a chunk is dispatched: may change the runner (e.g. env params) and the plan; returns the runner.

        With a chunk in flight this runs while that chunk computes, so `ctx.progress` may not
        have reached `plan.start` yet.
        """
        return runner

    def needs_runner(self, ctx: RunContext, done_updates: int) -> bool:
        """Whether `after_chunk` of the chunk ending at `done_updates` needs the runner (e.g. to save it).

        The next chunk is then dispatched only after that; otherwise it is dispatched first, so
        the device never waits on host work, and `after_chunk` gets `runner=None`.
        """
        return False

    def after_chunk(self, ctx: RunContext, runner: Any, chunk: Chunk) -> None:
        """After every chunk; `runner` is None unless a hook's `needs_runner` asked for it."""

    def end(self, ctx: RunContext, runner: Any) -> None:
        """After the last chunk, or after a stop request (not after an error)."""

    def close(self, ctx: RunContext) -> None:
        """Always, last: release files and threads."""


@dataclasses.dataclass
class InFlight:
    """A dispatched chunk: its runner and stats still being computed."""

    plan: Plan
    runner: Any
    stats: UpdateStats
    dispatched: float  # perf_counter when dispatched


def dispatch_next(ctx: RunContext, runner: Any, hooks: list[Hook], start: int) -> InFlight | None:
    """Plan the chunk starting after `start` updates with the hooks and dispatch it (None: the run is done)."""
    program = ctx.program
    if start >= program.num_updates or ctx.stop_requested:
        return None
    plan = Plan(start, min(program.chunk, program.num_updates - start))
    for hook in hooks:
        runner = hook.before_chunk(ctx, runner, plan)
    runner, stats = program.dispatch(runner, plan.active)
    return InFlight(plan, runner, stats, time.perf_counter())


def host_loop(ctx: RunContext, runner: Any, hooks: list[Hook]) -> Any:
    """Run chunks until the run is done or a stop is requested; every host job is a hook's.

    One chunk is kept queued behind the one computing, so the host's work for a chunk (metrics,
    progress, loggers) overlaps the next chunk instead of leaving the device idle: with
    PureJaxRL's CartPole settings 50 chunks of 20 updates each cost 5% in idle gaps and the
    slower restart after them. A chunk after which a hook needs the runner (a checkpoint)
    is waited for first.
    """
    program = ctx.program
    flight = dispatch_next(ctx, runner, hooks, ctx.progress.done_updates)
    last_end = time.perf_counter()
    while flight is not None:
        ends_at = flight.plan.start + flight.plan.active
        # A distributed run's processes stop together: each one's Ctrl-C becomes everyone's here, and only here.
        ctx.stop_requested = ctx.stop_requested or any_process(ctx.stop_signals > 0)
        asked = [hook.needs_runner(ctx, ends_at) for hook in hooks]  # every hook: a checkpoint's decision is collective
        hold = any(asked)
        ahead = None if hold else dispatch_next(ctx, flight.runner, hooks, ends_at)
        stats = program.fetch(flight.stats, flight.plan.active)
        stop_if_non_finite(ctx, flight.plan, stats)
        now = time.perf_counter()
        seconds = now - max(flight.dispatched, last_end)
        last_end = now
        ctx.progress.train_s += seconds
        ctx.progress.done_updates = ends_at
        sps = flight.plan.active * program.steps_per_update * program.population / seconds
        chunk = Chunk(flight.plan.active, seconds, ctx.env_steps, sps, stats, flight.plan.phase)
        held = None if ahead is not None else flight.runner
        for hook in hooks:
            hook.after_chunk(ctx, held, chunk)
        if ahead is not None:
            runner, flight = ahead.runner, ahead
        else:
            runner = flight.runner
            flight = dispatch_next(ctx, runner, hooks, ends_at)
    ctx.interrupted = ctx.stop_requested and not ctx.finished
    return runner


def stop_if_non_finite(ctx: RunContext, plan: Plan, stats: UpdateStats) -> None:
    """NonFiniteError when an update of this chunk left a non-finite loss, gradient norm or parameter.

    Raised before any hook sees the chunk, so its state is neither checkpointed nor logged; the run's
    caller adds the last good checkpoint to the message once the writes in flight have ended.
    """
    found = first_non_finite(stats)
    if found is None:
        return
    index, what = found
    update = plan.start + index + 1
    steps = update * ctx.program.steps_per_update
    raise NonFiniteError(f"non-finite {what} at update {update} (env steps {steps:,})")
