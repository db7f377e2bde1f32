"""PPO: rollout, GAE and all epochs x minibatches of SGD as one update of the core loop (`jaxrl.core.loop`).

`PPO(cfg, env, env_params)` holds the static pieces of a feed-forward run: network, optimizer and
derived sizes. `init(key)` builds a `PPORunner`, `update(runner)` collects one rollout and learns
from it in minibatches of transitions.

A recurrent network (`algo.network=gru|lstm`) is `RecurrentPPO` (`jaxrl.algos.recurrent_ppo`), a
subclass that overrides the few steps a carried memory changes and adds itself to `VARIANTS`; `algo=ppo`
is registered here, its factory picking the class by `algo.network`. The config (`PPOConfig`) and the
sizes it checks serve both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import struct
from gymnax.environments import spaces

from jaxrl.algos.base import Allocation, Base, register
from jaxrl.algos.common import epoch_rates, truncated_values
from jaxrl.config.schema import AlgoConfig, ConfigError, TrainConfig, agents_per_world, env_groups
from jaxrl.config.validate import in_range, non_negative, positive
from jaxrl.core import groups, losses, networks, rollout, shuffle
from jaxrl.core.precision import compute_dtype
from jaxrl.core.replay import ObsCodec
from jaxrl.core.stats import UpdateStats, all_finite, global_norm


@dataclass
class PPOConfig(AlgoConfig):
    """Proximal Policy Optimization with GAE, clipped value loss and LR annealing."""

    name: str = "ppo"  # algorithm id
    anneal_lr: bool = True  # decay the learning rate linearly to 0 over training
    max_grad_norm: float = 0.5  # global gradient-norm clip
    activation: str = "tanh"  # tanh | relu | gelu | silu
    num_steps: int = 128  # rollout length per env per update
    update_epochs: int = 4  # passes over each rollout
    num_minibatches: int = 4  # minibatches per epoch (times env.num_agents); must divide num_envs * num_steps
    minibatch_size: Any = None  # transitions per minibatch (replaces num_minibatches): an integer, or auto
    gae_lambda: float = 0.95  # GAE lambda
    clip_eps: float = 0.2  # PPO ratio clip (and value clip)
    clip_value: bool = True  # clip the value update like the policy ratio
    ent_coef: float = 0.01  # entropy bonus weight
    vf_coef: float = 0.5  # value loss weight
    normalize_advantages: bool = True  # per-minibatch advantage normalization
    normalize_obs: bool = False  # normalize observations by running mean/std (clipped to +-10), like VecNormalize
    reward_scale: float = 1.0  # rewards are multiplied by this for learning (metrics stay raw)
    torso: str = "mlp"  # recurrent only: mlp | cnn | none, the feed-forward layers before the cell
    rnn_hidden: int = 128  # recurrent only: units of the GRU/LSTM cell
    bptt_horizon: Any = None  # recurrent only: steps per training sequence (default: num_steps); divides num_steps
    shared_torso: bool = False  # one torso for actor and critic (half the compute) instead of two

    def validate(self, cfg: TrainConfig) -> None:
        """ConfigError naming the first PPO setting out of range or not dividing the rollout."""
        for name in ("num_steps", "update_epochs", "num_minibatches", "reward_scale"):
            positive(f"algo.{name}", getattr(self, name))
        in_range("algo.gae_lambda", self.gae_lambda, 0, 1)
        positive("algo.clip_eps", self.clip_eps)
        for name in ("ent_coef", "vf_coef"):
            non_negative(f"algo.{name}", getattr(self, name))
        count = minibatches(cfg)
        if self.network in networks.RECURRENT:
            num_sequences, count = sequence_sizes(cfg)
            groups.check_split(env_groups(cfg), num_sequences, count, "BPTT sequences")
        else:
            groups.check_split(
                env_groups(cfg), cfg.num_envs * agents_per_world(cfg) * self.num_steps, count, "transitions"
            )
        batch = cfg.num_envs * self.num_steps
        if cfg.total_timesteps < batch:
            raise ConfigError(
                f"total_timesteps={cfg.total_timesteps:g} is below one update (num_envs * algo.num_steps = {batch})"
            )


def minibatches(cfg: TrainConfig) -> int:
    """Minibatches per epoch. `num_minibatches` splits one agent's share of the rollout, so with K
    agents per world there are K times as many minibatches, each as large as with one agent (big
    minibatches of the grid CNN ran slower per sample on the CPU). `minibatch_size=auto`: the
    largest divisor of the rollout batch that still gives at least that many minibatches; an
    integer minibatch_size must divide the batch."""
    a = cfg.algo
    agents = agents_per_world(cfg)
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


def horizon(algo: PPOConfig) -> int:
    """Steps per BPTT sequence: algo.bptt_horizon, or the whole rollout."""
    return algo.num_steps if algo.bptt_horizon is None else algo.bptt_horizon


def sequence_sizes(cfg: TrainConfig) -> tuple[int, int]:
    """(sequences per rollout, minibatches per epoch) of a recurrent run; ConfigError when the horizon
    does not divide the rollout or the minibatches do not split whole sequences."""
    a = cfg.algo
    if a.torso not in networks.TORSOS:
        raise ConfigError(f"algo.torso={a.torso} is invalid: allowed {', '.join(networks.TORSOS)}")
    positive("algo.rnn_hidden", a.rnn_hidden)
    h = horizon(a)
    if not isinstance(h, int) or isinstance(h, bool) or h <= 0 or a.num_steps % h:
        raise ConfigError(
            f"algo.bptt_horizon={a.bptt_horizon} is invalid: a positive divisor of algo.num_steps={a.num_steps}"
        )
    streams = cfg.num_envs * agents_per_world(cfg)
    count = streams * (a.num_steps // h)
    wanted = minibatches(cfg)
    if count % wanted == 0:
        return count, wanted
    if isinstance(a.minibatch_size, str):  # auto: the fewest minibatches of whole sequences, at least as many
        return count, min(d for d in range(wanted, count + 1) if count % d == 0)
    setting = (
        f"algo.num_minibatches={a.num_minibatches}"
        if a.minibatch_size is None
        else f"algo.minibatch_size={a.minibatch_size}"
    )
    raise ConfigError(
        f"{setting} gives {wanted} minibatches, which must divide the {count} BPTT sequences"
        f" (num_envs * agents * algo.num_steps / algo.bptt_horizon): a recurrent minibatch holds whole sequences"
    )


@struct.dataclass
class PPORunner:
    """Everything a PPO run carries between updates (one seed; a leading seed axis under vmap)."""

    params: Any
    opt_state: Any
    envs: rollout.Streams  # env states, observations, episode sums, env params
    key: jax.Array  # PRNG key
    update: jax.Array  # () int32, updates done
    obs_stats: ObsStats | None = None  # running observation statistics when algo.normalize_obs


@struct.dataclass
class ObsStats:
    """Running mean and variance of observations (Chan's parallel update), as SB3's VecNormalize keeps."""

    mean: jax.Array  # obs_shape float32
    var: jax.Array  # obs_shape float32
    count: jax.Array  # () float32

    @classmethod
    def create(cls, obs_shape: tuple[int, ...]) -> ObsStats:
        return cls(jnp.zeros(obs_shape, jnp.float32), jnp.ones(obs_shape, jnp.float32), jnp.float32(1e-4))

    def update(self, batch: jax.Array) -> ObsStats:
        """Fold in a batch of observations (any leading axes)."""
        x = batch.reshape((-1,) + self.mean.shape).astype(jnp.float32)
        n = jnp.float32(x.shape[0])
        mean, var = x.mean(axis=0), x.var(axis=0)
        total = self.count + n
        delta = mean - self.mean
        m2 = self.var * self.count + var * n + delta**2 * self.count * n / total
        return ObsStats(self.mean + delta * n / total, m2 / total, total)

    def normalize(self, obs: jax.Array, clip: float = 10.0) -> jax.Array:
        return jnp.clip((obs.astype(jnp.float32) - self.mean) / jnp.sqrt(self.var + 1e-8), -clip, clip)


@struct.dataclass
class Transition:
    """One rollout step of every env, time-major after the scan: (num_steps, num_envs, ...)."""

    obs: jax.Array  # stored through PPO.obs_codec: bit-packed (..., ceil(cells / 8)) uint8 when binary
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    next_value: jax.Array  # value of the observation the step reached, before any auto-reset (see `collect`)
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array


class PPO(Base):
    """Static pieces of a feed-forward PPO run: env, network, optimizer and derived sizes."""

    def __init__(self, cfg: TrainConfig, env: Any, env_params: Any):
        super().__init__(cfg, env, env_params)
        action_space = self.vec.action_space(env_params)  # one agent's
        self.continuous = isinstance(action_space, spaces.Box)
        if self.continuous:
            self.action_low, self.action_high = action_space.low, action_space.high
        self.num_actions = policy_outputs(action_space)  # logits, or the action dimension
        self.action_size = self.num_actions if self.continuous else 1  # numbers per action
        obs_space = self.vec.observation_space(env_params)
        self.obs_shape = tuple(obs_space.shape)  # one agent's view
        self.network = self.make_network(self.network_settings())
        # Rollout observations are stored bit-packed when binary (Snake, the grid): 38 bytes of a
        # 10x10x3 board instead of 300, unpacked per minibatch where the network reads them.
        self.obs_codec = ObsCodec.for_space(obs_space)
        self.num_minibatches = minibatches(cfg)
        self.optimizer = self.optimizer_with(self.algo.lr)  # its state; each step runs at `learning_rates`

    def network_settings(self) -> dict[str, Any]:
        """What every actor-critic takes: heads, layer widths, activation, compute dtype."""
        a = self.algo
        return {
            "num_actions": self.num_actions,
            "continuous": self.continuous,
            "hidden": tuple(a.hidden),
            "channels": tuple(a.channels),
            "activation": a.activation,
            "obs_ndim": len(self.obs_shape),
            "layer_norm": a.layer_norm,
            "dtype": compute_dtype(self.cfg.precision),  # parameters stay float32
        }

    def make_network(self, settings: dict[str, Any]) -> nn.Module:
        """The feed-forward actor-critic (MLP or CNN; one torso shared, or one each)."""
        if self.algo.network == "cnn" and len(self.obs_shape) != 3:
            raise ConfigError(f"algo.network=cnn needs (H, W, C) observations; {self.env.name} gives {self.obs_shape}")
        return networks.ActorCritic(network=self.algo.network, shared=self.algo.shared_torso, **settings)

    # -- derived sizes -------------------------------------------------------------

    @property
    def batch_size(self) -> int:
        """Transitions per update per seed (one per agent per env step)."""
        return self.vec.streams * self.algo.num_steps

    @property
    def num_shuffled(self) -> int:
        """What an epoch shuffles into minibatches: the update's transitions."""
        return self.batch_size

    @property
    def steps_per_update(self) -> int:
        """Env (world) steps per update per seed."""
        return self.cfg.num_envs * self.algo.num_steps

    @property
    def minibatch_size(self) -> int:
        size, rest = divmod(self.batch_size, self.num_minibatches)
        assert rest == 0, f"{self.num_minibatches} minibatches must divide {self.batch_size}"
        return size

    def memory(self) -> list[Allocation]:
        """The rollout storage of one update (observations, actions, log-probs, values, rewards, flags)."""
        return [
            Allocation(
                f"the rollout ({self.batch_size:,} transitions)",
                self.batch_size * self.bytes_per_step(),
                "num_envs or algo.num_steps",
            )
        ]

    def bytes_per_step(self) -> int:
        """Rollout bytes per transition: stored observation, action, log-prob, value, next value, reward,
        advantage and target, two flags."""
        return self.obs_codec.stored_bytes + 4 * max(1, self.action_size) + 4 * 6 + 2

    # -- init -------------------------------------------------------------------------------

    def init(self, key: jax.Array, env_params: Any = None) -> PPORunner:
        """Fresh network, optimizer and envs for one seed."""
        key, net_key, reset_key = jax.random.split(key, 3)
        env_params = self.env_params if env_params is None else env_params  # a sweep member's own
        envs = rollout.reset(self.vec, reset_key, env_params, self.initial_carry(self.vec.streams))
        params = self.init_params(net_key, envs.obs)
        return PPORunner(
            params=params,
            opt_state=self.optimizer.init(params),
            envs=envs,
            key=key,
            update=jnp.zeros((), jnp.int32),
            obs_stats=ObsStats.create(self.obs_shape) if self.algo.normalize_obs else None,
        )

    def init_params(self, key: jax.Array, obs: jax.Array) -> Any:
        """Fresh network parameters, shaped by the first row of `obs` (streams, ...)."""
        return self.network.init(key, obs[:1])

    # -- acting -----------------------------------------------------------------------------

    def prepare(self, obs_stats: ObsStats | None, obs: jax.Array) -> jax.Array:
        """Network input: the observation, normalized by the running statistics when they are kept."""
        return obs if obs_stats is None else obs_stats.normalize(obs)

    def forward(
        self, params: Any, obs_stats: ObsStats | None, carry: Any, obs: jax.Array
    ) -> tuple[Any, Any, jax.Array]:
        """(carry, policy head output, value) for a batch of observations: the one network pass that
        acting in the rollout, the greedy policy and the loss share. The carry (None) passes through."""
        pi, value = self.network.apply(params, self.prepare(obs_stats, obs))
        return carry, pi, value

    def value(self, params: Any, obs_stats: ObsStats | None, carry: Any, obs: jax.Array) -> jax.Array:
        """The critic's value of a batch of observations (the critic alone; no carry)."""
        return self.network.apply(params, self.prepare(obs_stats, obs), method="value")

    def policy_params(self, runner: PPORunner) -> tuple[Any, ObsStats | None]:
        """The network parameters and the observation statistics the policy acts with."""
        return runner.params, runner.obs_stats

    def policy(self, greedy: bool = True):
        """`(params, carry, obs, key) -> (carry, actions)`: the most likely action, or a sampled one."""

        def act(params: tuple[Any, ObsStats | None], carry: Any, obs: jax.Array, key: jax.Array):
            net_params, obs_stats = params
            carry, pi, _ = self.forward(net_params, obs_stats, carry, obs)
            action = networks.mode(pi, self.continuous) if greedy else networks.sample(key, pi, self.continuous)
            return carry, self.to_env(action)

        return act

    sampled_scores = True  # `action_scores` are logits: acting as in training samples from their softmax

    def action_scores(self):
        """`(params, carry, obs) -> (carry, logits)`: what `policy` chooses from (self-play's opponents act on it)."""

        def scores(params: tuple[Any, ObsStats | None], carry: Any, obs: jax.Array):
            net_params, obs_stats = params
            carry, pi, _ = self.forward(net_params, obs_stats, carry, obs)
            return carry, pi

        return scores

    def to_env(self, action: jax.Array) -> jax.Array:
        """The action the env gets: continuous actions clipped to the space's bounds."""
        return jnp.clip(action, self.action_low, self.action_high) if self.continuous else action

    def env_step(
        self, runner: PPORunner, draws: tuple[jax.Array, jax.Array]
    ) -> tuple[PPORunner, tuple[Transition, Any]]:
        """Act in every env once, with this step's pre-drawn env keys and action noise."""
        env_keys, action_noise = draws
        envs = runner.envs
        carry, pi, value = self.forward(runner.params, runner.obs_stats, envs.carry, envs.obs)
        action = networks.sample_with(pi, action_noise, self.continuous)
        log_prob = networks.log_prob(pi, action, self.continuous)
        initial = self.initial_carry(self.vec.streams)
        envs, step, _, stats = rollout.step(self.vec, envs, self.to_env(action), env_keys, carry, initial)
        value_fn = lambda inputs: self.value(runner.params, runner.obs_stats, *inputs)
        # Only truncated steps bootstrap from final_observation (a recurrent critic steps on from the
        # carry after this action, before its reset); `collect` fills in the rest.
        truncated_value = truncated_values(value_fn, (carry, step.final_obs), step.truncated, self.groups)
        transition = Transition(
            self.obs_codec.encode(step.obs),
            action,
            log_prob,
            value,
            truncated_value,
            step.reward * self.algo.reward_scale,
            step.terminated,
            step.truncated,
        )
        return runner.replace(envs=envs), (transition, stats)

    def draws(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        """A rollout's randomness, one call each: env keys (num_steps, num_envs) and action noise
        (num_steps, streams, ...)."""
        env_key, noise_key = jax.random.split(key)
        steps = self.algo.num_steps
        return (
            self.vec.step_keys(env_key, steps),
            networks.noise(noise_key, (steps, self.vec.streams), self.num_actions, self.continuous),
        )

    def collect(self, runner: PPORunner, key: jax.Array) -> tuple[PPORunner, Transition, Any, Any]:
        """Roll out num_steps in every env: (runner, trajectory, episode stats summed over the rollout,
        the carry each BPTT sequence started from; None for a feed-forward network).

        The rollout's randomness (env keys, action noise) is drawn before the scan, one call
        each, rather than split per step. The value of the observation step t reached is the
        next step's value unless the episode ended there; a truncated step's comes from its
        final_observation (`env_step`), and a terminated step's is never used.
        """
        runner, traj, stats, starts = self.scan_steps(runner, self.draws(key))
        last_value = self.value(runner.params, runner.obs_stats, runner.envs.carry, runner.envs.obs)
        following = jnp.concatenate([traj.value[1:], last_value[None]])
        traj = traj.replace(next_value=jnp.where(traj.truncated, traj.next_value, following))
        return runner, traj, jax.tree.map(jnp.sum, stats), starts

    def scan_steps(self, runner: PPORunner, draws: Any) -> tuple[PPORunner, Transition, Any, None]:
        """(runner, trajectory, per-step episode stats, no start carries): `env_step` scanned over the rollout."""
        runner, (traj, stats) = jax.lax.scan(self.env_step, runner, draws)
        return runner, traj, stats, None

    # -- learning --------------------------------------------------------------------------

    def loss(self, params: Any, obs_stats: ObsStats | None, batch: Transition, advantages, targets, memory=None):
        """The PPO loss of a minibatch (`memory`: what `minibatch_pass` needs beyond the observations)."""
        pi, value = self.minibatch_pass(params, obs_stats, self.obs_codec.decode(batch.obs), memory)
        return losses.ppo_loss(
            networks.log_prob(pi, batch.action, self.continuous),
            batch.log_prob,
            advantages,
            value,
            batch.value,
            targets,
            networks.entropy(pi, self.continuous),
            clip_eps=self.algo.clip_eps,
            vf_coef=self.algo.vf_coef,
            ent_coef=self.algo.ent_coef,
            clip_value=self.algo.clip_value,
            normalize_advantages=self.algo.normalize_advantages,
        )

    def minibatch_pass(
        self, params: Any, obs_stats: ObsStats | None, obs: jax.Array, memory: None
    ) -> tuple[Any, jax.Array]:
        """(policy head output, value) of a minibatch of transitions (no memory)."""
        _, pi, value = self.forward(params, obs_stats, None, obs)
        return pi, value

    def base_optimizer(self, rate: Any) -> optax.GradientTransformation:
        return optax.adam(rate, eps=1e-5)

    def optimizer_with(self, lr: float | jax.Array) -> optax.GradientTransformation:
        """`Base`'s, its state flattened into one vector per moment (the layout PPO's checkpoints hold)."""
        return optax.flatten(super().optimizer_with(lr))

    def learning_rates(self, update: jax.Array) -> jax.Array:
        """(update_epochs, num_minibatches) learning rates of update `update`'s optimizer steps: lr, or,
        annealed, linear from lr at the run's first step to 0 after its last.

        Worked out from the update counter in float32, not by optax from its int32 step count: a run of
        1e11 env steps can take more than 2^31 optimizer steps, where that count stops (and optax
        refuses so long a schedule). Below 2^24 steps it equals optax's linear_schedule bit for bit.
        """
        a = self.algo
        return epoch_rates(a.lr, a.anneal_lr, update, self.num_updates, a.update_epochs, self.num_minibatches)

    def minibatch_step(self, carry, minibatch, obs_stats: ObsStats | None = None):
        params, opt_state = carry
        batch, advantages, targets, memory, lr = minibatch
        grads, stats = jax.grad(self.loss, has_aux=True)(params, obs_stats, batch, advantages, targets, memory)
        updates, opt_state = self.optimizer_with(lr).update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), {**stats, "grad_norm": global_norm(grads)}

    def learning_data(self, traj: Transition, advantages: jax.Array, targets: jax.Array, starts: None) -> Any:
        """What `minibatches` cuts, as collected (num_steps, streams, ...): (trajectory, advantages,
        targets, no memory)."""
        return traj, advantages, targets, None

    def minibatches(self, data: Any, perm: jax.Array) -> Any:
        """`learning_data` cut into minibatches of transitions, with a leading minibatch axis; `perm` is
        (env groups, transitions one group shuffles), each group shuffling its own streams' data
        (`jaxrl.core.groups.minibatches`)."""
        return groups.minibatches(self.group_minibatches, data, perm, self.groups)

    def group_minibatches(self, data: Any, perm: jax.Array) -> Any:
        """`minibatches` of one group's data (all of it with one group), in the order of `perm` over its transitions."""
        return shuffle.minibatches(data, perm, self.num_minibatches)

    def epoch(self, carry, perm: jax.Array, lrs: jax.Array, data, obs_stats: ObsStats | None = None):
        """One pass over the rollout in minibatches, in the order of `perm`, at learning rates `lrs`."""
        step = lambda c, minibatch: self.minibatch_step(c, minibatch, obs_stats)
        return jax.lax.scan(step, carry, (*self.minibatches(data, perm), lrs))

    def update(self, runner: PPORunner) -> tuple[PPORunner, UpdateStats]:
        """Collect one rollout and learn from it for update_epochs epochs."""
        key, rollout_key, epoch_key = jax.random.split(runner.key, 3)
        runner, traj, stats, starts = self.collect(runner.replace(key=key), rollout_key)
        advantages, targets = losses.compute_gae(
            traj.reward,
            traj.value,
            traj.next_value,
            traj.terminated,
            traj.truncated,
            self.algo.gamma,
            self.algo.gae_lambda,
        )
        carry = (runner.params, runner.opt_state)
        data = self.learning_data(traj, advantages, targets, starts)
        perms = groups.permutations(epoch_key, self.num_shuffled, self.algo.update_epochs, self.groups)
        obs_stats = runner.obs_stats  # the statistics the rollout acted with
        (params, opt_state), loss_stats = jax.lax.scan(
            lambda c, xs: self.epoch(c, *xs, data, obs_stats), carry, (perms, self.learning_rates(runner.update))
        )
        if obs_stats is not None:
            obs_stats = obs_stats.update(self.obs_codec.decode(traj.obs))
        runner = runner.replace(params=params, opt_state=opt_state, update=runner.update + 1, obs_stats=obs_stats)
        learner = jax.tree.map(jnp.mean, loss_stats)
        return runner, UpdateStats(episodes=stats, learner=learner, finite=all_finite(loss_stats))


def policy_outputs(action_space: Any) -> int:
    """Numbers the policy head outputs per stream: one logit per discrete action, or the continuous action's size."""
    if isinstance(action_space, spaces.Box):
        return int(math.prod(action_space.shape))
    return int(action_space.n)


# algo.network -> the PPO subclass that runs it; jaxrl/algos/recurrent_ppo.py adds gru and lstm (the registry's
# first read imports every module of jaxrl/algos, that one with them).
VARIANTS: dict[str, type[PPO]] = {}


def make_ppo(cfg: TrainConfig, env: Any, env_params: Any) -> PPO:
    """`algo=ppo`: the variant registered for `algo.network` (`RecurrentPPO` for gru|lstm), else `PPO`."""
    return VARIANTS.get(cfg.algo.network, PPO)(cfg, env, env_params)


register("ppo", PPOConfig, make_ppo, doc="PPO: clipped surrogate, GAE, minibatch SGD over each rollout")
