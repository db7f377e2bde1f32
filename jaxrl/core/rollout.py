"""The envs a learner steps, as one record in its runner, and the one vector step every algorithm uses.

`Streams` holds the env states, the current observation, the policy carry and the running
episode sums of every stream (one stream per agent of every world, see `jaxrl.core.vector`).
`step` applies actions, advances the episode sums and resets the carry of streams whose
episode ended; an algorithm adds only what it stores (PPO: log-probs and values; DQN: a replay write).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxrl.core.stats import EpisodeStats, episode_step
from jaxrl.core.vector import VectorEnv


def traced(params: Any, like: Any = None) -> Any:
    """`EnvParams` with every leaf a numpy array of a fixed dtype (int32, float32 or bool), taken from
    the matching leaf of `like` when given (so `reward_step=-1` stays float32 in a float field).

    The same dtypes for every phase keep the compiled chunk's input signature, so switching
    phases never retraces (python scalars would be weakly typed, numpy ones strongly).
    """
    if like is not None:
        reference = traced(like)
        return jax.tree.map(lambda x, ref: np.asarray(x, ref.dtype), params, reference)

    def fix(x: Any) -> np.ndarray:
        if isinstance(x, bool | np.bool_):
            return np.asarray(x, np.bool_)
        if isinstance(x, int | np.integer):
            return np.asarray(x, np.int32)
        if isinstance(x, float | np.floating):
            return np.asarray(x, np.float32)
        x = np.asarray(x)
        return x.astype(np.float32) if x.dtype == np.float64 else x.astype(np.int32) if x.dtype == np.int64 else x

    return jax.tree.map(fix, params)


@struct.dataclass
class Streams:
    """Every env of one seed and what the learner tracks per stream."""

    state: Any  # (num_envs, ...) env states
    obs: jax.Array  # (streams, *obs_shape) observation of `state`, in the env's compact dtype
    episode_return: jax.Array  # (streams,) float32, return of the running episodes
    episode_length: jax.Array  # (streams,) int32, steps of the running episodes
    params: Any  # EnvParams the envs step with (traced: a curriculum changes them between chunks)
    carry: Any = None  # policy carry per stream (leading axis streams); None for feed-forward policies


@struct.dataclass
class Step:
    """One vector step as a learner sees it, every field in streams."""

    obs: jax.Array  # (streams, *obs_shape) observation the action was chosen on
    action: jax.Array  # (streams, ...) action taken
    reward: jax.Array  # (streams,) float32
    terminated: jax.Array  # (streams,) bool: the episode ended; no bootstrap
    truncated: jax.Array  # (streams,) bool: the episode was cut; bootstrap from final_obs
    final_obs: jax.Array  # (streams, *obs_shape) observation reached, before any auto-reset


def reset(vec: VectorEnv, key: jax.Array, params: Any, carry: Any = None) -> Streams:
    """Fresh envs; `carry` is the policy's initial carry for all streams (None: feed-forward).

    The runner keeps `params` with fixed dtypes (`traced`), so a curriculum's phases feed the
    same compiled chunk; a sweep member's params come in as traced values of those dtypes.
    """
    obs, state = vec.reset(key, params)
    if not any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(params)):  # a sweep's are traced already
        params = traced(params)
    return Streams(
        state=state,
        obs=obs,
        episode_return=jnp.zeros(vec.streams, jnp.float32),
        episode_length=jnp.zeros(vec.streams, jnp.int32),
        params=params,
        carry=carry,
    )


def reset_carry(carry: Any, done: jax.Array, initial: Any) -> Any:
    """The carry with the streams whose episode ended set back to `initial` (None stays None)."""
    expand = lambda x: done.reshape(done.shape + (1,) * (x.ndim - 1))
    return jax.tree.map(lambda c, i: jnp.where(expand(c), i, c), carry, initial)


def step(
    vec: VectorEnv, streams: Streams, action: jax.Array, keys: jax.Array, carry: Any = None, initial_carry: Any = None
) -> tuple[Streams, Step, dict[str, Any], EpisodeStats]:
    """Step every env once with `action` (streams) and one key per world (`VectorEnv.step_keys`);
    `carry` is the policy's carry after acting.

    Returns the advanced streams, the step, the env's info (per world, plus `final_observation`
    in streams) and the episode sums of this step.
    """
    obs, state, reward, terminated, truncated, info = vec.step(keys, streams.state, action, streams.params)
    done = terminated | truncated
    ep_return, ep_length, stats = episode_step(
        reward, done, info["world_done"], info, streams.episode_return, streams.episode_length
    )
    if carry is not None:
        carry = reset_carry(carry, done, initial_carry)
    record = Step(streams.obs, action, reward, terminated, truncated, info["final_observation"])
    streams = streams.replace(state=state, obs=obs, episode_return=ep_return, episode_length=ep_length, carry=carry)
    return streams, record, info, stats
