"""DQN fused with the env: acting, replay insertion, sampling and gradient steps inside `lax.scan`.

`DQN(cfg, env, env_params)` holds the static pieces, with the same surface as `PPO`: `init(key)`,
`update(runner)`, `run_chunk(runner, n, length)` and a pure `train(key)`. One update steps every
env `vector_steps` times with an epsilon-greedy policy, writes each vector step into the
on-device replay buffer (`jaxrl.replay`), then takes `gradient_steps` gradient steps on
uniformly sampled n-step transitions (double DQN, Huber loss), and moves the target network
when an interval of `target_update_interval` env steps is crossed.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct
from gymnax.environments import spaces

from jaxrl import networks
from jaxrl.config import ConfigError, TrainConfig, dqn_schedule
from jaxrl.curriculum import traced
from jaxrl.ppo import Chunked, episode_stats
from jaxrl.replay import Batch, ReplayBuffer, ReplayState
from jaxrl.vector import VectorEnv


@struct.dataclass
class DQNRunner:
    """Everything a DQN run carries between updates (one seed; a leading seed axis under vmap)."""

    params: Any
    target_params: Any
    opt_state: Any
    replay: ReplayState
    env_state: Any  # (num_envs, ...) env states
    obs: jax.Array  # (streams, *obs_shape): one row per agent of every world
    key: jax.Array
    episode_return: jax.Array  # (streams,) float32
    episode_length: jax.Array  # (streams,) int32
    update: jax.Array  # () int32, updates done
    env_params: Any = None  # EnvParams the envs step with (traced: a curriculum changes them between chunks)


def q_targets(
    q_next_target: jax.Array, q_next_online: jax.Array, reward: jax.Array, discount: jax.Array, double: bool
) -> jax.Array:
    """reward + discount * Q_target(s', a') with a' = argmax Q_online(s') (double) or argmax Q_target(s')."""
    if double:
        best = jnp.argmax(q_next_online, axis=-1)
        bootstrap = jnp.take_along_axis(q_next_target, best[..., None], axis=-1)[..., 0]
    else:
        bootstrap = q_next_target.max(axis=-1)
    return reward + discount * bootstrap


class DQN(Chunked):
    """Static pieces of a DQN run: env, Q-network, optimizer, replay layout and derived sizes."""

    def __init__(self, cfg: TrainConfig, env: Any, env_params: Any):
        self.cfg, self.algo = cfg, cfg.algo
        self.env, self.env_params = env, env_params
        self.vec = VectorEnv(env, cfg.num_envs)  # several agents per world are extra streams, one Q-network
        action_space = self.vec.action_space(env_params)  # one agent's
        if not isinstance(action_space, spaces.Discrete):
            raise ConfigError(f"algo=dqn needs discrete actions; {env.name} has continuous ones (use algo=ppo)")
        self.num_actions = int(action_space.n)
        obs_space = self.vec.observation_space(env_params)
        self.obs_shape = tuple(obs_space.shape)
        if self.algo.network == "cnn" and len(self.obs_shape) != 3:
            raise ConfigError(f"algo.network=cnn needs (H, W, C) observations; {env.name} gives {self.obs_shape}")
        self.network = networks.QNetwork(
            num_actions=self.num_actions,
            network=self.algo.network,
            hidden=tuple(self.algo.hidden),
            channels=tuple(self.algo.channels),
            activation=self.algo.activation,
            obs_ndim=len(self.obs_shape),
        )
        self.vector_steps, self.gradient_steps = dqn_schedule(
            cfg.num_envs, self.algo.train_freq, self.algo.gradient_steps
        )
        self.buffer = ReplayBuffer.for_space(self.algo.buffer_size, self.vec.streams, obs_space)
        total_grad_steps = self.num_updates * self.gradient_steps
        lr = optax.linear_schedule(self.algo.lr, 0.0, total_grad_steps) if self.algo.anneal_lr else self.algo.lr
        self.optimizer = optax.chain(optax.clip_by_global_norm(self.algo.max_grad_norm), optax.adam(lr))

    # -- derived sizes -----------------------------------------------------------------------

    @property
    def steps_per_update(self) -> int:
        """Env steps per update per seed."""
        return self.vector_steps * self.cfg.num_envs

    @property
    def num_updates(self) -> int:
        return max(1, int(self.cfg.total_timesteps) // self.steps_per_update)

    def epsilon(self, env_steps: jax.Array) -> jax.Array:
        """Linear decay from epsilon_start to epsilon_end over epsilon_decay of the run."""
        a = self.algo
        span = max(a.epsilon_decay * self.cfg.total_timesteps, 1.0)
        frac = jnp.clip(env_steps / span, 0.0, 1.0)
        return a.epsilon_start + frac * (a.epsilon_end - a.epsilon_start)

    # -- init ----------------------------------------------------------------------------------

    def init(self, key: jax.Array) -> DQNRunner:
        key, net_key, reset_key = jax.random.split(key, 3)
        obs, env_state = self.vec.reset(reset_key, self.env_params)
        params = self.network.init(net_key, obs[:1])
        n = self.vec.streams
        return DQNRunner(
            params=params,
            target_params=params,
            opt_state=self.optimizer.init(params),
            replay=self.buffer.init(),
            env_state=env_state,
            obs=obs,
            key=key,
            episode_return=jnp.zeros(n, jnp.float32),
            episode_length=jnp.zeros(n, jnp.int32),
            update=jnp.zeros((), jnp.int32),
            env_params=traced(self.env_params),
        )

    # -- acting --------------------------------------------------------------------------------

    def act(self, params: Any, obs: jax.Array, key: jax.Array, epsilon: jax.Array) -> jax.Array:
        """Epsilon-greedy actions for a batch of observations."""
        explore_key, random_key = jax.random.split(key)
        greedy = jnp.argmax(self.network.apply(params, obs), axis=-1)
        random = jax.random.randint(random_key, greedy.shape, 0, self.num_actions)
        return jnp.where(jax.random.uniform(explore_key, greedy.shape) < epsilon, random, greedy)

    def policy(self, params: Any, epsilon: float = 0.0):
        """`(obs, key) -> actions` for `jaxrl.evaluate.play`: greedy in Q, or epsilon-greedy."""
        return lambda obs, key: self.act(params, obs, key, jnp.float32(epsilon))

    def runner_policy(self, runner: DQNRunner, greedy: bool = True):
        """The policy a runner holds: greedy, or epsilon-greedy at the final exploration rate."""
        return self.policy(runner.params, 0.0 if greedy else self.algo.epsilon_end)

    def env_step(self, runner: DQNRunner, key: jax.Array, epsilon: jax.Array):
        act_key, step_key = jax.random.split(key)
        action = self.act(runner.params, runner.obs, act_key, epsilon)
        obs, env_state, reward, terminated, truncated, info = self.vec.step(
            step_key, runner.env_state, action, runner.env_params
        )
        replay = self.buffer.add(
            runner.replay, runner.obs, action, reward, info["final_observation"], terminated, truncated
        )
        ep_return, ep_length, stats = episode_stats(
            reward, terminated | truncated, info, runner.episode_return, runner.episode_length
        )
        runner = runner.replace(
            obs=obs, env_state=env_state, replay=replay, episode_return=ep_return, episode_length=ep_length
        )
        return runner, stats

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

    def gradient_step(self, params: Any, opt_state: Any, target_params: Any, replay: ReplayState, key: jax.Array):
        batch = self.buffer.sample(replay, key, self.algo.batch_size, self.algo.n_step, self.algo.gamma)
        grads, stats = jax.grad(self.loss, has_aux=True)(params, target_params, batch)
        updates, opt_state = self.optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, stats

    def update(self, runner: DQNRunner) -> tuple[DQNRunner, dict]:
        """Act `vector_steps` times, then learn `gradient_steps` times once learning has started."""
        key, act_key, learn_key = jax.random.split(runner.key, 3)
        steps_before = runner.update * self.steps_per_update
        epsilon = self.epsilon(steps_before)
        step = lambda r, k: self.env_step(r, k, epsilon)
        runner, stats = jax.lax.scan(step, runner.replace(key=key), jax.random.split(act_key, self.vector_steps))
        stats = jax.tree.map(jnp.sum, stats)

        steps_after = steps_before + self.steps_per_update
        learning = steps_after >= max(self.algo.learning_starts, self.algo.n_step * self.cfg.num_envs)

        # A while loop whose trip count XLA cannot prove (it starts at min(update, 0), i.e. 0): the
        # replay enters it as a finished buffer. Inlined (a one-step scan), XLA fused the sampling
        # gathers with the replay write just above and copied the whole buffer every update
        # (1M Snake transitions: 6.5 ms per update instead of 1.9).
        def learn(carry):
            i, params, opt_state, totals = carry
            params, opt_state, stats = self.gradient_step(
                params, opt_state, runner.target_params, runner.replay, jax.random.fold_in(learn_key, i)
            )
            return i + 1, params, opt_state, jax.tree.map(jnp.add, totals, stats)

        zeros = {"loss": jnp.zeros((), jnp.float32), "q_mean": jnp.zeros((), jnp.float32)}
        start = jnp.minimum(runner.update, 0)
        _, params, opt_state, totals = jax.lax.while_loop(
            lambda c: c[0] < self.gradient_steps, learn, (start, runner.params, runner.opt_state, zeros)
        )
        loss_stats = {k: v / self.gradient_steps for k, v in totals.items()}
        keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(learning, a, b), new, old)
        params, opt_state = keep(params, runner.params), keep(opt_state, runner.opt_state)

        interval = self.algo.target_update_interval
        move = learning & (steps_after // interval > steps_before // interval)
        tau = self.algo.tau
        target = jax.tree.map(lambda p, t: jnp.where(move, tau * p + (1 - tau) * t, t), params, runner.target_params)
        stats.update({k: jnp.where(learning, v, jnp.nan) for k, v in loss_stats.items()})
        stats["epsilon"] = epsilon
        runner = runner.replace(params=params, opt_state=opt_state, target_params=target, update=runner.update + 1)
        return runner, stats


def make_train(cfg: TrainConfig, env: Any, env_params: Any) -> DQN:
    """Static DQN pieces for this config; `make_train(...).train` is pure and jittable."""
    return DQN(cfg, env, env_params)
