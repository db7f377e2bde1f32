"""One validation pass over a composed config: every value and relation, the algorithm's own checks,
the device layout as written and every sweep member as a run of its own; the first failure is raised
as a `ConfigError` of one line naming the bad setting and what is allowed."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from jaxrl.config import sweep as sweeps
from jaxrl.config.registry import LOGGERS
from jaxrl.config.schema import DEVICES, OPPONENTS, TrainConfig, check_distributed, float32, logger_names
from jaxrl.core.networks import ACTIVATIONS, NETWORKS, RECURRENT
from jaxrl.core.precision import PRECISIONS
from jaxrl.envs.checks import INT32_MAX  # counts and sizes become int32 inside the compiled program
from jaxrl.errors import ConfigError

SEED_MAX = 2**32 - 1  # jax.random.key keeps 32 bits of the seed: larger ones would collide


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def positive(name: str, value: Any) -> None:
    """ConfigError unless value is a finite number > 0 (also as a float32)."""
    if not _number(value) or not math.isfinite(float32(value)) or float32(value) <= 0:
        raise ConfigError(f"{name}={value} is invalid: must be a finite number > 0")


def non_negative(name: str, value: Any) -> None:
    """ConfigError unless value is a finite number >= 0."""
    if not _number(value) or not math.isfinite(value) or value < 0:
        raise ConfigError(f"{name}={value} is invalid: must be a finite number >= 0")


def in_range(name: str, value: Any, low: float, high: float, open_low: bool = False) -> None:
    """ConfigError unless low <= value <= high (low < value with `open_low`)."""
    above = value > low if open_low else value >= low
    if not _number(value) or not (above and value <= high):
        bracket = "(" if open_low else "["
        raise ConfigError(f"{name}={value} is invalid: must be in {bracket}{low:g}, {high:g}]")


def check_numbers(prefix: str, group: Any) -> None:
    """Every number of a config group finite and every integer within int32 (they are compiled in)."""
    for f in dataclasses.fields(group):
        value = getattr(group, f.name)
        values = value if isinstance(value, list | tuple) else [value]
        for v in values:
            if isinstance(v, float) and not math.isfinite(float32(v)):
                raise ConfigError(f"{prefix}{f.name}={value} is invalid: must be a finite number (float32)")
            if _number(v) and isinstance(v, int) and abs(v) > INT32_MAX:
                raise ConfigError(f"{prefix}{f.name}={value} is invalid: must be at most {INT32_MAX} in size")


def check_network(a: Any) -> None:
    """The network fields every algorithm's config has (`AlgoConfig`): network, activation, hidden, channels."""
    if a.network not in NETWORKS:
        raise ConfigError(f"algo.network={a.network} is invalid: allowed {', '.join(NETWORKS)}")
    if a.activation not in ACTIVATIONS:
        raise ConfigError(f"algo.activation={a.activation} is invalid: allowed {', '.join(ACTIVATIONS)}")
    for name in ("hidden", "channels"):
        widths = getattr(a, name)
        if any(w <= 0 or w > 65536 for w in widths):
            raise ConfigError(f"algo.{name}={list(widths)} is invalid: layer widths must be integers from 1 to 65536")
    cnn = a.network == "cnn" or (a.network in RECURRENT and getattr(a, "torso", None) == "cnn")
    if cnn and not a.channels:
        what = "algo.network=cnn" if a.network == "cnn" else "algo.torso=cnn"
        raise ConfigError(f"algo.channels=[] is invalid with {what}: give at least one conv layer")


def population(cfg: TrainConfig) -> int:
    """Agents trained side by side in one program: sweep members x num_seeds (the seed axis's length)."""
    sizes = [len(v) if isinstance(v, list | tuple) else 1 for v in sweeps.flatten(cfg.sweep or {}).values()]
    return cfg.num_seeds * math.prod(sizes)


def check_layout(cfg: TrainConfig) -> None:
    """The device settings as written (what needs the device count is checked in `jaxrl.scale.mesh`)."""
    d = cfg.devices
    if not (d == "all" or (isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= 65536)):
        raise ConfigError(f"devices={d} is invalid: a number of devices (1, 2, ...) or all")
    s = cfg.seed_devices
    if not isinstance(s, int) or isinstance(s, bool) or s < 1:
        raise ConfigError(f"seed_devices={s} is invalid: a number of devices >= 1")
    entries = population(cfg)
    if entries % s:
        what = f"num_seeds={cfg.num_seeds}" if entries == cfg.num_seeds else f"sweep members x num_seeds = {entries}"
        raise ConfigError(f"seed_devices={s} must divide {what}: each device of the seed axis holds as many seeds")
    check_distributed(cfg)
    g = cfg.env_groups
    if g is not None:
        if not isinstance(g, int) or isinstance(g, bool) or g < 1:
            raise ConfigError(f"env_groups={g} is invalid: a number of groups >= 1")
        if cfg.num_envs % g:
            raise ConfigError(f"env_groups={g} must divide num_envs={cfg.num_envs}: every group holds as many envs")


