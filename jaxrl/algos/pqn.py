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

from jaxrl.algos.base import Allocation, Base, EpsilonGreedy, register
from jaxrl.algos.common import epoch_rates, feed_forward_only, linear_epsilon, q_network, truncated_values
from jaxrl.config.schema import AlgoConfig, ConfigError, TrainConfig, agents_per_world, env_groups
from jaxrl.config.validate import in_range, positive
from jaxrl.core import groups, losses, rollout, shuffle
from jaxrl.core.replay import ObsCodec
from jaxrl.core.stats import UpdateStats, all_finite, global_norm


@dataclass
class PQNConfig(AlgoConfig):
    """Parallel Q-learning: Q(lambda) over each rollout, LayerNorm, epsilon-greedy, no replay, no target network."""

    name: str = "pqn"  # algorithm id
    hidden: list[int] = field(default_factory=lambda: [128, 128])  # dense layer widths (after convs for cnn)
    layer_norm: bool = True  # LayerNorm between each dense layer and its activation (PQN's stabilizer)
    num_steps: int = 32  # rollout length per env per update
    update_epochs: int = 4  # passes over each rollout
    num_minibatches: int = 4  # minibatches per epoch (times env.num_agents); must divide num_envs * num_steps
    q_lambda: float = 0.65  # lambda of the Q(lambda) returns (0: one-step targets, 1: Monte Carlo to the rollout's end)
    epsilon_start: float = 1.0  # exploration rate at the start
    epsilon_end: float = 0.05  # exploration rate after the decay
    epsilon_decay: float = 0.2  # fraction of total_timesteps over which epsilon falls linearly
    adam_eps: float = 1e-8  # RAdam's epsilon: larger makes the steps shrink with the gradients once they get tiny
    reward_scale: float = 1.0  # rewards are multiplied by this for learning (metrics stay raw)

    def validate(self, cfg: TrainConfig) -> None:
        """ConfigError naming the first PQN setting out of range or not dividing the rollout."""
        feed_forward_only("pqn", self.network)
        for name in ("num_steps", "update_epochs", "num_minibatches", "reward_scale", "adam_eps"):
            positive(f"algo.{name}", getattr(self, name))
        for name in ("q_lambda", "epsilon_start", "epsilon_end", "epsilon_decay"):
            in_range(f"algo.{name}", getattr(self, name), 0, 1)
        batch = cfg.num_envs * self.num_steps
        if batch % self.num_minibatches:
            raise ConfigError(
                f"algo.num_minibatches={self.num_minibatches} must divide num_envs * algo.num_steps"
                f" = {cfg.num_envs} * {self.num_steps} = {batch}"
            )
        agents = agents_per_world(cfg)
        groups.check_split(env_groups(cfg), batch * agents, self.num_minibatches * agents, "transitions")
        if cfg.total_timesteps < batch:
            raise ConfigError(
                f"total_timesteps={cfg.total_timesteps:g} is below one update (num_envs * algo.num_steps = {batch})"
            )


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


