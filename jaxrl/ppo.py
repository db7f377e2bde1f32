"""PPO fused with the env: rollout, GAE and all epochs x minibatches of SGD inside `lax.scan`.

`PPO(cfg, env, env_params)` holds the static pieces; `init(key)` builds a `Runner`,
`update(runner)` performs one rollout-and-learn step, `run_chunk(runner, n)` scans `n`
updates (a fixed-length scan whose tail is skipped by `lax.cond`, so one compile serves every
chunk), and `train(key)` runs the whole budget as one pure function.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct
from gymnax.environments import spaces

from jaxrl import losses, networks
from jaxrl.config import ConfigError, TrainConfig, ppo_minibatches
from jaxrl.curriculum import traced
from jaxrl.vector import VectorEnv


@struct.dataclass
class Runner:
    """Everything a training run carries between updates (one seed; a leading seed axis under vmap)."""

    params: Any
    opt_state: Any
    env_state: Any  # (num_envs, ...) env states
    obs: jax.Array  # (num_envs, *obs_shape) observation of env_state
    key: jax.Array  # PRNG key
    episode_return: jax.Array  # (num_envs,) float32, return of the running episodes
    episode_length: jax.Array  # (num_envs,) int32, steps of the running episodes
    update: jax.Array  # () int32, updates done
    obs_stats: ObsStats | None = None  # running observation statistics when algo.normalize_obs
    env_params: Any = None  # EnvParams the envs step with (traced: a curriculum changes them between chunks)


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

    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    next_value: jax.Array  # value of the observation the step reached, before any auto-reset (see `collect`)
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array


def episode_stats(reward, done, info, ep_return, ep_length):
    """Running episode sums per stream, and the sums over episodes that ended this step.

    With several agents per world (`info["world_done"]` has fewer entries than `done`), the
    world episodes are counted too (`world_episodes`): a world's return is the sum of its
    agents' returns, and the env's `score` is per world.
    """
    ep_return = ep_return + reward
    ep_length = ep_length + 1
    stats = {
        "episodes": done.sum(dtype=jnp.float32),
        "return_sum": jnp.where(done, ep_return, 0.0).sum(),
        "length_sum": jnp.where(done, ep_length, 0).sum(dtype=jnp.float32),
    }
    world_done = info.get("world_done", done)
    if world_done.shape != done.shape:
        stats["world_episodes"] = world_done.sum(dtype=jnp.float32)
    if "score" in info:
        stats["score_sum"] = jnp.where(world_done, info["score"], 0).sum(dtype=jnp.float32)
    return jnp.where(done, 0.0, ep_return), jnp.where(done, 0, ep_length), stats


def values_where(value_fn, obs: jax.Array, mask: jax.Array, rows: int) -> jax.Array:
    """`value_fn(obs)` on the rows where `mask` holds, 0 elsewhere, evaluated `rows` rows at a time.

    Truncations are rare, so evaluating the critic on a few gathered rows (repeated until every
    masked row is done: exact however many there are) beats a pass over the whole batch.
    """
    n = mask.shape[0]

    def body(carry):
        pending, out = carry
        idx = jnp.nonzero(pending, size=rows, fill_value=n)[0]  # n marks an unused slot
        values = value_fn(obs[jnp.minimum(idx, n - 1)])
        return pending.at[idx].set(False, mode="drop"), out.at[idx].set(values, mode="drop")

    _, out = jax.lax.while_loop(lambda c: c[0].any(), body, (mask, jnp.zeros(n, jnp.float32)))
    return out


def skip_inactive(update, runner: Any, num_active: jax.Array, length: int) -> tuple[Any, dict]:
    """Scan `length` calls of `update`; slots from `num_active` on pass the runner through with zero stats.

    One compiled chunk of fixed length then serves every chunk, the shorter last one included.
    """
    stats_shape = jax.eval_shape(update, runner)[1]

    def slot(r: Any, i: jax.Array):
        skip = lambda r: (r, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), stats_shape))
        return jax.lax.cond(i < num_active, update, skip, r)

    return jax.lax.scan(slot, runner, jnp.arange(length))


class Chunked:
    """`run_chunk` and `train` for an algorithm with `init(key)`, `update(runner)` and `num_updates`."""

    def run_chunk(self, runner: Any, num_active: jax.Array, length: int) -> tuple[Any, dict]:
        """`length` update slots; the first `num_active` run, the rest pass the runner through (zeros stats)."""
        return skip_inactive(self.update, runner, num_active, length)

    def train(self, key: jax.Array) -> tuple[Any, dict]:
        """The whole run as one pure function of the key (for notebooks and sweeps)."""
        runner = self.init(key)
        return jax.lax.scan(lambda r, _: self.update(r), runner, None, length=self.num_updates)


class PPO(Chunked):
    """Static pieces of a PPO run: env, network, optimizer and derived sizes."""

    def __init__(self, cfg: TrainConfig, env: Any, env_params: Any):
        self.cfg, self.algo = cfg, cfg.algo
        self.env, self.env_params = env, env_params
        self.vec = VectorEnv(env, cfg.num_envs)  # several agents per world are extra streams, one network
        action_space = self.vec.action_space(env_params)  # one agent's
        self.continuous = isinstance(action_space, spaces.Box)
        if self.continuous:
            self.action_low, self.action_high = action_space.low, action_space.high
            num_actions = int(math.prod(action_space.shape))
        else:
            num_actions = int(action_space.n)
        obs_shape = tuple(self.vec.observation_space(env_params).shape)  # one agent's view
        if self.algo.network == "cnn" and len(obs_shape) != 3:
            raise ConfigError(f"algo.network=cnn needs (H, W, C) observations; {env.name} gives {obs_shape}")
        self.network = networks.ActorCritic(
            num_actions=num_actions,
            continuous=self.continuous,
            network=self.algo.network,
            hidden=tuple(self.algo.hidden),
            channels=tuple(self.algo.channels),
            activation=self.algo.activation,
            obs_ndim=len(obs_shape),
            shared=self.algo.shared_torso,
        )
        self.obs_shape = obs_shape
        self.num_minibatches = ppo_minibatches(cfg)
        steps = self.num_updates * self.algo.update_epochs * self.num_minibatches
        lr = optax.linear_schedule(self.algo.lr, 0.0, steps) if self.algo.anneal_lr else self.algo.lr
        self.optimizer = optax.chain(optax.clip_by_global_norm(self.algo.max_grad_norm), optax.adam(lr, eps=1e-5))

    # -- derived sizes -------------------------------------------------------------

    @property
    def batch_size(self) -> int:
        """Transitions per update per seed (one per agent per env step)."""
        return self.vec.streams * self.algo.num_steps

    @property
    def steps_per_update(self) -> int:
        """Env (world) steps per update per seed."""
        return self.cfg.num_envs * self.algo.num_steps

    @property
    def minibatch_size(self) -> int:
        size, rest = divmod(self.batch_size, self.num_minibatches)
        assert rest == 0, f"{self.num_minibatches} minibatches must divide {self.batch_size}"
        return size

    @property
    def bootstrap_rows(self) -> int:
        """Rows per critic pass over truncated envs' final observations (see `values_where`)."""
        return max(1, self.vec.streams // 16)

    @property
    def num_updates(self) -> int:
        """Updates in the run (total_timesteps rounded down to whole updates)."""
        return max(1, int(self.cfg.total_timesteps) // self.steps_per_update)

    # -- init -------------------------------------------------------------------------------

    def init(self, key: jax.Array) -> Runner:
        """Fresh network, optimizer and envs for one seed."""
        key, net_key, reset_key = jax.random.split(key, 3)
        obs, env_state = self.vec.reset(reset_key, self.env_params)
        params = self.network.init(net_key, obs[:1])
        n = self.vec.streams
        return Runner(
            params=params,
            opt_state=self.optimizer.init(params),
            env_state=env_state,
            obs=obs,
            key=key,
            episode_return=jnp.zeros(n, jnp.float32),
            episode_length=jnp.zeros(n, jnp.int32),
            update=jnp.zeros((), jnp.int32),
            obs_stats=ObsStats.create(self.obs_shape) if self.algo.normalize_obs else None,
            env_params=traced(self.env_params),
        )

    # -- rollout ----------------------------------------------------------------------------

    def prepare(self, obs_stats: ObsStats | None, obs: jax.Array) -> jax.Array:
        """Network input: the observation, normalized by the running statistics when they are kept."""
        return obs if obs_stats is None else obs_stats.normalize(obs)

    def policy(self, params: Any, obs_stats: ObsStats | None = None, greedy: bool = True):
        """`(obs, key) -> actions` for `jaxrl.evaluate.play`: the most likely action, or a sampled one."""

        def act(obs: jax.Array, key: jax.Array) -> jax.Array:
            pi, _ = self.network.apply(params, self.prepare(obs_stats, obs))
            action = networks.mode(pi, self.continuous) if greedy else networks.sample(key, pi, self.continuous)
            return jnp.clip(action, self.action_low, self.action_high) if self.continuous else action

        return act

    def runner_policy(self, runner: Runner, greedy: bool = True):
        """The policy a runner holds (its params and observation statistics)."""
        return self.policy(runner.params, runner.obs_stats, greedy)

    def env_step(self, runner: Runner, key: jax.Array) -> tuple[Runner, tuple[Transition, dict]]:
        """Act in every env once."""
        act_key, step_key = jax.random.split(key)
        pi, value = self.network.apply(runner.params, self.prepare(runner.obs_stats, runner.obs))
        action = networks.sample(act_key, pi, self.continuous)
        log_prob = networks.log_prob(pi, action, self.continuous)
        env_action = jnp.clip(action, self.action_low, self.action_high) if self.continuous else action
        obs, env_state, reward, terminated, truncated, info = self.vec.step(
            step_key, runner.env_state, env_action, runner.env_params
        )
        value_fn = lambda o: self.network.apply(runner.params, self.prepare(runner.obs_stats, o), method="value")
        # Only truncated steps bootstrap from final_observation; `collect` fills in the rest.
        truncated_value = values_where(value_fn, info["final_observation"], truncated, self.bootstrap_rows)
        done = terminated | truncated
        ep_return, ep_length, stats = episode_stats(reward, done, info, runner.episode_return, runner.episode_length)
        learn_reward = reward * self.algo.reward_scale
        transition = Transition(
            runner.obs, action, log_prob, value, truncated_value, learn_reward, terminated, truncated
        )
        runner = runner.replace(obs=obs, env_state=env_state, episode_return=ep_return, episode_length=ep_length)
        return runner, (transition, stats)

    def collect(self, runner: Runner, key: jax.Array) -> tuple[Runner, Transition, dict]:
        """Roll out num_steps in every env; episode stats summed over the rollout.

        The value of the observation step t reached is the next step's value unless the episode
        ended there; a truncated step's comes from its final_observation (`env_step`), and a
        terminated step's is never used.
        """
        keys = jax.random.split(key, self.algo.num_steps)
        runner, (traj, stats) = jax.lax.scan(self.env_step, runner, keys)
        last_value = self.network.apply(runner.params, self.prepare(runner.obs_stats, runner.obs), method="value")
        following = jnp.concatenate([traj.value[1:], last_value[None]])
        traj = traj.replace(next_value=jnp.where(traj.truncated, traj.next_value, following))
        return runner, traj, jax.tree.map(jnp.sum, stats)

    # -- learning --------------------------------------------------------------------------

    def loss(self, params: Any, obs_stats: ObsStats | None, batch: Transition, advantages, targets):
        pi, value = self.network.apply(params, self.prepare(obs_stats, batch.obs))
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

    def minibatch_step(self, carry, minibatch, obs_stats: ObsStats | None = None):
        params, opt_state = carry
        batch, advantages, targets = minibatch
        grads, stats = jax.grad(self.loss, has_aux=True)(params, obs_stats, batch, advantages, targets)
        updates, opt_state = self.optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), stats

    def epoch(self, carry, key: jax.Array, data, obs_stats: ObsStats | None = None):
        """One pass over the rollout in shuffled minibatches."""
        perm = jax.random.permutation(key, self.batch_size)

        def split(x: jax.Array) -> jax.Array:
            x = x.reshape((self.batch_size,) + x.shape[2:])[perm]
            return x.reshape((self.num_minibatches, self.minibatch_size) + x.shape[1:])

        step = lambda c, minibatch: self.minibatch_step(c, minibatch, obs_stats)
        return jax.lax.scan(step, carry, jax.tree.map(split, data))

    def update(self, runner: Runner) -> tuple[Runner, dict]:
        """Collect one rollout and learn from it for update_epochs epochs."""
        key, rollout_key, epoch_key = jax.random.split(runner.key, 3)
        runner, traj, stats = self.collect(runner.replace(key=key), rollout_key)
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
        data = (traj, advantages, targets)
        epoch_keys = jax.random.split(epoch_key, self.algo.update_epochs)
        obs_stats = runner.obs_stats  # the statistics the rollout acted with
        (params, opt_state), loss_stats = jax.lax.scan(
            lambda c, k: self.epoch(c, k, data, obs_stats), carry, epoch_keys
        )
        stats.update(jax.tree.map(jnp.mean, loss_stats))
        if obs_stats is not None:
            obs_stats = obs_stats.update(traj.obs)
        runner = runner.replace(params=params, opt_state=opt_state, update=runner.update + 1, obs_stats=obs_stats)
        return runner, stats


def make_train(cfg: TrainConfig, env: Any, env_params: Any) -> PPO:
    """Static PPO pieces for this config; `make_train(...).train` is pure and jittable."""
    return PPO(cfg, env, env_params)
