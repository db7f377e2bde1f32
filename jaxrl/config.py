"""Typed run configuration: one dataclass per config group, one doc line per field.

Hydra validates types against these schemas; `validate` checks values and relations and
raises `ConfigError` with one line naming the bad setting and what is allowed.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from envs.base import INT32_MAX  # counts and sizes become int32 inside the compiled program
from jaxrl.errors import ConfigError
from jaxrl.networks import ACTIVATIONS, NETWORKS, RECURRENT
from jaxrl.precision import PRECISIONS

DEVICES = ("auto", "cpu", "tpu", "gpu", "metal")
LOGGERS = ("csv", "tensorboard", "wandb")


def logger_names(value: Any) -> tuple[str, ...]:
    """`logger` as a tuple of names: a name, a list of names, or names joined by commas."""
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(str(item).strip() for item in items if str(item).strip())


@dataclass
class CheckpointConfig:
    """When the whole training state is saved (orbax) under <run_dir>/checkpoints/<env steps per seed>."""

    every_steps: int | None = None  # env steps per seed between checkpoints; None: only by time
    every_minutes: float | None = 10.0  # minutes between checkpoints; None: only by steps
    keep: int = 3  # newest checkpoints kept (older ones are deleted)


@dataclass
class TrainConfig:
    """One training run."""

    env: Any = None  # env group: snake or any gymnax id
    algo: Any = None  # algo group: ppo | dqn
    seed: int = 0  # base seed; seed i of num_seeds uses fold_in(seed, i)
    num_seeds: int = 1  # independent agents trained side by side in one program (a vmap axis)
    sweep: dict[str, Any] = field(default_factory=dict)  # {algo: {lr: [1e-4, 3e-4]}}: members trained beside the seeds
    num_envs: int = 4  # parallel envs per seed
    total_timesteps: float = 5e5  # env steps per seed (accepts 2e6), rounded down to whole updates
    num_chunks: int = 50  # host round-trips over the run: progress lines and metrics rows
    run_dir: str | None = None  # where outputs go; default runs/<env>-<algo>-<time>
    overwrite: bool = False  # start anyway in a run_dir that holds a run: the old run is moved aside, not deleted
    device: str = "auto"  # auto | cpu | tpu | gpu | metal
    devices: Any = 1  # local devices of that platform the run shards over: a number or all
    seed_devices: int = 1  # of those devices, how many split the seeds (the rest split each seed's envs)
    env_groups: int | None = None  # env groups that shuffle and sample alone; default: devices along env
    distributed: bool = False  # one run over several processes (hosts): jax.distributed.initialize(), devices=all
    coordinator_address: str | None = None  # HOST:PORT of process 0; default JAX_COORDINATOR_ADDRESS, or the cluster's
    num_processes: int | None = None  # processes in the run; default JAX_NUM_PROCESSES, or the cluster's (SLURM)
    process_id: int | None = None  # this process's index; default JAX_PROCESS_ID, or the cluster's (SLURM_PROCID)
    precision: str = "fp32"  # fp32 | tf32 (TensorFloat-32 matmuls) | bf16 (bfloat16 network, float32 params)
    compile_cache: str | None = None  # jax's persistent compilation cache dir: a second start skips compiling
    progress: bool = True  # live progress line on a terminal (plain lines otherwise)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)  # when to save (always at the end)
    curriculum: list[Any] = field(default_factory=list)  # phases [{steps: 1e6, <EnvParams field>: value}, ...]
    logger: Any = "csv"  # csv (always written) | tensorboard | wandb, or a list: [tensorboard,wandb]
    wandb_project: str = "jaxrl"  # Weights & Biases project (WANDB_MODE=offline is honoured)


# -- checks shared by every algorithm's config ---------------------------------------------

SEED_MAX = 2**32 - 1  # jax.random.key keeps 32 bits of the seed: larger ones would collide


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def float32(value: float) -> float:
    """`value` as the float32 the compiled program sees (1e39 becomes inf, 1e-46 becomes 0)."""
    import numpy as np

    with np.errstate(over="ignore", under="ignore"):
        return float(np.float32(value))


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
    """The network fields every algorithm config has: network, activation, hidden, channels."""
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


def agents_per_world(cfg: TrainConfig) -> int:
    """Agents in each world (env.num_agents where the env has that setting, else 1)."""
    return int(getattr(cfg.env, "num_agents", None) or 1)


def env_groups(cfg: TrainConfig) -> int:
    """The env groups a run's algorithm shuffles and samples in (`jaxrl.groups`): env_groups, once the
    device layout has filled it in (`jaxrl.mesh`), else 1."""
    return cfg.env_groups or 1


def population(cfg: TrainConfig) -> int:
    """Agents trained side by side in one program: sweep members x num_seeds (the seed axis's length)."""
    from jaxrl.sweep import flatten

    sizes = [len(v) if isinstance(v, list | tuple) else 1 for v in flatten(cfg.sweep or {}).values()]
    return cfg.num_seeds * math.prod(sizes)


def check_layout(cfg: TrainConfig) -> None:
    """The device settings as written (what needs the device count is checked in `jaxrl.mesh`)."""
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
    from jaxrl.distributed import check_distributed

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
    for name in logger_names(cfg.logger):
        if name not in LOGGERS:
            raise ConfigError(
                f"logger={name} is invalid: allowed {', '.join(LOGGERS)} (several: logger=[tensorboard,wandb])"
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
    check_numbers("algo.", cfg.algo)
    check_network(cfg.algo)
    in_range("algo.gamma", cfg.algo.gamma, 0, 1, open_low=True)
    positive("algo.lr", cfg.algo.lr)
    positive("algo.max_grad_norm", cfg.algo.max_grad_norm)
    cfg.algo.validate(cfg)
    if cfg.sweep:
        from jaxrl.sweep import validate as check_sweep

        check_sweep(cfg)


def env_settings(cfg: TrainConfig) -> dict[str, Any]:
    """The env group's settings but its name (constructor arguments and EnvParams overrides).

    An env with potential-based shaping (`shaping_gamma`, e.g. Snake) gets the learner's `algo.gamma`
    there unless the config sets it: with the same discount the shaping leaves the best policy unchanged.
    """
    settings = {f.name: getattr(cfg.env, f.name) for f in dataclasses.fields(cfg.env) if f.name != "name"}
    if "shaping_gamma" in settings and settings["shaping_gamma"] is None:
        settings["shaping_gamma"] = float(cfg.algo.gamma)
    return settings


def make_env(cfg: TrainConfig) -> tuple[Any, Any]:
    """(env, env_params) the config names, with its settings applied and checked; ConfigError otherwise."""
    import envs

    try:
        return envs.spec(cfg.env.name).make(**env_settings(cfg))
    except envs.EnvSettingError as e:  # "name=value is invalid: must be ..."
        raise ConfigError(f"env.{e}") from None
    except ValueError as e:  # an unknown name, or a constructor refusing a setting
        raise ConfigError(f"env: {e}") from None
