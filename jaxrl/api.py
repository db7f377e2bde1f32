"""The Python API: `jaxrl.train(...) -> Run`, `jaxrl.load(run_dir) -> Run`. The CLI is a thin layer over it.

    run = jaxrl.train(env="snake", total_timesteps=2e6, seed=1, **{"algo.lr": 3e-4})
    run.summary["final_score"], run.metrics, run.evaluate(episodes=100), run.replay()
    run = jaxrl.train(resume=run.run_dir, total_timesteps=4e6)   # continue it

Keyword arguments use the command line's keys: `num_envs=512`, `**{"algo.lr": 3e-4}`, or nested
dicts `algo={"lr": 3e-4}` (a dict's `name` picks the group: `env={"name": "grid", "num_agents": 4}`).
They are merged into the typed config as Python values (Hydra composes only the packaged defaults the
group names pick); `jaxrl.make_config(...)` is that config alone. Bad arguments raise `jaxrl.ConfigError`
with the line the CLI prints. Building and running the config is `jaxrl.build`'s.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jaxrl.config.schema import ConfigError, TrainConfig


def compose(
    settings: list[str] | dict[str, Any], resume: str | Path | None = None
) -> tuple[TrainConfig, Any, Path | None]:
    """(typed config, resolved config, resume dir) of a new run or of `resume=RUN_DIR`, from command-line
    overrides (`["env=snake", "algo.lr=3e-4"]`) or the API's keyword settings (`{"env": "snake", "algo.lr": 3e-4}`,
    merged as Python values); ConfigError (one line) otherwise. The one way in for the CLI and the API."""
    from jaxrl.config.compose import split_settings  # imports nothing of jax
    from jaxrl.scale.distributed import join_early

    run_dir = None if resume is None else Path(resume).expanduser()
    if isinstance(settings, dict):
        choices, flat = split_settings(settings)
        settings = {**choices, **flat}
    join_early(settings, None if run_dir is None else run_dir / "config.yaml")  # before jax starts (envs, gymnax)
    from jaxrl.build import check_same_state
    from jaxrl.config.compose import compose_config, resume_config, settings_config

    if run_dir is None:
        cfg, resolved = settings_config(settings) if isinstance(settings, dict) else compose_config(settings)
        return cfg, resolved, None
    cfg, resolved, saved = resume_config(run_dir, settings)
    if settings:
        overrides = [f"{k}={v}" for k, v in settings.items()] if isinstance(settings, dict) else settings
        check_same_state(saved, cfg, overrides)
    return cfg, resolved, run_dir


def make_config(**settings: Any) -> TrainConfig:
    """The typed, checked config of these settings (as `train` takes them), without training:
    `jaxrl.build.program(jaxrl.make_config(env="snake", num_envs=64), chunk=10)` is its compiled program."""
    return compose(settings)[0]


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
    from jaxrl import build

    named = {"env": env, "algo": algo, "total_timesteps": total_timesteps, "seed": seed, "run_dir": run_dir}
    settings = {k: v for k, v in named.items() if v is not None} | overrides
    cfg, resolved, resume_dir = compose(settings, resume)
    ctx = build.train(cfg, resolved, resume_dir, hooks)
    return Run(ctx.run_dir, cfg)


def load(run_dir: str | Path) -> Run:
    """Reopen a finished or interrupted run, or a shelf agent as `pretrained:NAME` (ConfigError when it is
    neither)."""
    from jaxrl.config.compose import resume_config
    from jaxrl.trained.shelf import is_pretrained

    if is_pretrained(str(run_dir)):
        return PretrainedRun(str(run_dir))

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
                f"{path} is damaged ({type(e).__name__}: {str(e)[:120]});"
                " its run's metrics.csv and checkpoints are unaffected"
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
        from jaxrl import build
        from jaxrl.run.checkpoint import Checkpointer, CheckpointError

        program = build.program(self.config)
        checkpoints = Checkpointer(self.run_dir / "checkpoints", reader=True)
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
        from jaxrl.trained.evaluation import evaluate

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
        return Path(self._draw("gif", path, episodes, greedy, fps, member)["replay"])

    def replay_html(
        self,
        path: str | Path | None = None,
        episodes: int = 100,
        greedy: bool = True,
        fps: int = 10,
        member: int | None = None,
    ) -> Path:
        """The HTML replay of the best of `episodes` episodes per seed (default RUN_DIR/replay.html, with replay.gif
        and replay.json beside it): one self-contained page with play, pause, a scrubber and speed, which a
        notebook shows with `IPython.display.HTML(path.read_text())`."""
        return Path(self._draw("html", path, episodes, greedy, fps, member)["replay_html"])

    def _draw(
        self, render: str, path: str | Path | None, episodes: int, greedy: bool, fps: int, member: int | None
    ) -> dict:
        from jaxrl.config.environment import make_env
        from jaxrl.envs.base import offers
        from jaxrl.trained.evaluation import evaluate

        if not offers(make_env(self.config)[0], "render_rgb"):  # before anything is written
            raise ConfigError(f"{self.config.env.name} does not draw itself as a picture; no replay")
        return evaluate(self, episodes=episodes, greedy=greedy, render=render, fps=fps, out=path, member=member)

    def play_against(self, other: Any, episodes: int = 1000, seed: int = 0, step: int | None = None) -> dict:
        """Head-to-head games at this run's env's table of its greedy policy against `other` (a Run, a run
        directory, `PATH@STEP`, or one of the env's bots: the arena's "greedy" | "space" | "lookahead" |
        "random_safe"), seats rotated: {"a_wins", "b_wins", "draws", "a_score", "a_placement", "b_placement",
        ...}, this run as `a`."""
        from jaxrl.trained import headtohead

        me = headtohead.player(f"{self.run_dir}@{step}" if step is not None else self, load, flag="run")
        return headtohead.play_pair(me, headtohead.player(other, load), episodes, seed)

    def env(self) -> tuple[Any, Any]:
        """(env, env_params) as the run's config builds them: the settings it trained with (a
        curriculum's phases aside), so `run.policy` can act in it (an arena's `bot_policy` run attached)."""
        from jaxrl.config.environment import make_env
        from jaxrl.trained.frozen import with_frozen_bots

        env, env_params = make_env(self.config)
        return with_frozen_bots(env), env_params

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

        from jaxrl.trained.evaluation import pick_member

        _, runner, program = self.restore(step)
        seeds, members = self.config.num_seeds, program.sweep.size
        member = pick_member(self, program, member) if member is None else member
        if not 0 <= seed < seeds or not 0 <= member < members:
            raise ConfigError(
                f"seed={seed}, member={member} is invalid: the run has seeds 0..{seeds - 1}, members 0..{members - 1}"
            )
        params = jax.tree.map(lambda x: x[member * seeds + seed], program.algo.policy_params(runner))
        return Policy(jax.jit(program.policy(greedy, member)), params, program.algo.initial_carry)


class PretrainedRun(Run):
    """A shelf agent as a `Run`: `.policy`, `.evaluate()`, `.replay()`, `.play_against()`, `.figures`. What it
    writes (eval.json, replay.gif) goes to `runs/pretrained-<name>/` under the current folder unless told where."""

    def __init__(self, spec: str):
        from jaxrl.trained.shelf import PREFIX, ShelfAgent

        self.agent = ShelfAgent(spec if spec.startswith(PREFIX) else PREFIX + spec)
        self.name = self.agent.name
        self.spec = PREFIX + self.name  # how it is named in tables (head-to-head games, ratings)
        super().__init__(Path("runs") / f"pretrained-{self.name}", self.agent.config)

    def __repr__(self) -> str:
        return f"PretrainedRun({self.name!r}, env={self.config.env.name}, algo={self.config.algo.name})"

    @property
    def figures(self) -> dict[str, Any]:
        """What it measured when it was put on the shelf."""
        return self.agent.figures

    @property
    def summary(self) -> dict[str, Any]:
        return {"pretrained": self.name, **self.figures, **(self.agent.meta.get("trained") or {})}

    @property
    def metrics(self) -> Any:
        raise ConfigError(f"pretrained:{self.name} keeps its policy, not its training curve")

    def restore(self, step: int | None = None) -> tuple[int, Any, Any]:
        return self.agent.restore(step)


def pretrained(name: str) -> PretrainedRun:
    """The shelf agent `name` (`python -m jaxrl.pretrained list`); ConfigError, one line, when there is none."""
    return PretrainedRun(name)


def _number(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text
