"""DQN: acting, replay insertion, sampling and gradient steps as one update of the core loop (`jaxrl.core.loop`).

`DQN(cfg, env, env_params)` holds the static pieces (Q-network, optimizer, replay layout).
One update steps every env `vector_steps` times with an epsilon-greedy policy, writes each vector step into the
on-device replay buffer (`jaxrl.core.replay`), then takes `gradient_steps` gradient steps on
uniformly sampled n-step transitions (double DQN, Huber loss), and moves the target network
when an interval of `target_update_interval` env steps is crossed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxrl.algos.base import (
    Allocation,
    Base,
    EpsilonGreedy,
    TargetNetwork,
    interval_crossed,  # noqa: F401 - its path before TargetNetwork took it
    register,
)
from jaxrl.algos.common import feed_forward_only, linear_epsilon, q_network
from jaxrl.config.schema import AlgoConfig, ConfigError, TrainConfig, agents_per_world, env_groups, float32
from jaxrl.config.validate import in_range, positive
from jaxrl.core import rollout
from jaxrl.core.losses import q_targets
from jaxrl.core.replay import Batch, ReplayBuffer, ReplayState
from jaxrl.core.stats import UpdateStats, all_finite, global_norm


@dataclass
class DQNConfig(AlgoConfig):
    """Deep Q-learning with an on-device replay buffer, target network, n-step returns and double DQN.

    One update collects `train_freq` env steps per seed (or one vector step when num_envs is
    larger) and then takes `gradient_steps` gradient steps, so the replay ratio is
    batch_size * gradient_steps / train_freq sampled transitions per env step.
    """

    name: str = "dqn"  # algorithm id
    hidden: list[int] = field(default_factory=lambda: [120, 84])  # dense layer widths (after convs for cnn)
    # replay capacity in transitions per seed, one per agent per env step (rounded down to whole vector steps)
    buffer_size: int = 10_000
    batch_size: int = 128  # transitions per gradient step
    learning_starts: int = 10_000  # env steps per seed before the first gradient step
    train_freq: int = 4  # env steps per seed (all envs together) per `gradient_steps` gradient steps
    gradient_steps: int = 1  # gradient steps per train_freq env steps
    target_update_interval: int = 500  # env steps per seed between target-network updates
    tau: float = 1.0  # target update weight: 1 copies (hard), < 1 blends (soft, Polyak)
    epsilon_start: float = 1.0  # exploration rate at the start
    epsilon_end: float = 0.05  # exploration rate after the decay
    epsilon_decay: float = 0.5  # fraction of total_timesteps over which epsilon falls linearly
    n_step: int = 1  # n-step returns (1: one-step TD)
    double: bool = True  # double DQN: the online net picks the next action, the target net values it
    adam_eps: float = 1e-8  # Adam's epsilon: larger makes the steps shrink with the gradients once they get tiny
    huber_delta: float = 1.0  # Huber loss threshold

    def validate(self, cfg: TrainConfig) -> None:
        """ConfigError naming the first DQN setting out of range, or a replay too small for one update."""
        feed_forward_only("dqn", self.network)
        for name in ("buffer_size", "batch_size", "train_freq", "gradient_steps", "target_update_interval", "n_step"):
            positive(f"algo.{name}", getattr(self, name))
        if self.learning_starts < 0:
            raise ConfigError(f"algo.learning_starts={self.learning_starts} is invalid: must be >= 0")
        for name in ("tau", "epsilon_start", "epsilon_end", "epsilon_decay"):
            in_range(f"algo.{name}", getattr(self, name), 0, 1)
        if float32(self.tau) == 0:
            raise ConfigError(
                f"algo.tau={self.tau} is invalid: the target network would never move (must be in (0, 1])"
            )
        positive("algo.huber_delta", self.huber_delta)
        positive("algo.adam_eps", self.adam_eps)
        if self.learning_starts >= cfg.total_timesteps:
            raise ConfigError(
                f"algo.learning_starts={self.learning_starts} is invalid: it must be below"
                f" total_timesteps={cfg.total_timesteps:g}, or the run never learns"
            )
        vector_steps, _ = schedule(cfg.num_envs, self.train_freq, self.gradient_steps)
        streams = cfg.num_envs * agents_per_world(cfg)  # one transition per agent per env step
        if self.buffer_size // streams < self.n_step + vector_steps:
            who = "num_envs * env.num_agents" if streams != cfg.num_envs else "num_envs"
            raise ConfigError(
                f"algo.buffer_size={self.buffer_size} is too small: it must hold at least "
                f"(algo.n_step + steps per update) * {who} = {(self.n_step + vector_steps) * streams} transitions"
            )
        if cfg.total_timesteps < vector_steps * cfg.num_envs:
            raise ConfigError(
                f"total_timesteps={cfg.total_timesteps:g} is below one update ({vector_steps * cfg.num_envs})"
            )
        g = env_groups(cfg)
        if self.batch_size % g:
            raise ConfigError(
                f"algo.batch_size={self.batch_size} must divide by env_groups={g}: each group samples as many"
                " transitions from its own envs"
            )


def schedule(num_envs: int, train_freq: int, gradient_steps: int) -> tuple[int, int]:
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


@struct.dataclass
class DQNRunner:
    """Everything a DQN run carries between updates (one seed; a leading seed axis under vmap)."""

    params: Any
    target_params: Any
    opt_state: Any
    replay: ReplayState
    envs: rollout.Streams  # env states, observations (one row per agent of every world), episode sums, env params
    key: jax.Array
    update: jax.Array  # () int32, updates done


class DQN(EpsilonGreedy, TargetNetwork, Base):
    """Static pieces of a DQN run: env, Q-network, optimizer, replay layout and derived sizes."""

    def __init__(self, cfg: TrainConfig, env: Any, env_params: Any):
        super().__init__(cfg, env, env_params)
        obs_space, self.network = q_network(cfg, self.vec, env_params)
        self.num_actions, self.obs_shape = self.network.num_actions, tuple(obs_space.shape)
        self.vector_steps, self.gradient_steps = schedule(cfg.num_envs, self.algo.train_freq, self.algo.gradient_steps)
        self.buffer = ReplayBuffer.for_space(self.algo.buffer_size, self.vec.streams, obs_space)
        self.optimizer = self.optimizer_with(self.algo.lr)  # its state; each step runs at `learning_rate`

    # -- derived sizes -----------------------------------------------------------------------

    @property
    def steps_per_update(self) -> int:
        """Env steps per update per seed."""
        return self.vector_steps * self.cfg.num_envs

    @property
    def first_learning_update(self) -> int:
        """The first update that learns: the one whose env steps reach learning_starts (and fill one n-step window)."""
        threshold = max(self.algo.learning_starts, self.algo.n_step * self.cfg.num_envs)
        return max(0, -(-threshold // self.steps_per_update) - 1)

    def epsilon(self, env_steps: jax.Array) -> jax.Array:
        """Linear decay from epsilon_start to epsilon_end over epsilon_decay of the run (env_steps: float32)."""
        return linear_epsilon(self.algo, self.cfg.total_timesteps, env_steps)

    def memory(self) -> list[Allocation]:
        """The replay buffer: the one large allocation."""
        what = f"the replay buffer ({self.buffer.capacity:,} transitions)"
        return [Allocation(what, self.buffer.nbytes(), "algo.buffer_size")]

    # -- init ----------------------------------------------------------------------------------

    def init(self, key: jax.Array, env_params: Any = None) -> DQNRunner:
        key, net_key, reset_key = jax.random.split(key, 3)
        env_params = self.env_params if env_params is None else env_params  # a sweep member's own
        envs = rollout.reset(self.vec, reset_key, env_params, self.initial_carry(self.vec.streams))
        params = self.network.init(net_key, envs.obs[:1])
        return DQNRunner(
            params=params,
            target_params=params,
            opt_state=self.optimizer.init(params),
            replay=self.buffer.init(),
            envs=envs,
            key=key,
            update=jnp.zeros((), jnp.int32),
        )

    # -- acting --------------------------------------------------------------------------------

    def env_step(self, runner: DQNRunner, draws: tuple[jax.Array, Any], epsilon: jax.Array):
        """Act in every env once (epsilon-greedy) and write the step into the replay buffer."""
        env_keys, exploration = draws
        envs = runner.envs
        action = self.act_with(runner.params, envs.obs, exploration, epsilon)
        envs, step, _, stats = rollout.step(self.vec, envs, action, env_keys)
        replay = self.buffer.add(
            runner.replay, step.obs, action, step.reward, step.final_obs, step.terminated, step.truncated
        )
        return runner.replace(envs=envs, replay=replay), stats

    # -- learning ------------------------------------------------------------------------------

    def loss(self, params: Any, target_params: Any, batch: Batch):
        q = self.network.apply(params, batch.obs)
        q_taken = jnp.take_along_axis(q, batch.action[:, None], axis=-1)[:, 0]
        q_next_target = self.network.apply(target_params, batch.next_obs)
        q_next_online = self.network.apply(params, batch.next_obs) if self.algo.double else q_next_target
        target = jax.lax.stop_gradient(
            q_targets(q_next_target, q_next_online, batch.reward, batch.discount, self.algo.double)
        )
        loss = optax.huber_loss(q_taken, target, delta=self.algo.huber_delta).mean()
        return loss, {"loss": loss, "q_mean": q_taken.mean()}

    def base_optimizer(self, rate: Any) -> optax.GradientTransformation:
        return optax.adam(rate, eps=self.algo.adam_eps)

    def learning_rate(self, update: jax.Array, step: jax.Array) -> float | jax.Array:
        """The learning rate of gradient step `step` of update `update`: lr, or, annealed, linear from lr at
        the first gradient step to 0 after the run's last.

        Worked out from the update counter in float32, not by optax from its int32 step count: a run of
        1e11 env steps can take more than 2^31 gradient steps, where that count stops (and optax
        refuses so long a schedule). Below 2^24 steps it equals optax's linear_schedule bit for bit.
        """
        if not self.algo.anneal_lr:
            return self.algo.lr
        first = self.first_learning_update
        total = float(max(1, (self.num_updates - first) * self.gradient_steps))  # gradient steps the run takes
        count = (update - first).astype(jnp.float32) * self.gradient_steps + step
        return self.algo.lr * (1 - jnp.clip(count, 0, total) / total)

    def gradient_step(
        self, params: Any, opt_state: Any, target_params: Any, replay: ReplayState, key: jax.Array, lr: jax.Array
    ):
        a = self.algo
        batch = self.buffer.sample(replay, key, a.batch_size, a.n_step, a.gamma, self.groups)
        grads, stats = jax.grad(self.loss, has_aux=True)(params, target_params, batch)
        updates, opt_state = self.optimizer_with(lr).update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, {**stats, "grad_norm": global_norm(grads)}

    def update(self, runner: DQNRunner) -> tuple[DQNRunner, UpdateStats]:
        """Act `vector_steps` times, then learn `gradient_steps` times once learning has started."""
        key, act_key, learn_key = jax.random.split(runner.key, 3)
        # Env-step figures in float32 and exact integer rules on the update counter: the env steps
        # themselves pass int32 after 2^31 per seed (jax runs without int64).
        epsilon = self.epsilon(runner.update.astype(jnp.float32) * self.steps_per_update)
        env_key, explore_key = jax.random.split(act_key)
        steps = self.vector_steps  # the update's randomness drawn at once, not split per step
        draws = (self.vec.step_keys(env_key, steps), self.exploration(explore_key, (steps, self.vec.streams)))
        step = lambda r, d: self.env_step(r, d, epsilon)
        runner, stats = jax.lax.scan(step, runner.replace(key=key), draws)
        stats = jax.tree.map(jnp.sum, stats)

        learning = runner.update >= self.first_learning_update

        # A while loop whose trip count XLA cannot prove (it starts at min(update, 0), i.e. 0): the
        # replay enters it as a finished buffer. Inlined (a one-step scan), XLA fused the sampling
        # gathers with the replay write just above and copied the whole buffer every update.
        def learn(carry):
            i, params, opt_state, totals = carry
            lr = self.learning_rate(runner.update, i)
            params, opt_state, stats = self.gradient_step(
                params, opt_state, runner.target_params, runner.replay, jax.random.fold_in(learn_key, i), lr
            )
            return i + 1, params, opt_state, jax.tree.map(jnp.add, totals, stats)

        zeros = {k: jnp.zeros((), jnp.float32) for k in ("loss", "q_mean", "grad_norm")}
        start = jnp.minimum(runner.update, 0)
        _, params, opt_state, totals = jax.lax.while_loop(
            lambda c: c[0] < self.gradient_steps, learn, (start, runner.params, runner.opt_state, zeros)
        )
        loss_stats = {k: v / self.gradient_steps for k, v in totals.items()}
        keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(learning, a, b), new, old)
        params, opt_state = keep(params, runner.params), keep(opt_state, runner.opt_state)

        target = self.move_target(runner.update, learning, params, runner.target_params)
        learner = {k: jnp.where(learning, v, jnp.nan) for k, v in loss_stats.items()}
        learner["epsilon"] = epsilon
        runner = runner.replace(params=params, opt_state=opt_state, target_params=target, update=runner.update + 1)
        finite = ~learning | all_finite(loss_stats)  # before learning starts the figures are NaN by design
        return runner, UpdateStats(episodes=stats, learner=learner, finite=finite)


register("dqn", DQNConfig, DQN, doc="DQN: on-device replay, n-step double-DQN targets, target network")
