"""The Python API: `jaxrl.train(...) -> Run`, `jaxrl.load(run_dir) -> Run`. The CLI is a thin layer over it.

    run = jaxrl.train(env="snake", total_timesteps=2e6, seed=1, **{"algo.lr": 3e-4})
    run.summary["final_score"], run.metrics, run.evaluate(episodes=100), run.replay()
    run = jaxrl.train(resume=run.run_dir, total_timesteps=4e6)   # continue it

Keyword arguments use the command line's keys: `num_envs=512`, `**{"algo.lr": 3e-4}`, or nested
dicts `algo={"lr": 3e-4}` (a dict's `name` picks the group: `env={"name": "grid", "num_agents": 4}`).
Bad arguments raise `jaxrl.ConfigError` with the line the CLI prints.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import re
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from jaxrl.config.schema import ConfigError, TrainConfig

GROUPS = ("env", "algo", "preset", "experiment")  # keys whose string value picks a config group


# -- keyword arguments as command-line overrides ------------------------------------------------


def _value(value: Any) -> str:
    """A Python value in Hydra's override grammar."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, str):
        if re.fullmatch(r"[A-Za-z0-9_./:+\-~]+", value):
            return value
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, Sequence):
        return "[" + ",".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_value(v)}" for k, v in value.items()) + "}"
    raise ConfigError(f"{value!r} cannot be a setting: use numbers, strings, booleans, lists or dicts")


def to_overrides(settings: dict[str, Any]) -> list[str]:
    """`{"num_envs": 8, "algo": {"lr": 3e-4}, "algo.n_step": 3}` -> ["num_envs=8", "algo.lr=0.0003", "algo.n_step=3"]."""
    out: list[str] = []
    for key, value in settings.items():
        if key == "curriculum" and isinstance(value, str):  # already in the command line's grammar
            out.append(f"curriculum={value}")
        elif isinstance(value, dict) and key != "curriculum":
            nested = dict(value)
            if key in GROUPS and "name" in nested:
                out.append(f"{key}={_value(nested.pop('name'))}")
            out += to_overrides({f"{key}.{k}": v for k, v in nested.items()})
        else:
            out.append(f"{key}={_value(value)}")
    return out


# -- a training run ---------------------------------------------------------------------------


def default_run_dir(cfg: TrainConfig) -> Path:
    from jaxrl.run.rundir import fresh_default

    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return fresh_default(Path("runs") / f"{cfg.env.name}-{cfg.algo.name}-{stamp}")


def check_same_state(saved: TrainConfig, cfg: TrainConfig, overrides: list[str]) -> None:
    """ConfigError when resume overrides would change the shapes or dtypes of the saved training state."""
    import jax

    from jaxrl.config.schema import make_env
    from jaxrl.run.driver import Program

    shapes = lambda c: jax.tree.map(lambda a: (a.shape, str(a.dtype)), Program(c, *make_env(c)).abstract_runner())
    before, after = shapes(saved), shapes(cfg)
    if jax.tree.structure(before) != jax.tree.structure(after) or jax.tree.leaves(before) != jax.tree.leaves(after):
        raise ConfigError(
            f"{' '.join(overrides)} would change the shapes of the saved training state; a resumed run keeps them"
            " (start a new run to change them)"
        )


def _prepare(cfg: TrainConfig) -> tuple[Any, Any, Any]:
    """(devices, program, curriculum) for a config, every check done before anything is written."""

    from jaxrl.config.curriculum import for_config
    from jaxrl.config.schema import logger_names, make_env
    from jaxrl.run.compiling import use_persistent_cache
    from jaxrl.run.devices import select_device
    from jaxrl.run.driver import Program
    from jaxrl.run.loggers import check_loggers

    try:
        check_loggers(logger_names(cfg.logger))
    except ImportError as e:
        raise ConfigError(str(e)) from None
    from jaxrl.scale.mesh import layout

    devices = select_device(cfg.device)
    lay = layout(cfg, devices)  # ConfigError when the device count does not fit the run
    if cfg.compile_cache:
        use_persistent_cache(cfg.compile_cache)  # ConfigError when it is not a usable directory
    env, env_params = make_env(cfg)
    program = Program(cfg, env, env_params, layout=lay)
    from jaxrl.run.devices import own
    from jaxrl.scale.distributed import agree_error

    agree_error(lambda: program.check_memory(own(devices)))  # each host checks its own; all stop if one must
    curriculum = for_config(cfg, env, env_params, program.steps_per_update)
    for phase in curriculum.phases if curriculum is not None else []:
        clash = [f for f in program.swept_env_fields if f in phase.overrides]
        if clash:
            raise ConfigError(
                f"curriculum phase {phase.index} sets env.{clash[0]}, which the sweep sets per member"
                f" ({' '.join(program.sweep.keys)}): a phase cannot change it"
            )
    return devices, program, curriculum


