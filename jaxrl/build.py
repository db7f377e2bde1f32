"""From a typed config to a run: the one builder the CLI, the Python API, bench and tests call.

    program = build.program(cfg, chunk=10)    # env and algorithm from the config, compiled on first use
    ctx = build.train(cfg, resolved)          # every check, the run directory, checkpoints, hooks, the loop

`program` is the device side alone (what bench times and tests probe); `prepare` adds the devices,
the layout, the memory check and the curriculum; `train` adds the run directory, the hooks and
the host loop, and returns the run's `RunContext`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from jaxrl.config.schema import ConfigError, TrainConfig


def program(cfg: TrainConfig, chunk: int | None = None, layout: Any = None, env: tuple[Any, Any] | None = None) -> Any:
    """The `Program` of a typed config: its env (or `env=(env, env_params)` given), its algorithm, compiled on
    first use in chunks of `chunk` updates (default: the config's num_chunks), over `layout`'s devices."""
    from jaxrl.config.environment import make_env
    from jaxrl.run.driver import Program
    from jaxrl.trained.frozen import league_agents, with_frozen_bots

    env, env_params = make_env(cfg) if env is None else env
    agents = lambda league: league_agents(env.name, tuple(league))  # loaded when a league's step is traced
    return Program(cfg, with_frozen_bots(env), env_params, chunk=chunk, layout=layout, agents=agents)


def default_run_dir(cfg: TrainConfig) -> Path:
    from jaxrl.run.rundir import fresh_default

    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return fresh_default(Path("runs") / f"{cfg.env.name}-{cfg.algo.name}-{stamp}")


def check_same_state(saved: TrainConfig, cfg: TrainConfig, overrides: list[str]) -> None:
    """ConfigError when resume overrides would change the shapes or dtypes of the saved training state."""
    import jax

    shapes = lambda c: jax.tree.map(lambda a: (a.shape, str(a.dtype)), program(c).abstract_runner())
    before, after = shapes(saved), shapes(cfg)
    if jax.tree.structure(before) != jax.tree.structure(after) or jax.tree.leaves(before) != jax.tree.leaves(after):
        raise ConfigError(
            f"{' '.join(overrides)} would change the shapes of the saved training state; a resumed run keeps them"
            " (start a new run to change them)"
        )


def prepare(cfg: TrainConfig) -> tuple[Any, Any, Any]:
    """(devices, program, curriculum) for a config, every check done before anything is written."""
    from jaxrl.config.curriculum import for_config
    from jaxrl.config.schema import logger_names
    from jaxrl.run.compiling import use_persistent_cache
    from jaxrl.run.devices import own, select_device
    from jaxrl.run.loggers import check_loggers
    from jaxrl.scale.distributed import agree_error
    from jaxrl.scale.mesh import layout

    try:
        check_loggers(logger_names(cfg.logger))
    except ImportError as e:
        raise ConfigError(str(e)) from None
    devices = select_device(cfg.device)
    lay = layout(cfg, devices)  # ConfigError when the device count does not fit the run
    if cfg.compile_cache:
        use_persistent_cache(cfg.compile_cache)  # ConfigError when it is not a usable directory
    ready = program(cfg, layout=lay)
    if cfg.opponents == "selfplay":  # the league's frozen agents load now: a bad one stops the run unwritten
        from jaxrl.trained.frozen import league_agents

        league_agents(ready.env.name, tuple(cfg.selfplay.league))
    agree_error(lambda: ready.check_memory(own(devices)))  # each host checks its own; all stop if one must
    curriculum = for_config(cfg, ready.env, ready.env_params, ready.steps_per_update)
    check_phases(curriculum, ready)
    return devices, ready, curriculum


def check_phases(curriculum: Any, ready: Any) -> None:
    """ConfigError when a curriculum phase sets an env field that a sweep sets per member."""
    for phase in curriculum.phases if curriculum is not None else []:
        clash = [f for f in ready.swept_env_fields if f in phase.overrides]
        if clash:
            raise ConfigError(
                f"curriculum phase {phase.index} sets env.{clash[0]}, which the sweep sets per member"
                f" ({' '.join(ready.sweep.keys)}): a phase cannot change it"
            )


def start(cfg: TrainConfig, resolved: Any, resume: Path | None) -> tuple[Any, Any, Any]:
    """(context, runner, checkpointer) of a fresh or resumed run, compiled and announced."""
    from omegaconf import OmegaConf

    from jaxrl.config.formats import FORMAT, run_format, write_run_file
    from jaxrl.run.checkpoint import Checkpointer
    from jaxrl.run.driver import RunProgress
    from jaxrl.run.rundir import check_writable, claim, move_aside, refuse_taken
    from jaxrl.scale.distributed import agree_error, barrier, broadcast_text, is_primary
    from jaxrl.trained.upgrade import upgrade_run

    primary = is_primary()  # process 0 (always, on one host): the one that writes the run's files
    run_dir = resume or (Path(cfg.run_dir).expanduser() if cfg.run_dir else None)
    if run_dir is None:  # named by the time: process 0's name for every process
        run_dir = Path(broadcast_text(str(default_run_dir(cfg)) if primary else ""))
    devices, program, curriculum = prepare(cfg)  # every check of the config first
    if resume is None:
        refuse_taken(run_dir, cfg.overwrite)
    barrier("jaxrl-run-dir-checked")  # every process has looked before process 0 claims it
    device = devices[0]
    config_text = OmegaConf.to_yaml(portable(resolved), resolve=True)  # with any resume overrides

    def take() -> None:  # process 0's job; its refusal is every process's (jaxrl.scale.distributed.agree_error)
        moved = move_aside(run_dir) if resume is None and cfg.overwrite else None
        if moved is not None:
            print(f"overwrite=true: the run that was in {run_dir} is now in {moved}", flush=True)
        check_writable(run_dir)
        if resume is None:
            claim(run_dir, config_text)  # atomic: two starts in one run_dir cannot both get here
            write_run_file(run_dir)
        elif run_format(run_dir) != FORMAT:  # the older checkpoints stay beside the migrated ones
            upgrade_run(run_dir, say=print)

    agree_error(take if primary else lambda: None)
    progress = RunProgress()
    checkpoints = Checkpointer(
        run_dir / "checkpoints", keep=cfg.checkpoint.keep, run_id=progress.run_id, shardings=program.shardings
    )
    try:
        ctx, runner = _compile(cfg, resolved, program, run_dir, device, devices, checkpoints, progress, resume)
    except BaseException:
        checkpoints.close()
        raise
    if resume is not None and primary:
        (run_dir / "config.yaml").write_text(config_text)
    return ctx, runner, (checkpoints, curriculum)


def portable(resolved: Any) -> Any:
    """The resolved config as config.yaml keeps it: without where and how a distributed run's processes
    met (`coordinator_address`, `num_processes`, `process_id`), which belong to one launch (a resume on
    another cluster, or on one host with distributed=false, gives its own)."""
    from omegaconf import OmegaConf, open_dict

    launch = ("coordinator_address", "num_processes", "process_id")
    if all(resolved.get(k) is None for k in launch):
        return resolved
    copy = OmegaConf.create(OmegaConf.to_container(resolved))
    with open_dict(copy):
        for key in launch:
            copy[key] = None
    return copy


def _compile(cfg, resolved, program, run_dir, device, devices, checkpoints, progress, resume) -> tuple[Any, Any]:
    """(context, runner) of a fresh or resumed run: restored when resuming, compiled, announced."""
    from jaxrl.run.driver import RunContext, RunProgress
    from jaxrl.scale.distributed import is_primary

    say = print if is_primary() else (lambda *args, **kwargs: None)  # process 0 speaks for a distributed run
    used = "" if program.layout is None else f"; using {program.layout.describe()}"
    say(f"device: {device.platform} x{len(devices)} ({device.device_kind}){used}", flush=True)
    say(
        f"env: {cfg.env.name} | algo: {cfg.algo.name} | seeds: {cfg.num_seeds} | envs/seed: {cfg.num_envs}"
        f" | run dir: {run_dir}",
        flush=True,
    )
    if program.sweep.keys:
        say(
            f"sweep: {program.sweep.size} members x {cfg.num_seeds} seeds in one program"
            f" ({', '.join(program.sweep.keys)})"
        )
    runner = None
    if resume is not None:
        warn = lambda line: print(line, file=sys.stderr, flush=True)
        step, runner, meta = checkpoints.restore_latest(program.abstract_runner(), warn=warn)
        progress = RunProgress.from_meta(meta)
        checkpoints.run_id = progress.run_id
        say(f"resumed from {checkpoints.path(step)} ({step:,} env steps per seed)", flush=True)
    runner, compile_s = program.compile(runner)
    progress.compile_s += compile_s
    total = program.num_updates * program.steps_per_update
    rounded = (
        ""
        if total == int(cfg.total_timesteps)
        else f" ({total:,} env steps: total_timesteps rounded down to whole updates)"
    )
    say(
        f"compiled in {compile_s:.1f}s; {program.num_updates} updates in chunks of {program.chunk}{rounded}", flush=True
    )
    ctx = RunContext(cfg, resolved, program, run_dir, progress, device=device, resumed=resume is not None)
    if resume is not None:
        ctx.saved = checkpoints.path(step)  # the last good checkpoint until this process saves one
    return ctx, runner


def train(cfg: TrainConfig, resolved: Any, resume: Path | None = None, hooks: Sequence[Any] = ()) -> Any:
    """Train (or resume) as configured, writing the run directory; returns the run's `RunContext`."""
    ctx, runner, (checkpoints, curriculum) = start(cfg, resolved, resume)
    return drive(ctx, runner, hook_chain(curriculum, checkpoints, hooks))


def hook_chain(curriculum: Any, checkpoints: Any, extra: Sequence[Any] = ()) -> list[Any]:
    """A run's hooks in calling order: the curriculum, metrics (process 0), checkpoints, the caller's own
    hooks, the summary (process 0); a distributed run's other processes write no logs or summary."""
    from jaxrl.run import hooks as jobs
    from jaxrl.scale.distributed import is_primary

    schedule = [jobs.CurriculumHook(curriculum)] if curriculum is not None else []
    writes = is_primary()
    return [
        *schedule,
        *([jobs.MetricsHook(schedule[0] if schedule else None)] if writes else []),
        jobs.CheckpointHook(checkpoints),
        *extra,
        *([jobs.SummaryHook()] if writes else []),
    ]


def drive(ctx: Any, runner: Any, chain: list[Any]) -> Any:
    """Run the host loop through `chain` to the end (or a stop), closing every hook; returns `ctx`."""
    from jaxrl.errors import NonFiniteError
    from jaxrl.run import hooks as jobs
    from jaxrl.run.driver import host_loop

    broken = None
    try:
        for hook in chain:
            hook.start(ctx)
        with jobs.StopSignal(ctx):
            runner = host_loop(ctx, runner, chain)
        for hook in chain:
            hook.end(ctx, runner)
    except NonFiniteError as e:
        broken = e
    finally:
        failed = None
        for hook in chain:  # each is closed; the checkpoint write in flight (of a good state) ends here
            try:
                hook.close(ctx)
            except Exception as e:  # noqa: BLE001  (raised after every hook is closed)
                failed = failed or e
        if failed is not None and broken is None and sys.exc_info()[0] is None:  # never hide the first error
            raise failed
    if broken is not None:
        good = ctx.saved if ctx.saved is not None else "none (the run had saved none yet)"
        raise NonFiniteError(f"{broken}; last good checkpoint: {good}") from None
    return ctx
