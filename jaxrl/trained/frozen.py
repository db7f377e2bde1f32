"""Opponents from finished runs: `env.bot_policy=RUN_DIR` loads that run's greedy policy once and runs it on
device inside the env's step (`with_bot_policy`), beside the learner (to pit a new agent against last week's)."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

import jax

from jaxrl.envs.base import hook
from jaxrl.errors import ConfigError


def with_frozen_bots(env: Any) -> Any:
    """`env` with the greedy policy of its `bot_policy` run attached (`env.with_bot_policy`); unchanged when
    it names none. ConfigError, one line, when the directory is not a finished run of this env it can use."""
    from jaxrl.trained.shelf import is_pretrained

    path = hook(env, "bot_policy")
    if not path:
        return env
    where = path if is_pretrained(path) else str(Path(path).expanduser().resolve())
    return env.with_bot_policy(frozen_policy(where, env.name, env.observation_space().shape))


def league_agents(env_name: str, league: tuple[str, ...]) -> dict[str, tuple[Any, Any]]:
    """{kind: (act, env)} of a self-play league's frozen agents (`selfplay.league`'s `pretrained:NAME` and run
    directories), each loaded once per process. ConfigError, one line, for one that cannot play here."""
    from jaxrl.algos.selfplay import is_agent

    return {kind: league_policy(kind, env_name) for kind in league if is_agent(kind)}


@functools.cache
def league_policy(kind: str, env_name: str) -> tuple[Any, Any]:
    """(act, env) of the frozen agent `kind` (`pretrained:NAME` or a run directory) in a self-play league:
    `frozen_policy`, and the env it trained in, whose views it plays on (`opponent_obs(state, like=env)`: its
    width; the arena's tails channel). Loaded once per process."""
    from jaxrl.config.compose import UsageError, resume_config
    from jaxrl.config.environment import make_env
    from jaxrl.trained.shelf import ShelfAgent, is_pretrained

    flag = "selfplay.league"
    where = kind if is_pretrained(kind) else str(Path(kind).expanduser().resolve())
    if is_pretrained(kind):
        cfg = ShelfAgent(kind).config  # ShelfError (a ConfigError), one line
    elif not Path(where).is_dir() or not (Path(where) / "config.yaml").is_file():
        raise ConfigError(f"{flag}: {kind} is not a jaxrl run directory (nor a scripted kind, nor pretrained:NAME)")
    else:
        try:
            cfg, _, _ = resume_config(Path(where), [], flag=flag)
        except UsageError as e:
            raise ConfigError(f"{flag}: {kind}: {e}") from None
    check_env(cfg, f"{flag}: {kind}", env_name)
    cfg.env.bot_policy = ""
    env = make_env(cfg)[0]
    return frozen_policy(where, env_name, tuple(env.observation_space().shape[-3:]), flag), env


@functools.cache
def frozen_policy(run_dir: str, env_name: str, obs_shape: tuple[int, ...], flag: str = "env.bot_policy") -> Any:
    """`(obs, key) -> actions` of seed 0 (of a sweep's best member) of the newest checkpoint of `run_dir`, or of
    the shelf agent `pretrained:NAME`, greedy, its parameters closed over (constants of the compiled step).
    Loaded once per process. `flag`: the setting that named it, in errors."""
    from jaxrl.config.compose import UsageError, resume_config
    from jaxrl.config.environment import make_env
    from jaxrl.run.checkpoint import Checkpointer, CheckpointError
    from jaxrl.run.driver import Program
    from jaxrl.run.rundir import run_files
    from jaxrl.trained.shelf import ShelfAgent, is_pretrained

    where = f"{flag}={run_dir}"
    if is_pretrained(run_dir):
        agent = ShelfAgent(run_dir)  # ShelfError (a ConfigError), one line
        return _acting(agent.config, *agent.restore()[1:], 0, where, env_name, obs_shape)
    if not Path(run_dir).is_dir() or "checkpoints/" not in run_files(Path(run_dir)):
        raise ConfigError(
            f"{where} is not a jaxrl run with checkpoints (train one first: python -m jaxrl.train env={env_name})"
        )
    try:
        cfg, _, _ = resume_config(Path(run_dir), [], flag=flag)
    except UsageError as e:
        raise ConfigError(f"{where}: {e}") from None
    check_env(cfg, where, env_name)
    cfg.env.bot_policy = ""  # its own opponents are not needed to act
    env, env_params = make_env(cfg)
    check_view(env, where, obs_shape)
    program = Program(cfg, env, env_params)
    check_feed_forward(program, where)
    checkpoints = Checkpointer(Path(run_dir) / "checkpoints", reader=True)
    try:
        warn = lambda line: print(line, file=sys.stderr, flush=True)
        _, runner, _ = checkpoints.restore_latest(program.abstract_runner(), warn=warn)
    except CheckpointError as e:
        raise ConfigError(f"{where}: {e}") from None
    finally:
        checkpoints.close()
    return _acting(cfg, runner, program, best_member(Path(run_dir), program.sweep.size), where, env_name, obs_shape)


def check_env(cfg: Any, where: str, env_name: str) -> None:
    if cfg.env.name != env_name:
        raise ConfigError(f"{where} trained on env={cfg.env.name}; a bot policy must come from a run of env={env_name}")


def check_view(env: Any, where: str, obs_shape: tuple[int, ...]) -> None:
    own = tuple(env.observation_space().shape[-3:])
    if own != tuple(obs_shape[-3:]):
        raise ConfigError(
            f"{where} sees {own} views; this env's learners see {tuple(obs_shape[-3:])} (set env.view, or the arena's"
            " env.tails)"
        )


def check_feed_forward(program: Any, where: str) -> None:
    if program.algo.initial_carry(1) is not None:
        raise ConfigError(f"{where} has a recurrent policy; a bot policy must be feed-forward")


def _acting(
    cfg: Any, runner: Any, program: Any, member: int, where: str, env_name: str, obs_shape: tuple[int, ...]
) -> Any:
    """`(obs, key) -> actions` of seed 0 of `member` of a restored runner, greedy, its parameters closed over."""
    check_env(cfg, where, env_name)
    check_view(program.env, where, obs_shape)
    check_feed_forward(program, where)
    params = jax.tree.map(lambda x: x[member * cfg.num_seeds], program.algo.policy_params(runner))
    params = jax.device_get(params)
    policy = program.policy(greedy=True, member=member)

    def act(obs: jax.Array, key: jax.Array) -> jax.Array:
        return policy(params, None, obs, key)[1]

    return act


def best_member(run_dir: Path, size: int) -> int:
    """A sweep's best member by its summary.json (0 without a sweep or a summary)."""
    import json

    if size == 1:
        return 0
    try:
        return int(json.loads((run_dir / "summary.json").read_text()).get("best_member") or 0)
    except (OSError, ValueError):
        return 0