class PQN(EpsilonGreedy, Base):
    """Static pieces of a PQN run: env, Q-network, optimizer and derived sizes."""

    def __init__(self, cfg: TrainConfig, env: Any, env_params: Any):
        super().__init__(cfg, env, env_params)
        obs_space, self.network = q_network(cfg, self.vec, env_params)
        self.num_actions, self.obs_shape = self.network.num_actions, tuple(obs_space.shape)
        self.obs_codec = ObsCodec.for_space(obs_space)
        self.num_minibatches = self.algo.num_minibatches * agents_per_world(cfg)
        self.optimizer = self.optimizer_with(self.algo.lr)

    # -- derived sizes -------------------------------------------------------------------------

    @property
    def batch_size(self) -> int:
        """Transitions per update per seed (one per agent per env step)."""
        return self.vec.streams * self.algo.num_steps

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    @property
    def steps_per_update(self) -> int:
        """Env (world) steps per update per seed."""
        return self.cfg.num_envs * self.algo.num_steps

    def memory(self) -> list[Allocation]:
        """The rollout storage of one update."""
        per_step = self.obs_codec.stored_bytes + 4 * 5 + 2  # obs, action, reward, two Q figures, target, flags
        return [
            Allocation(
                f"the rollout ({self.batch_size:,} transitions)",
                self.batch_size * per_step,
                "num_envs or algo.num_steps",
            )
        ]

    # -- init and acting -----------------------------------------------------------------------

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
        transition = Transition(
            self.obs_codec.encode(step.obs),
            action,
            step.reward * self.algo.reward_scale,
            step.terminated,
            step.truncated,
            q.max(axis=-1),
            truncated_q,
        )
        return runner.replace(envs=envs), (transition, stats)

    def collect(self, runner: PQNRunner, key: jax.Array, epsilon: jax.Array) -> tuple[PQNRunner, Transition, Any]:
        """Roll out num_steps in every env. The max Q of the observation step t reached is the next
        step's (taken while acting) unless the episode ended there; a truncated step's comes from its
        final observation, and a terminated step's is never used."""
        env_key, explore_key = jax.random.split(key)
        steps = self.algo.num_steps
        draws = (self.vec.step_keys(env_key, steps), self.exploration(explore_key, (steps, self.vec.streams)))
        runner, (traj, stats) = jax.lax.scan(lambda r, d: self.env_step(r, d, epsilon), runner, draws)
        last_q = self.network.apply(runner.params, runner.envs.obs).max(axis=-1)
        following = jnp.concatenate([traj.q_max[1:], last_q[None]])
        traj = traj.replace(next_q=jnp.where(traj.truncated, traj.next_q, following))
        return runner, traj, jax.tree.map(jnp.sum, stats)

    # -- learning ------------------------------------------------------------------------------

    def loss(self, params: Any, batch: Transition, targets: jax.Array):
        q = self.network.apply(params, self.obs_codec.decode(batch.obs))
        picked = jnp.arange(self.num_actions) == batch.action[:, None]  # one-hot, not a gather (CPU)
        q_taken = jnp.sum(jnp.where(picked, q, 0.0), axis=-1)
        loss = 0.5 * jnp.mean((q_taken - targets) ** 2)
        return loss, {"loss": loss, "q_mean": q_taken.mean()}

    def base_optimizer(self, rate: Any) -> optax.GradientTransformation:
        return optax.radam(rate, eps=self.algo.adam_eps)

    def minibatch_step(self, carry, minibatch):
        params, opt_state = carry
        batch, targets, lr = minibatch
        grads, stats = jax.grad(self.loss, has_aux=True)(params, batch, targets)
        updates, opt_state = self.optimizer_with(lr).update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), {**stats, "grad_norm": global_norm(grads)}

    def epoch(self, carry, perm: jax.Array, lrs: jax.Array, data):
        """One pass over the rollout in minibatches of transitions; `perm` is (env groups, transitions
        per group): each group shuffles its own streams' steps, and minibatch i is every group's
        i-th part side by side (`jaxrl.core.groups`)."""
        cut = lambda group_data, order: shuffle.minibatches(group_data, order, self.num_minibatches)
        batches = groups.minibatches(cut, data, perm, self.groups)
        return jax.lax.scan(self.minibatch_step, carry, (*batches, lrs))

    def update(self, runner: PQNRunner) -> tuple[PQNRunner, UpdateStats]:
        """Collect one rollout, compute its Q(lambda) returns, and regress onto them for update_epochs epochs."""
        key, rollout_key, epoch_key = jax.random.split(runner.key, 3)
        epsilon = self.epsilon(runner.update)
        runner, traj, stats = self.collect(runner.replace(key=key), rollout_key, epsilon)
        a = self.algo
        targets = losses.q_lambda_returns(
            traj.reward, traj.next_q, traj.terminated, traj.truncated, a.gamma, a.q_lambda
        )
        perms = groups.permutations(epoch_key, self.batch_size, a.update_epochs, self.groups)
        lrs = epoch_rates(a.lr, a.anneal_lr, runner.update, self.num_updates, a.update_epochs, self.num_minibatches)
        (params, opt_state), loss_stats = jax.lax.scan(
            lambda c, xs: self.epoch(c, *xs, (traj, targets)), (runner.params, runner.opt_state), (perms, lrs)
        )
        runner = runner.replace(params=params, opt_state=opt_state, update=runner.update + 1)
        learner = {**jax.tree.map(jnp.mean, loss_stats), "epsilon": epsilon}
        return runner, UpdateStats(episodes=stats, learner=learner, finite=all_finite(loss_stats))


register("pqn", PQNConfig, PQN, doc="PQN: Q(lambda) over each rollout, LayerNorm, no replay, no target network")
