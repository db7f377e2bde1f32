"""Pieces several algorithms share: the learning-rate schedule of minibatch epochs (PPO, PQN), the
exact critic pass over truncated rows (PPO, PQN), and the Q-network, exploration rate and
feed-forward check of the value-based ones (DQN, PQN). Algorithms import these from here, never
from each other.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from gymnax.environments import spaces

from jaxrl.config.schema import ConfigError, TrainConfig
from jaxrl.core import groups, networks
from jaxrl.core.precision import compute_dtype
from jaxrl.core.vector import VectorEnv


def epoch_rates(lr: float, anneal: bool, update: jax.Array, num_updates: int, epochs: int, count: int) -> jax.Array:
    """(epochs, count) learning rates of the optimizer steps of update `update` (of `num_updates`),
    `count` minibatches per epoch: `lr`, or, annealed, linear from lr at the run's first step to 0
    after its last (float32 from the update counter; see `OnPolicy.learning_rates`)."""
    shape = (epochs, count)
    if not anneal:
        return jnp.full(shape, lr, jnp.float32)
    per_update = epochs * count
    total = float(num_updates * per_update)  # a Python int past 2^31 would not pass as int32
    steps = update.astype(jnp.float32) * per_update + jnp.arange(per_update).reshape(shape)
    return lr * (1 - jnp.clip(steps, 0, total) / total)


def values_where(value_fn, inputs: Any, mask: jax.Array, rows: int) -> jax.Array:
    """`value_fn(inputs)` on the rows where `mask` holds, 0 elsewhere, evaluated `rows` rows at a time;
    `inputs` is an array or a pytree of them (observation and carry), each with a leading row axis.

    Truncations are rare, so evaluating the critic on a few gathered rows (repeated until every
    masked row is done: exact however many there are) beats a pass over the whole batch.
    """
    n = mask.shape[0]

    def body(carry):
        pending, out = carry
        idx = jnp.nonzero(pending, size=rows, fill_value=n)[0]  # n marks an unused slot
        values = value_fn(jax.tree.map(lambda x: x[jnp.minimum(idx, n - 1)], inputs))
        return pending.at[idx].set(False, mode="drop"), out.at[idx].set(values, mode="drop")

    _, out = jax.lax.while_loop(lambda c: c[0].any(), body, (mask, jnp.zeros(n, jnp.float32)))
    return out


def truncated_values(value_fn, inputs: Any, truncated: jax.Array, num_groups: int) -> jax.Array:
    """`values_where` over a step's streams (leading axis), each env group on its own streams
    (`jaxrl.core.groups`): the bootstrap values of the episodes the step cut short, 0 elsewhere."""
    rows = max(1, truncated.shape[0] // 16 // num_groups)  # a sixteenth of the streams per critic pass
    per_group = lambda inputs, mask: values_where(value_fn, inputs, mask, rows)
    return groups.by_group(per_group, num_groups)(inputs, truncated)


def feed_forward_only(
    algo: str, network: str, why: str = "it has no sequence replay for a recurrent Q-network"
) -> None:
    """ConfigError for a recurrent network on an algorithm that has no recurrent variant (no R2D2 here)."""
    if network in networks.RECURRENT:
        raise ConfigError(
            f"algo.network={network} is invalid with algo={algo}: {why};"
            f" use algo.network=mlp|cnn, or algo=ppo algo.network={network}"
        )


def q_network(cfg: TrainConfig, vec: VectorEnv, env_params: Any) -> tuple[Any, networks.QNetwork]:
    """(one agent's observation space, the Q-network) of a value-based run (DQN, PQN); ConfigError for
    continuous actions or a CNN on flat observations."""
    env, algo = vec.env, cfg.algo
    action_space = vec.action_space(env_params)  # one agent's
    if not isinstance(action_space, spaces.Discrete):
        raise ConfigError(f"algo={algo.name} needs discrete actions; {env.name} has continuous ones (use algo=ppo)")
    obs_space = vec.observation_space(env_params)
    obs_shape = tuple(obs_space.shape)
    if algo.network == "cnn" and len(obs_shape) != 3:
        raise ConfigError(f"algo.network=cnn needs (H, W, C) observations; {env.name} gives {obs_shape}")
    network = networks.QNetwork(
        num_actions=int(action_space.n),
        network=algo.network,
        hidden=tuple(algo.hidden),
        channels=tuple(algo.channels),
        activation=algo.activation,
        obs_ndim=len(obs_shape),
        dtype=compute_dtype(cfg.precision),  # parameters stay float32
        layer_norm=algo.layer_norm,
        codes=observation_codes(env),
    )
    return obs_space, network


def observation_codes(env: Any) -> int:
    """How many codes an observation byte of `env` takes when its network one-hots it (its
    `observation_codes`, through any wrappers), or 0 for observations used as numbers."""
    for _ in range(8):  # wrappers hold the env they wrap as `env` or `_env`
        if env is None:
            break
        if getattr(env, "observation_codes", 0):
            return int(env.observation_codes)
        env = getattr(env, "env", None) or getattr(env, "_env", None)
    return 0


def linear_epsilon(algo: Any, total_timesteps: float, env_steps: jax.Array) -> jax.Array:
    """Linear decay from algo.epsilon_start to algo.epsilon_end over algo.epsilon_decay of the run
    (env_steps: float32 env steps per seed so far)."""
    span = jnp.maximum(algo.epsilon_decay * total_timesteps, 1.0)  # traced when a sweep sets epsilon_decay
    frac = jnp.clip(env_steps / span, 0.0, 1.0)
    return algo.epsilon_start + frac * (algo.epsilon_end - algo.epsilon_start)
