"""What the actor-critic algorithms share (PPO, A2C): `ActorCritic`, the base that acts from a policy and a
value head, collects a rollout with its values and log-probabilities, computes GAE, and learns from it in
`OnPolicy`'s epochs of minibatches. An algorithm over it writes its `loss` and its optimizer.
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

from jaxrl.algos.common import observation_codes, truncated_values
from jaxrl.algos.onpolicy import OnPolicy, OnPolicyConfig, bootstrap_next
from jaxrl.config.schema import ConfigError, TrainConfig
from jaxrl.config.validate import in_range, non_negative
from jaxrl.core import losses, networks, rollout
from jaxrl.core.precision import compute_dtype
from jaxrl.core.replay import ObsCodec
from jaxrl.core.stats import ObsStats, UpdateStats, all_finite


@dataclass
class ActorCriticConfig(OnPolicyConfig):
    """The fields of an actor-critic: GAE, the loss weights and what the network sees."""

    max_grad_norm: float = 0.5  # global gradient-norm clip
    activation: str = "tanh"  # tanh | relu | gelu | silu
    gae_lambda: float = 0.95  # GAE lambda
    ent_coef: float = 0.01  # entropy bonus weight
    vf_coef: float = 0.5  # value loss weight
    normalize_advantages: bool = True  # per-minibatch advantage normalization
    normalize_obs: bool = False  # normalize observations by running mean/std (clipped to +-10), like VecNormalize
    shared_torso: bool = False  # one torso for actor and critic (half the compute) instead of two

    def validate(self, cfg: TrainConfig) -> None:
        """ConfigError naming the first actor-critic setting out of range or not dividing the rollout."""
        in_range("algo.gae_lambda", self.gae_lambda, 0, 1)
        for name in ("ent_coef", "vf_coef"):
            non_negative(f"algo.{name}", getattr(self, name))
        super().validate(cfg)


@struct.dataclass
class ActorCriticRunner:
    """Everything an actor-critic run carries between updates (one seed; a leading seed axis under vmap)."""

    params: Any
    opt_state: Any
    envs: rollout.Streams  # env states, observations, episode sums, env params
    key: jax.Array  # PRNG key
    update: jax.Array  # () int32, updates done
    obs_stats: ObsStats | None = None  # running observation statistics when algo.normalize_obs


@struct.dataclass
class Transition:
    """One rollout step of every env, time-major after the scan: (num_steps, num_envs, ...)."""

    obs: jax.Array  # stored through obs_codec: bit-packed (..., ceil(cells / 8)) uint8 when binary
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    next_value: jax.Array  # value of the observation the step reached, before any auto-reset (see `collect`)
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array


def policy_outputs(action_space: Any) -> int:
    """Numbers the policy head outputs per stream: one logit per discrete action, or the continuous action's size."""
    if isinstance(action_space, spaces.Box):
        return int(math.prod(action_space.shape))
    return int(action_space.n)