def validate(cfg: TrainConfig) -> None:
    """Check values and relations; raise ConfigError naming the first bad one."""
    if not 0 <= cfg.seed <= SEED_MAX:
        raise ConfigError(f"seed={cfg.seed} is invalid: must be an integer from 0 to {SEED_MAX}")
    for name in ("num_seeds", "num_envs", "num_chunks"):
        value = getattr(cfg, name)
        if not 1 <= value <= INT32_MAX:
            raise ConfigError(f"{name}={value} is invalid: must be an integer from 1 to {INT32_MAX}")
    if not _number(cfg.total_timesteps) or not 1 <= cfg.total_timesteps <= 1e15:
        raise ConfigError(f"total_timesteps={cfg.total_timesteps} is invalid: must be a number from 1 to 1e15")
    known = LOGGERS.all()
    for name in logger_names(cfg.logger):
        if name not in known:
            raise ConfigError(
                f"logger={name} is invalid: allowed {', '.join(known)} (several: logger=[tensorboard,wandb])"
            )
    if not str(cfg.wandb_project).strip() or any(c in str(cfg.wandb_project) for c in "/\\#?%:"):
        raise ConfigError(f"wandb_project={cfg.wandb_project!r} is invalid: a non-empty name without / \\ # ? % :")
    for name in ("run_dir", "compile_cache"):
        value = getattr(cfg, name)
        if value is not None and (not str(value).strip() or "\0" in str(value)):
            raise ConfigError(f"{name}={value!r} is invalid: must be a directory path")
    c = cfg.checkpoint
    if c.keep < 1:
        raise ConfigError(f"checkpoint.keep={c.keep} is invalid: must be >= 1")
    if c.every_steps is not None:
        positive("checkpoint.every_steps", c.every_steps)
    if c.every_minutes is not None:
        positive("checkpoint.every_minutes", c.every_minutes)
    if cfg.device not in DEVICES:
        raise ConfigError(f"device={cfg.device} is invalid: allowed {', '.join(DEVICES)}")
    check_layout(cfg)
    if cfg.precision not in PRECISIONS:
        raise ConfigError(f"precision={cfg.precision} is invalid: allowed {', '.join(PRECISIONS)}")
    check_opponents(cfg)
    check_numbers("algo.", cfg.algo)
    check_network(cfg.algo)
    in_range("algo.gamma", cfg.algo.gamma, 0, 1, open_low=True)
    positive("algo.lr", cfg.algo.lr)
    positive("algo.max_grad_norm", cfg.algo.max_grad_norm)
    cfg.algo.validate(cfg)
    if cfg.sweep:
        check_sweep(cfg)


def check_opponents(cfg: TrainConfig) -> None:
    """`opponents` and, for self-play, the pool's settings (whether the env has seats for them is checked
    where the env is built: `jaxrl.algos.selfplay.check_env`)."""
    from jaxrl.core.pool import SAMPLING

    if cfg.opponents not in OPPONENTS:
        raise ConfigError(f"opponents={cfg.opponents} is invalid: allowed {', '.join(OPPONENTS)}")
    if cfg.opponents != "selfplay":
        return
    s = cfg.selfplay
    for name, low, high in (("pool_size", 1, 1024), ("snapshot_every", 1, INT32_MAX), ("start", 0, INT32_MAX)):
        value = getattr(s, name)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigError(f"selfplay.{name}={value} is invalid: must be an integer from {low} to {high}")
    if s.sampling not in SAMPLING:
        raise ConfigError(f"selfplay.sampling={s.sampling} is invalid: allowed {', '.join(SAMPLING)}")
    non_negative("selfplay.priority_power", s.priority_power)
    if not _number(s.bot_share) or not 0 <= s.bot_share < 1:
        raise ConfigError(f"selfplay.bot_share={s.bot_share} is invalid: must be a number from 0 up to (not) 1")
    if round(s.bot_share * cfg.num_envs) >= cfg.num_envs:
        raise ConfigError(
            f"selfplay.bot_share={s.bot_share} leaves none of num_envs={cfg.num_envs} worlds to self-play: lower it"
        )
    league = s.league
    if not isinstance(league, list | tuple) or not all(isinstance(k, str) for k in league):
        raise ConfigError(
            f"selfplay.league={league} is invalid: a list of the env's bot names and frozen agents,"
            " like [greedy, space, pretrained:NAME]"
        )
    if len(set(league)) != len(league):
        raise ConfigError(f"selfplay.league={list(league)} is invalid: it names a bot twice")
    if league and round(s.bot_share * cfg.num_envs) < 1:
        raise ConfigError(
            f"selfplay.league={list(league)} plays in the bots' worlds, and selfplay.bot_share={s.bot_share} of"
            f" num_envs={cfg.num_envs} gives it none: raise bot_share"
        )


def check_sweep(cfg: TrainConfig) -> sweeps.Sweep:
    """The sweep, every member's config checked as a run of its own; ConfigError naming the first bad one."""
    sweep = sweeps.parse(cfg)
    for m in range(sweep.size if sweep.keys else 0):
        try:  # as a run on its own (the seed axis's devices split members and seeds together)
            validate(dataclasses.replace(sweeps.member_config(cfg, sweep, m), seed_devices=1))
        except ConfigError as e:
            raise ConfigError(f"sweep member {m} ({sweep.label(m)}): {e}") from None
    return sweep
