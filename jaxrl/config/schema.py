"""Typed run configuration: one dataclass per config group, one doc line per field.

Hydra validates types against these schemas; `jaxrl.config.validate` checks values and relations and
raises `ConfigError` with one line naming the bad setting and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jaxrl.errors import ConfigError

DEVICES = ("auto", "cpu", "tpu", "gpu", "metal")


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


OPPONENTS = ("bots", "selfplay")


@dataclass
class SelfPlayConfig:
    """Self-play (`opponents=selfplay`): the bots' seats are played by a pool of the learner's own past policies."""

    pool_size: int = 8  # snapshots kept on device (the oldest is replaced); each game draws one at its start
    snapshot_every: int = 20  # updates between pushes of the learner's policy into the pool
    start: int = 0  # updates before the first snapshot; until then every game is against the bots
    sampling: str = "prioritized"  # latest | uniform | prioritized (snapshots that beat the learner come back more)
    priority_power: float = (
        2.0  # prioritized: a snapshot's weight is (its running win rate against the learner) ** this
    )
    bot_share: float = 0.2  # share of the worlds whose games stay against the bots (scripted, or env.bot_policy's run)
    greedy: bool = False  # opponents take their most likely action (else they sample, as the learner does)
    league: list[str] = field(default_factory=list)  # kinds the bots' games draw from, by `sampling`: scripts
    #   (the arena's greedy, space, lookahead, random_safe) and frozen agents (pretrained:NAME, a run directory,
    #   each on its own view); empty: the env's own bots (env.script)


@dataclass
class AlgoConfig:
    """The fields every algorithm's config has (`algo.*`); `jaxrl.config.validate` checks them for all.

    An algorithm's config subclasses it: it gives `name` and its own defaults, adds its own fields (one doc
    line each) and checks them in `validate`. The defaults here are what an algorithm gets by not setting one.
    """

    name: str = ""  # algorithm id: the name it is registered under
    lr: float = 2.5e-4  # learning rate (the start of the schedule when annealed)
    anneal_lr: bool = False  # decay the learning rate linearly to 0 over training
    gamma: float = 0.99  # discount
    max_grad_norm: float = 10.0  # global gradient-norm clip
    network: str = "mlp"  # mlp | cnn (| gru | lstm for an algorithm with a recurrent network)
    hidden: list[int] = field(default_factory=lambda: [64, 64])  # dense layer widths (after convs for cnn)
    channels: list[int] = field(default_factory=lambda: [16, 32])  # 3x3 conv channels (cnn only)
    activation: str = "relu"  # tanh | relu | gelu | silu
    layer_norm: bool = False  # LayerNorm between each dense layer of the torso and its activation

    def validate(self, cfg: TrainConfig) -> None:
        """ConfigError naming the first of the algorithm's own settings that is out of range (none here)."""


@dataclass
class TrainConfig:
    """One training run."""

    env: Any = None  # env group: snake or any gymnax id
    algo: Any = None  # algo group: ppo | a2c | dqn | pqn, an AlgoConfig
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
    opponents: str = "bots"  # bots (the env's own: scripted, or env.bot_policy) | selfplay (a pool of past policies)
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)  # the pool, when opponents=selfplay
    curriculum: list[Any] = field(default_factory=list)  # phases [{steps: 1e6, <EnvParams field>: value}, ...]
    logger: Any = "csv"  # csv (always written) | tensorboard | wandb, or a list: [tensorboard,wandb]
    wandb_project: str = "jaxrl"  # Weights & Biases project (WANDB_MODE=offline is honoured)


def check_distributed(cfg: Any) -> None:
    """The multi-host settings as written: set only with distributed=true, and in range (here, not in
    `validate`, because `jaxrl.scale.distributed` reads it before jax starts: validation imports the envs)."""
    given = [n for n in ("coordinator_address", "num_processes", "process_id") if getattr(cfg, n) is not None]
    if given and not cfg.distributed:
        raise ConfigError(f"{given[0]}={getattr(cfg, given[0])} is set but distributed=false: add distributed=true")
    address = cfg.coordinator_address
    if address is not None:
        host, _, port = str(address).rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"coordinator_address={address} is invalid: HOST:PORT of process 0, e.g. node001:1234")
    n, i = cfg.num_processes, cfg.process_id
    for name, value in (("num_processes", n), ("process_id", i)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise ConfigError(f"{name}={value} is invalid: must be an integer")
    if n is not None and not 1 <= n <= 65536:
        raise ConfigError(f"num_processes={n} is invalid: a number of processes from 1 to 65536")
    if i is not None and (i < 0 or (n is not None and i >= n)):
        top = f"{n - 1}" if n is not None else "num_processes - 1"
        raise ConfigError(f"process_id={i} is invalid: an index from 0 to {top}")


def float32(value: float) -> float:
    """`value` as the float32 the compiled program sees (1e39 becomes inf, 1e-46 becomes 0)."""
    import numpy as np

    with np.errstate(over="ignore", under="ignore"):
        return float(np.float32(value))


def agents_per_world(cfg: TrainConfig) -> int:
    """Agents in each world (env.num_agents where the env has that setting, else 1)."""
    return int(getattr(cfg.env, "num_agents", None) or 1)


def env_groups(cfg: TrainConfig) -> int:
    """The env groups a run's algorithm shuffles and samples in (`jaxrl.core.groups`): env_groups, once the
    device layout has filled it in (`jaxrl.scale.mesh`), else 1."""
    return cfg.env_groups or 1
