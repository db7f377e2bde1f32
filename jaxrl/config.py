"""Typed run configuration: one dataclass per config group, one doc line per field.

Hydra validates types against these schemas; `validate` checks values and relations and
raises `ConfigError` with one line naming the bad setting and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jaxrl.networks import ACTIVATIONS, NETWORKS

DEVICES = ("auto", "cpu", "gpu", "metal")
LOGGERS = ("csv", "tensorboard", "wandb")


def logger_names(value: Any) -> tuple[str, ...]:
    """`logger` as a tuple of names: a name, a list of names, or names joined by commas."""
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(str(item).strip() for item in items if str(item).strip())


class ConfigError(ValueError):
    """A config value or combination that cannot run."""


@dataclass
class EnvConfig:
    """A gymnax env: its id and optional `EnvParams` overrides."""

    name: str = "CartPole-v1"  # env id, one of envs.registered_names()
    max_steps_in_episode: int | None = None  # truncation limit; None keeps the env's default


@dataclass
class SnakeEnvConfig(EnvConfig):
    """Snake: board size (compiled in) and `EnvParams` (traced, changeable without recompiling)."""

    name: str = "snake"
    size: int = 10  # board side; the board is size x size
    hunger_limit: int | None = None  # truncate after this many steps without an apple; None: size^2
    reward_apple: float = 1.0  # reward for eating an apple
    reward_death: float = -1.0  # reward for leaving the board or biting the body
    reward_step: float = 0.0  # reward for every other step


@dataclass
class GridEnvConfig(EnvConfig):
    """Grid world: map size, agents per world and view (compiled in) and `EnvParams` (traced)."""

    name: str = "grid"
    size: int = 8  # map side; the map is size x size
    num_agents: int = 1  # agents per world, sharing one policy
    view: int = 5  # side of each agent's egocentric view: 3, 5 or 7
    regrow_delay: int | None = None  # steps until a collected resource is back; None: 20
    reward_collect: float | None = None  # reward per unit collected; None: 1
    reward_step: float | None = None  # reward per agent per step; None: 0
    wall_density: float | None = None  # chance of a wall per cell at reset; None: 0.15
    resource_density: float | None = None  # chance of a resource source per free cell; None: 0.1


ENV_KWARGS = {
    "snake": ("size",),
    "grid": ("size", "num_agents", "view"),
}  # constructor arguments; every other field but `name` is an EnvParams field


@dataclass
class PPOConfig:
    """Proximal Policy Optimization with GAE, clipped value loss and LR annealing."""

    name: str = "ppo"  # algorithm id
    lr: float = 2.5e-4  # Adam learning rate (start of the schedule when annealed)
    anneal_lr: bool = True  # decay the learning rate linearly to 0 over training
    num_steps: int = 128  # rollout length per env per update
    update_epochs: int = 4  # passes over each rollout
    num_minibatches: int = 4  # minibatches per epoch (times env.num_agents); must divide num_envs * num_steps
    minibatch_size: Any = None  # transitions per minibatch (replaces num_minibatches): an integer, or auto
    gamma: float = 0.99  # discount
    gae_lambda: float = 0.95  # GAE lambda
    clip_eps: float = 0.2  # PPO ratio clip (and value clip)
    clip_value: bool = True  # clip the value update like the policy ratio
    ent_coef: float = 0.01  # entropy bonus weight
    vf_coef: float = 0.5  # value loss weight
    max_grad_norm: float = 0.5  # global gradient-norm clip
    normalize_advantages: bool = True  # per-minibatch advantage normalization
    normalize_obs: bool = False  # normalize observations by running mean/std (clipped to +-10), like VecNormalize
    reward_scale: float = 1.0  # rewards are multiplied by this for learning (metrics stay raw)
    network: str = "mlp"  # mlp | cnn
    hidden: list[int] = field(default_factory=lambda: [64, 64])  # dense layer widths (after convs for cnn)
    channels: list[int] = field(default_factory=lambda: [16, 32])  # 3x3 conv channels (cnn only)
    activation: str = "tanh"  # tanh | relu | gelu | silu
    shared_torso: bool = False  # one torso for actor and critic (half the compute) instead of two


@dataclass
class DQNConfig:
    """Deep Q-learning with an on-device replay buffer, target network, n-step returns and double DQN.

    One update collects `train_freq` env steps per seed (or one vector step when num_envs is
    larger) and then takes `gradient_steps` gradient steps, so the replay ratio is
    batch_size * gradient_steps / train_freq sampled transitions per env step.
    """

    name: str = "dqn"  # algorithm id
    lr: float = 2.5e-4  # Adam learning rate (start of the schedule when annealed)
    anneal_lr: bool = False  # decay the learning rate linearly to 0 over training
    buffer_size: int = 10_000  # replay capacity in transitions per seed, one per agent per env step (rounded down to whole vector steps)
    batch_size: int = 128  # transitions per gradient step
    learning_starts: int = 10_000  # env steps per seed before the first gradient step
    train_freq: int = 4  # env steps per seed (all envs together) per `gradient_steps` gradient steps
    gradient_steps: int = 1  # gradient steps per train_freq env steps
    target_update_interval: int = 500  # env steps per seed between target-network updates
    tau: float = 1.0  # target update weight: 1 copies (hard), < 1 blends (soft, Polyak)
    epsilon_start: float = 1.0  # exploration rate at the start
    epsilon_end: float = 0.05  # exploration rate after the decay
    epsilon_decay: float = 0.5  # fraction of total_timesteps over which epsilon falls linearly
    gamma: float = 0.99  # discount
    n_step: int = 1  # n-step returns (1: one-step TD)
    double: bool = True  # double DQN: the online net picks the next action, the target net values it
    max_grad_norm: float = 10.0  # global gradient-norm clip
    huber_delta: float = 1.0  # Huber loss threshold
    network: str = "mlp"  # mlp | cnn
    hidden: list[int] = field(default_factory=lambda: [120, 84])  # dense layer widths (after convs for cnn)
    channels: list[int] = field(default_factory=lambda: [16, 32])  # 3x3 conv channels (cnn only)
    activation: str = "relu"  # tanh | relu | gelu | silu


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
    num_envs: int = 4  # parallel envs per seed
    total_timesteps: float = 5e5  # env steps per seed (accepts 2e6), rounded down to whole updates
    num_chunks: int = 50  # host round-trips over the run: progress lines and metrics rows
    run_dir: str | None = None  # where outputs go; default runs/<env>-<algo>-<time>
    device: str = "auto"  # auto | cpu | gpu | metal
    progress: bool = True  # live progress line on a terminal (plain lines otherwise)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)  # when to save (always at the end)
    curriculum: list[Any] = field(default_factory=list)  # phases [{steps: 1e6, <EnvParams field>: value}, ...]
    logger: Any = "csv"  # csv (always written) | tensorboard | wandb, or a list: [tensorboard,wandb]
    wandb_project: str = "jaxrl"  # Weights & Biases project (WANDB_MODE=offline is honoured)


def _positive(name: str, value: Any) -> None:
    if value is None or value <= 0:
        raise ConfigError(f"{name}={value} is invalid: must be > 0")


def validate(cfg: TrainConfig) -> None:
    """Check values and relations; raise ConfigError naming the first bad one."""
    for name in ("num_seeds", "num_envs", "total_timesteps", "num_chunks"):
        _positive(name, getattr(cfg, name))
    for name in logger_names(cfg.logger):
        if name not in LOGGERS:
            raise ConfigError(
                f"logger={name} is invalid: allowed {', '.join(LOGGERS)} (several: logger=[tensorboard,wandb])"
            )
    c = cfg.checkpoint
    if c.keep < 1:
        raise ConfigError(f"checkpoint.keep={c.keep} is invalid: must be >= 1")
    if c.every_steps is not None:
        _positive("checkpoint.every_steps", c.every_steps)
    if c.every_minutes is not None:
        _positive("checkpoint.every_minutes", c.every_minutes)
    if cfg.device not in DEVICES:
        raise ConfigError(f"device={cfg.device} is invalid: allowed {', '.join(DEVICES)}")
    a = cfg.algo
    if a.network not in NETWORKS:
        raise ConfigError(f"algo.network={a.network} is invalid: allowed {', '.join(NETWORKS)}")
    if a.activation not in ACTIVATIONS:
        raise ConfigError(f"algo.activation={a.activation} is invalid: allowed {', '.join(ACTIVATIONS)}")
    if any(h <= 0 for h in a.hidden) or any(c <= 0 for c in a.channels):
        raise ConfigError("algo.hidden and algo.channels must hold positive widths")
    if not 0 <= a.gamma <= 1:
        raise ConfigError(f"algo.gamma={a.gamma} is invalid: must be in [0, 1]")
    _positive("algo.lr", a.lr)
    _positive("algo.max_grad_norm", a.max_grad_norm)
    if a.name == "dqn":
        _validate_dqn(cfg, a)
    else:
        _validate_ppo(cfg, a)
    if cfg.env.name == "snake" and cfg.env.size < 4:
        raise ConfigError(f"env.size={cfg.env.size} is invalid: must be >= 4")


def ppo_minibatches(cfg: TrainConfig) -> int:
    """Minibatches per epoch. `num_minibatches` splits one agent's share of the rollout, so with K
    agents per world there are K times as many minibatches, each as large as with one agent (big
    minibatches of the grid CNN ran 3x slower per sample on CPU). `minibatch_size=auto`: the
    largest divisor of the rollout batch that still gives at least that many minibatches; an
    integer minibatch_size must divide the batch."""
    a = cfg.algo
    agents = getattr(cfg.env, "num_agents", 1)
    batch = cfg.num_envs * agents * a.num_steps
    where = f"num_envs * algo.num_steps = {cfg.num_envs} * {a.num_steps} = {batch}"
    if agents > 1:
        where = f"num_envs * env.num_agents * algo.num_steps = {cfg.num_envs} * {agents} * {a.num_steps} = {batch}"
    if a.minibatch_size is None:
        world_batch = cfg.num_envs * a.num_steps
        if world_batch % a.num_minibatches:
            raise ConfigError(
                f"algo.num_minibatches={a.num_minibatches} must divide num_envs * algo.num_steps"
                f" = {cfg.num_envs} * {a.num_steps} = {world_batch}"
            )
        return a.num_minibatches * agents
    if isinstance(a.minibatch_size, str) and a.minibatch_size.strip().lower() == "auto":
        cap = max(1, batch // (a.num_minibatches * agents))
        size = max(d for d in range(1, cap + 1) if batch % d == 0)
        return batch // size
    size = a.minibatch_size
    if isinstance(size, str) and size.strip().isdigit():
        size = int(size)
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        raise ConfigError(f"algo.minibatch_size={a.minibatch_size} is invalid: a positive integer or auto")
    if batch % size:
        raise ConfigError(f"algo.minibatch_size={size} must divide {where} (or use algo.minibatch_size=auto)")
    return batch // size


def _validate_ppo(cfg: TrainConfig, a: PPOConfig) -> None:
    for name in ("num_steps", "update_epochs", "num_minibatches", "reward_scale"):
        _positive(f"algo.{name}", getattr(a, name))
    if not 0 <= a.gae_lambda <= 1:
        raise ConfigError(f"algo.gae_lambda={a.gae_lambda} is invalid: must be in [0, 1]")
    batch = cfg.num_envs * a.num_steps
    ppo_minibatches(cfg)
    if cfg.total_timesteps < batch:
        raise ConfigError(
            f"total_timesteps={cfg.total_timesteps:g} is below one update (num_envs * algo.num_steps = {batch})"
        )


def dqn_schedule(num_envs: int, train_freq: int, gradient_steps: int) -> tuple[int, int]:
    """(vector env steps, gradient steps) per DQN update; ConfigError when they cannot be whole numbers."""
    if train_freq >= num_envs:
        if train_freq % num_envs:
            raise ConfigError(
                f"algo.train_freq={train_freq} must be a multiple of num_envs={num_envs} (or divide it),"
                f" e.g. algo.train_freq={num_envs}"
            )
        return train_freq // num_envs, gradient_steps
    if num_envs % train_freq:
        raise ConfigError(
            f"algo.train_freq={train_freq} must divide num_envs={num_envs} (or be a multiple of it),"
            f" e.g. algo.train_freq={num_envs}"
        )
    return 1, gradient_steps * num_envs // train_freq


def _validate_dqn(cfg: TrainConfig, a: DQNConfig) -> None:
    for name in ("buffer_size", "batch_size", "train_freq", "gradient_steps", "target_update_interval", "n_step"):
        _positive(f"algo.{name}", getattr(a, name))
    for name in ("learning_starts",):
        if getattr(a, name) < 0:
            raise ConfigError(f"algo.{name}={getattr(a, name)} is invalid: must be >= 0")
    for name in ("tau", "epsilon_start", "epsilon_end", "epsilon_decay"):
        if not 0 <= getattr(a, name) <= 1:
            raise ConfigError(f"algo.{name}={getattr(a, name)} is invalid: must be in [0, 1]")
    if a.tau == 0:
        raise ConfigError("algo.tau=0 is invalid: the target network would never move (must be in (0, 1])")
    _positive("algo.huber_delta", a.huber_delta)
    vector_steps, _ = dqn_schedule(cfg.num_envs, a.train_freq, a.gradient_steps)
    streams = cfg.num_envs * getattr(cfg.env, "num_agents", 1)  # one transition per agent per env step
    rows = a.buffer_size // streams
    if rows < a.n_step + vector_steps:
        who = "num_envs * env.num_agents" if streams != cfg.num_envs else "num_envs"
        raise ConfigError(
            f"algo.buffer_size={a.buffer_size} is too small: it must hold at least "
            f"(algo.n_step + steps per update) * {who} = {(a.n_step + vector_steps) * streams} transitions"
        )
    if cfg.total_timesteps < vector_steps * cfg.num_envs:
        raise ConfigError(
            f"total_timesteps={cfg.total_timesteps:g} is below one update ({vector_steps * cfg.num_envs})"
        )