class ActorCritic(OnPolicy):
    """Static pieces of a feed-forward actor-critic run: env, network, optimizer and derived sizes.

    `loss(params, obs_stats, batch, advantages, targets, memory)` and `base_optimizer` are the subclass's:
    `minibatch_pass` gives the policy head and values of its minibatch. A carried memory changes `forward`,
    `value`, `scan_steps`, `learning_data`, the minibatches and `minibatch_pass` (`jaxrl.algos.recurrent_ppo`).
    """

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
        # Binary observations (Snake, the grid) are stored bit-packed and unpacked per minibatch.
        self.obs_codec = ObsCodec.for_space(obs_space)
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
            "codes": observation_codes(self.vec.env),
        }

    def make_network(self, settings: dict[str, Any]) -> nn.Module:
        """The feed-forward actor-critic (MLP or CNN; one torso shared, or one each)."""
        if self.algo.network == "cnn" and len(self.obs_shape) != 3:
            raise ConfigError(f"algo.network=cnn needs (H, W, C) observations; {self.env.name} gives {self.obs_shape}")
        return networks.ActorCritic(network=self.algo.network, shared=self.algo.shared_torso, **settings)

    def bytes_per_step(self) -> int:
        """Rollout bytes per transition: stored observation, action, log-prob, value, next value, reward,
        advantage and target, two flags."""
        return self.obs_codec.stored_bytes + 4 * max(1, self.action_size) + 4 * 6 + 2

    def optimizer_with(self, lr: float | jax.Array) -> optax.GradientTransformation:
        """`Base`'s, its state flattened into one vector per moment (the layout PPO's checkpoints hold)."""
        return optax.flatten(super().optimizer_with(lr))

    def init(self, key: jax.Array, env_params: Any = None) -> ActorCriticRunner:
        """Fresh network, optimizer and envs for one seed."""
        key, net_key, reset_key = jax.random.split(key, 3)
        env_params = self.env_params if env_params is None else env_params  # a sweep member's own
        envs = rollout.reset(self.vec, reset_key, env_params, self.initial_carry(self.vec.streams))
        params = self.init_params(net_key, envs.obs)
        return ActorCriticRunner(
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
        """(carry, policy head output, value) of a batch of observations: the one network pass that acting,
        the greedy policy and the loss share. The carry (None) passes through."""
        pi, value = self.network.apply(params, self.prepare(obs_stats, obs))
        return carry, pi, value

    def value(self, params: Any, obs_stats: ObsStats | None, carry: Any, obs: jax.Array) -> jax.Array:
        """The critic's value of a batch of observations (the critic alone; no carry)."""
        return self.network.apply(params, self.prepare(obs_stats, obs), method="value")

    def policy_params(self, runner: ActorCriticRunner) -> tuple[Any, ObsStats | None]:
        """The network parameters and the observation statistics the policy acts with."""
        return runner.params, runner.obs_stats

    def policy(self, greedy: bool = True):
        """`(params, carry, obs, key) -> (carry, actions)`: the most likely action, or a sampled one."""

        def act(params: tuple[Any, ObsStats | None], carry: Any, obs: jax.Array, key: jax.Array):
            carry, pi, _ = self.forward(*params, carry, obs)
            action = networks.mode(pi, self.continuous) if greedy else networks.sample(key, pi, self.continuous)
            return carry, self.to_env(action)

        return act

    sampled_scores = True  # `action_scores` are logits: acting as in training samples from their softmax

    def action_scores(self):
        """`(params, carry, obs) -> (carry, logits)`: what `policy` chooses from (self-play's opponents act on it)."""
        return lambda params, carry, obs: self.forward(*params, carry, obs)[:2]

    def readout(self):
        """`(params, carry, obs) -> (action probabilities, value)` of a discrete policy, for the step `carry` is at."""

        def read(params: tuple[Any, ObsStats | None], carry: Any, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
            _, pi, value = self.forward(*params, carry, obs)
            return jax.nn.softmax(pi.astype(jnp.float32), axis=-1), value

        return read

    def to_env(self, action: jax.Array) -> jax.Array:
        """The action the env gets: continuous actions clipped to the space's bounds."""
        return jnp.clip(action, self.action_low, self.action_high) if self.continuous else action

    def env_step(self, runner: ActorCriticRunner, draws: tuple[jax.Array, jax.Array]) -> tuple[ActorCriticRunner, Any]:
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
        reward = step.reward * self.algo.reward_scale
        transition = Transition(
            self.obs_codec.encode(step.obs),
            action,
            log_prob,
            value,
            truncated_value,
            reward,
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

    def collect(self, runner: ActorCriticRunner, key: jax.Array) -> tuple[ActorCriticRunner, Transition, Any, Any]:
        """Roll out num_steps in every env: (runner, trajectory, episode stats summed over the rollout,
        the carry each BPTT sequence started from; None for a feed-forward network). The rollout's
        randomness is drawn before the scan (`draws`)."""
        runner, traj, stats, starts = self.scan_steps(runner, self.draws(key))
        last_value = self.value(runner.params, runner.obs_stats, runner.envs.carry, runner.envs.obs)
        traj = traj.replace(next_value=bootstrap_next(traj.value, last_value, traj.truncated, traj.next_value))
        return runner, traj, jax.tree.map(jnp.sum, stats), starts

    def scan_steps(self, runner: ActorCriticRunner, draws: Any) -> tuple[ActorCriticRunner, Transition, Any, None]:
        """(runner, trajectory, per-step episode stats, no start carries): `env_step` scanned over the rollout."""
        runner, (traj, stats) = jax.lax.scan(self.env_step, runner, draws)
        return runner, traj, stats, None

    # -- learning --------------------------------------------------------------------------

    def minibatch_pass(
        self, params: Any, obs_stats: ObsStats | None, obs: jax.Array, memory: None
    ) -> tuple[Any, jax.Array]:
        """(policy head output, value) of a minibatch of transitions (no memory)."""
        _, pi, value = self.forward(params, obs_stats, None, obs)
        return pi, value

    def learning_data(self, traj: Transition, advantages: jax.Array, targets: jax.Array, starts: None) -> Any:
        """What the minibatches cut, as collected (num_steps, streams, ...): (trajectory, advantages,
        targets, no memory)."""
        return traj, advantages, targets, None

    def update(self, runner: ActorCriticRunner) -> tuple[ActorCriticRunner, UpdateStats]:
        """Collect one rollout and learn from it for update_epochs epochs."""
        key, rollout_key, epoch_key = jax.random.split(runner.key, 3)
        runner, traj, stats, starts = self.collect(runner.replace(key=key), rollout_key)
        a = self.algo
        advantages, targets = losses.compute_gae(
            traj.reward, traj.value, traj.next_value, traj.terminated, traj.truncated, a.gamma, a.gae_lambda
        )
        data = self.learning_data(traj, advantages, targets, starts)
        obs_stats = runner.obs_stats  # the statistics the rollout acted with
        params, opt_state, loss_stats = self.learn(runner, epoch_key, data, obs_stats)
        if obs_stats is not None:
            obs_stats = obs_stats.update(self.obs_codec.decode(traj.obs))
        runner = runner.replace(params=params, opt_state=opt_state, update=runner.update + 1, obs_stats=obs_stats)
        learner = jax.tree.map(jnp.mean, loss_stats)
        return runner, UpdateStats(episodes=stats, learner=learner, finite=all_finite(loss_stats))
