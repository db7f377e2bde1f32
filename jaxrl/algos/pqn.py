"""PQN (Gallici et al., 2024, "Simplifying Deep Temporal Difference Learning"): vectorized Q-learning
with Q(lambda) returns and a LayerNorm Q-network, no replay buffer and no target network.

One update acts epsilon-greedily in every env for `num_steps` steps, computes Q(lambda) returns
backward over that rollout from the Q-values seen while acting, then takes `update_epochs` passes
of minibatch regression of Q(s, a) onto them (RAdam). The rollout is the only data: the many
envs stepped at once decorrelate it, and LayerNorm keeps the bootstrapped targets stable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxrl.algos.base import EpsilonGreedy, register
from jaxrl.algos.common import feed_forward_only, linear_epsilon, q_network, truncated_values
from jaxrl.algos.onpolicy import OnPolicy, OnPolicyConfig, bootstrap_next
from jaxrl.config.schema import TrainConfig
from jaxrl.config.validate import in_range, positive
from jaxrl.core import losses, rollout
from jaxrl.core.replay import ObsCodec
from jaxrl.core.stats import UpdateStats, all_finite


@dataclass
class PQNConfig(OnPolicyConfig):
    """Parallel Q-learning: Q(lambda) over each rollout, LayerNorm, epsilon-greedy, no replay, no target network."""

    name: str = "pqn"  # algorithm id
    hidden: list[int] = field(default_factory=lambda: [128, 128])  # dense layer widths (after convs for cnn)
    layer_norm: bool = True  # LayerNorm between each dense layer and its activation (PQN's stabilizer)
    num_steps: int = 32  # rollout length per env per update
    q_lambda: float = 0.65  # lambda of the Q(lambda) returns (0: one-step targets, 1: Monte Carlo to the rollout's end)
    epsilon_start: float = 1.0  # exploration rate at the start
    epsilon_end: float = 0.05  # exploration rate after the decay
    epsilon_decay: float = 0.2  # fraction of total_timesteps over which epsilon falls linearly
    adam_eps: float = 1e-8  # RAdam's epsilon: larger makes the steps shrink with the gradients once they get tiny

    def validate(self, cfg: TrainConfig) -> None:
        """ConfigError naming the first PQN setting out of range or not dividing the rollout."""
        feed_forward_only("pqn", self.network)
        positive("algo.adam_eps", self.adam_eps)
        for name in ("q_lambda", "epsilon_start", "epsilon_end", "epsilon_decay"):
            in_range(f"algo.{name}", getattr(self, name), 0, 1)
        super().validate(cfg)


@struct.dataclass
class PQNRunner:
    """Everything a PQN run carries between updates (one seed; a leading seed axis under vmap)."""

    params: Any
    opt_state: Any
    envs: rollout.Streams  # env states, observations, episode sums, env params
    key: jax.Array
    update: jax.Array  # () int32, updates done


@struct.dataclass
class Transition:
    """One rollout step of every stream, time-major after the scan: (num_steps, streams, ...)."""

    obs: jax.Array  # stored through PQN.obs_codec (bit-packed when binary)
    action: jax.Array
    reward: jax.Array  # scaled by reward_scale
    terminated: jax.Array
    truncated: jax.Array
    q_max: jax.Array  # max_a Q(obs, a) while acting
    next_q: jax.Array  # max_a Q of the observation the step reached (see `PQN.collect`)


class PQN(EpsilonGreedy, OnPolicy):
    """A PQN run: `OnPolicy`'s epochs of minibatches over an epsilon-greedy rollout, regressed onto Q(lambda)."""

    def __init__(self, cfg: TrainConfig, env: Any, env_params: Any):
        super().__init__(cfg, env, env_params)
        obs_space, self.network = q_network(cfg, self.vec, env_params)
        self.num_actions, self.obs_shape = self.network.num_actions, tuple(obs_space.shape)
        self.obs_codec = ObsCodec.for_space(obs_space)
        self.optimizer = self.optimizer_with(self.algo.lr)

    def bytes_per_step(self) -> int:
        """Rollout bytes per transition: obs, action, reward, two Q figures, target, flags."""
        return self.obs_codec.stored_bytes + 4 * 5 + 2

    def init(self, key: jax.Array, env_params: Any = None) -> PQNRunner:
        key, net_key, reset_key = jax.random.split(key, 3)
        env_params = self.env_params if env_params is None else env_params  # a sweep member's own
        envs = rollout.reset(self.vec, reset_key, env_params)
        params = self.network.init(net_key, envs.obs[:1])
        return PQNRunner(params, self.optimizer.init(params), envs, key, jnp.zeros((), jnp.int32))

    def epsilon(self, update: jax.Array) -> jax.Array:
        """The exploration rate of update `update` (linear over epsilon_decay of the run)."""
        return linear_epsilon(self.algo, self.cfg.total_timesteps, update.astype(jnp.float32) * self.steps_per_update)

    def env_step(self, runner: PQNRunner, draws: tuple[jax.Array, Any], epsilon: jax.Array):
        """Act epsilon-greedily in every env once; keep what the returns need."""
        env_keys, (explore, random) = draws
        envs = runner.envs
        q = self.network.apply(runner.params, envs.obs)
        action = jnp.where(explore < epsilon, random, jnp.argmax(q, axis=-1))
        envs, step, _, stats = rollout.step(self.vec, envs, action, env_keys)
        q_of = lambda obs: self.network.apply(runner.params, obs).max(axis=-1)
        truncated_q = truncated_values(q_of, step.final_obs, step.truncated, self.groups)  # a cut episode's bootstrap
        reward = step.reward * self.algo.reward_scale
        obs = self.obs_codec.encode(step.obs)
        transition = Transition(obs, action, reward, step.terminated, step.truncated, q.max(axis=-1), truncated_q)
        return runner.replace(envs=envs), (transition, stats)

    def collect(self, runner: PQNRunner, key: jax.Array, epsilon: jax.Array) -> tuple[PQNRunner, Transition, Any]:
        """Roll out num_steps in every env, the randomness drawn at once; see `bootstrap_next` for `next_q`."""
        env_key, explore_key = jax.random.split(key)
        steps = self.algo.num_steps
        draws = (self.vec.step_keys(env_key, steps), self.exploration(explore_key, (steps, self.vec.streams)))
        runner, (traj, stats) = jax.lax.scan(lambda r, d: self.env_step(r, d, epsilon), runner, draws)
        last_q = self.network.apply(runner.params, runner.envs.obs).max(axis=-1)
        traj = traj.replace(next_q=bootstrap_next(traj.q_max, last_q, traj.truncated, traj.next_q))
        return runner, traj, jax.tree.map(jnp.sum, stats)

    def loss(self, params: Any, batch: Transition, targets: jax.Array):
        q = self.network.apply(params, self.obs_codec.decode(batch.obs))
        picked = jnp.arange(self.num_actions) == batch.action[:, None]  # one-hot, not a gather (CPU)
        q_taken = jnp.sum(jnp.where(picked, q, 0.0), axis=-1)
        loss = 0.5 * jnp.mean((q_taken - targets) ** 2)
        return loss, {"loss": loss, "q_mean": q_taken.mean()}

    def base_optimizer(self, rate: Any) -> optax.GradientTransformation:
        return optax.radam(rate, eps=self.algo.adam_eps)

    def update(self, runner: PQNRunner) -> tuple[PQNRunner, UpdateStats]:
        """Collect one rollout, compute its Q(lambda) returns, and regress onto them for update_epochs epochs."""
        key, rollout_key, epoch_key = jax.random.split(runner.key, 3)
        epsilon = self.epsilon(runner.update)
        runner, traj, stats = self.collect(runner.replace(key=key), rollout_key, epsilon)
        a = self.algo
        targets = losses.q_lambda_returns(
            traj.reward, traj.next_q, traj.terminated, traj.truncated, a.gamma, a.q_lambda
        )
        params, opt_state, loss_stats = self.learn(runner, epoch_key, (traj, targets))
        runner = runner.replace(params=params, opt_state=opt_state, update=runner.update + 1)
        learner = {**jax.tree.map(jnp.mean, loss_stats), "epsilon": epsilon}
        return runner, UpdateStats(episodes=stats, learner=learner, finite=all_finite(loss_stats))


register("pqn", PQNConfig, PQN, doc="PQN: Q(lambda) over each rollout, LayerNorm, no replay, no target network")