def _start(cfg: TrainConfig, resolved: Any, resume: Path | None) -> tuple[Any, Any, Any]:
    """(context, runner, checkpointer) of a fresh or resumed run, compiled and announced."""
    from omegaconf import OmegaConf

    from jaxrl.run.checkpoint import Checkpointer
    from jaxrl.run.driver import RunProgress
    from jaxrl.run.rundir import check_writable, claim, move_aside, refuse_taken
    from jaxrl.scale.distributed import agree_error, barrier, broadcast_text, is_primary

    primary = is_primary()  # process 0 (always, on one host): the one that writes the run's files
    run_dir = resume or (Path(cfg.run_dir).expanduser() if cfg.run_dir else None)
    if run_dir is None:  # named by the time: process 0's name for every process
        run_dir = Path(broadcast_text(str(default_run_dir(cfg)) if primary else ""))
    devices, program, curriculum = _prepare(cfg)  # every check of the config first
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
            f"sweep: {program.sweep.size} members x {cfg.num_seeds} seeds in one program ({', '.join(program.sweep.keys)})"
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


def run_training(cfg: TrainConfig, resolved: Any, resume: Path | None = None, hooks: Sequence[Any] = ()) -> Any:
    """Train (or resume) as configured, writing the run directory; returns the run's `RunContext`."""
    from jaxrl.errors import NonFiniteError
    from jaxrl.run import hooks as jobs
    from jaxrl.run.driver import host_loop
    from jaxrl.scale.distributed import is_primary

    ctx, runner, (checkpoints, curriculum) = _start(cfg, resolved, resume)
    schedule = [jobs.CurriculumHook(curriculum)] if curriculum is not None else []
    writes = is_primary()  # a distributed run's other processes write no logs, metrics or summary
    chain = [
        *schedule,
        *([jobs.MetricsHook(schedule[0] if schedule else None)] if writes else []),
        jobs.CheckpointHook(checkpoints),
        *hooks,
        *([jobs.SummaryHook()] if writes else []),
    ]
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


def compose(overrides: list[str], resume: str | Path | None = None) -> tuple[TrainConfig, Any, Path | None]:
    """(typed config, resolved config, resume dir) for command-line overrides (`["env=snake", "algo.lr=3e-4"]`),
    of a new run or of `resume=RUN_DIR`; ConfigError (one line) otherwise."""
    from jaxrl.config.compose import compose_config, resume_config
    from jaxrl.scale.distributed import join_early

    run_dir = None if resume is None else Path(resume).expanduser()
    join_early(overrides, None if run_dir is None else run_dir / "config.yaml")  # before jax starts
    if run_dir is None:
        cfg, resolved = compose_config(overrides)
        return cfg, resolved, None
    cfg, resolved, saved = resume_config(run_dir, overrides)
    if overrides:
        check_same_state(saved, cfg, overrides)
    return cfg, resolved, run_dir


def train(
    env: str | dict[str, Any] | None = None,
    algo: str | dict[str, Any] | None = None,
    total_timesteps: float | None = None,
    seed: int | None = None,
    run_dir: str | Path | None = None,
    resume: str | Path | None = None,
    hooks: Sequence[Any] = (),
    **overrides: Any,
) -> Run:
    """Train an agent (or continue `resume=RUN_DIR`) and return its `Run`; settings as on the command line."""
    named = {"env": env, "algo": algo, "total_timesteps": total_timesteps, "seed": seed, "run_dir": run_dir}
    settings = {k: v for k, v in named.items() if v is not None} | overrides
    cfg, resolved, resume_dir = compose(to_overrides(settings), resume)
    ctx = run_training(cfg, resolved, resume_dir, hooks)
    return Run(ctx.run_dir, cfg)


def load(run_dir: str | Path) -> Run:
    """Reopen a finished or interrupted run (ConfigError when it is not a run directory)."""
    from jaxrl.config.compose import resume_config

    run_dir = Path(run_dir).expanduser()
    cfg, _, _ = resume_config(run_dir, [], flag="run_dir")
    return Run(run_dir, cfg)


# -- a run, reopened ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Policy:
    """A trained policy: `apply(params, carry, obs, key) -> (carry, action)`, jitted, with one seed's params."""

    apply: Callable[[Any, Any, Any, Any], tuple[Any, Any]]
    params: Any
    initial_carry: Callable[[int], Any]  # batch -> carry (None for feed-forward networks)

    def __call__(self, obs: Any, key: Any, carry: Any = None) -> tuple[Any, Any]:
        """(carry, actions) for a batch of observations."""
        return self.apply(self.params, carry, obs, key)


class Run:
    """A run directory: its config, summary, metrics, checkpoints, and evaluation of its policy."""

    def __init__(self, run_dir: str | Path, config: TrainConfig):
        self.run_dir = Path(run_dir)
        self.config = config  # the resolved, typed config
        self._restored: dict[Any, Any] = {}

    def __repr__(self) -> str:
        return f"Run({str(self.run_dir)!r}, env={self.config.env.name}, algo={self.config.algo.name})"

    @property
    def summary(self) -> dict[str, Any] | None:
        """summary.json (None while the run has not ended)."""
        path = self.run_dir / "summary.json"
        if not path.exists():
            return None
        try:
            return json.loads(path.read_text())
        except (ValueError, OSError) as e:
            raise ConfigError(
                f"{path} is damaged ({type(e).__name__}: {str(e)[:120]}); its run's metrics.csv and checkpoints are unaffected"
            ) from None

    @property
    def metrics(self) -> Any:
        """metrics.csv: a pandas DataFrame when pandas is installed, else a list of dicts of numbers."""
        path = self.run_dir / "metrics.csv"
        try:
            import pandas
        except ImportError:
            pandas = None
        if pandas is not None:
            return pandas.read_csv(path) if path.exists() else pandas.DataFrame()
        if not path.exists():
            return []
        with open(path, newline="") as f:
            return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]

    def restore(self, step: int | None = None) -> tuple[int, Any, Any]:
        """(step, runner of every seed, Program) of checkpoint `step` (default: the newest readable one)."""
        if step in self._restored:
            return self._restored[step]
        from jaxrl.config.schema import make_env
        from jaxrl.run.checkpoint import Checkpointer, CheckpointError
        from jaxrl.run.driver import Program

        program = Program(self.config, *make_env(self.config))
        checkpoints = Checkpointer(self.run_dir / "checkpoints")
        warn = lambda line: print(line, file=sys.stderr, flush=True)
        try:
            if step is None:
                found, runner, _ = checkpoints.restore_latest(program.abstract_runner(), warn=warn)
            else:
                if step not in checkpoints.steps():
                    have = ", ".join(map(str, checkpoints.steps())) or "none"
                    raise CheckpointError(f"step={step} has no checkpoint in {self.run_dir}; saved steps: {have}")
                found = step
                runner, _ = checkpoints.restore(step, program.abstract_runner())
        finally:
            checkpoints.close()
        self._restored[step] = (found, runner, program)
        return self._restored[step]

    @property
    def ranking(self) -> list[dict[str, Any]] | None:
        """A sweep's members (settings, final figures over their seeds), best final return first; None
        without a sweep or before the run has ended."""
        summary = self.summary
        return None if summary is None else summary.get("members")

    def evaluate(
        self,
        episodes: int = 100,
        greedy: bool = True,
        seed: int = 0,
        step: int | None = None,
        member: int | None = None,
    ) -> dict:
        """Play `episodes` per seed (of a sweep's `member`, default the best); the eval.json dict (also written).
        No replay is drawn."""
        from jaxrl.run.evaluation import evaluate

        return evaluate(self, episodes=episodes, greedy=greedy, seed=seed, step=step, render="none", member=member)

    def replay(
        self,
        path: str | Path | None = None,
        episodes: int = 100,
        greedy: bool = True,
        fps: int = 10,
        member: int | None = None,
    ) -> Path:
        """The GIF of the best of `episodes` episodes per seed (default RUN_DIR/replay.gif)."""
        from jaxrl.config.schema import make_env
        from jaxrl.run.evaluation import evaluate

        if not hasattr(make_env(self.config)[0], "render_rgb"):  # before anything is written
            raise ConfigError(f"{self.config.env.name} does not draw itself as a picture; no replay")
        result = evaluate(self, episodes=episodes, greedy=greedy, render="gif", fps=fps, out=path, member=member)
        return Path(result["replay"])

    def env(self) -> tuple[Any, Any]:
        """(env, env_params) as the run's config builds them: the settings it trained with (a
        curriculum's phases aside), so `run.policy` can act in it."""
        from jaxrl.config.schema import make_env

        return make_env(self.config)

    @property
    def policy(self) -> Policy:
        """The greedy policy of seed 0 (of a sweep's best member) at the newest checkpoint (see `policy_of`)."""
        return self.policy_of()

    def policy_of(
        self, seed: int = 0, greedy: bool = True, step: int | None = None, member: int | None = None
    ) -> Policy:
        """The policy of one seed (of a sweep's `member`, default the best as in `evaluate`) at a checkpoint:
        greedy, or acting as in training."""
        import jax

        from jaxrl.run.evaluation import pick_member

        _, runner, program = self.restore(step)
        seeds, members = self.config.num_seeds, program.sweep.size
        member = pick_member(self, program, member) if member is None else member
        if not 0 <= seed < seeds or not 0 <= member < members:
            raise ConfigError(
                f"seed={seed}, member={member} is invalid: the run has seeds 0..{seeds - 1}, members 0..{members - 1}"
            )
        params = jax.tree.map(lambda x: x[member * seeds + seed], program.algo.policy_params(runner))
        return Policy(jax.jit(program.policy(greedy, member)), params, program.algo.initial_carry)


def _number(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text
