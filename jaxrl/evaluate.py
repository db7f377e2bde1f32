"""Play whole episodes on device with a fixed policy: one env per episode, stepped until all have ended.

With several agents per world, every agent acts with the policy and an episode's return is
the world's (the sum over its agents).

`play(env, env_params, policy, key, num_episodes)` runs `num_episodes` envs side by side in one
`lax.while_loop` and returns each episode's return, length and score (when the env reports
one). An env stops counting at its first episode end; the loop stops when every episode has
ended or after `max_steps`. `policy(obs, key) -> actions` acts on a batch of observations;
the algorithms build theirs with `PPO.policy` and `DQN.policy`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Policy = Callable[[jax.Array, jax.Array], jax.Array]


def default_max_steps(env_params: Any) -> int:
    """The env's own episode limit, else a generous guard."""
    return int(getattr(env_params, "max_steps_in_episode", 100_000))


def _start(env: Any, env_params: Any, key: jax.Array, num_episodes: int) -> dict[str, Any]:
    reset_key, key = jax.random.split(key)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, num_episodes), env_params)
    zeros = jnp.zeros(num_episodes, jnp.float32)
    return {
        "t": jnp.zeros((), jnp.int32),
        "key": key,
        "obs": obs,
        "state": state,
        "alive": jnp.ones(num_episodes, bool),
        "return": zeros,
        "length": jnp.zeros(num_episodes, jnp.int32),
        "score": zeros,
    }


def _advance(env: Any, env_params: Any, policy: Policy, c: dict[str, Any]) -> dict[str, Any]:
    """Every env steps once; episodes that already ended stop counting."""
    num_episodes = c["alive"].shape[0]
    agents = int(getattr(env, "num_agents", 1))
    key, act_key, step_key = jax.random.split(c["key"], 3)
    if agents > 1:  # every agent acts with the shared policy; the world's return sums theirs
        obs = c["obs"]
        action = policy(obs.reshape((num_episodes * agents, *obs.shape[2:])), act_key).reshape(num_episodes, agents)
    else:
        action = policy(c["obs"], act_key)
    obs, state, reward, terminated, truncated, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
        jax.random.split(step_key, num_episodes), c["state"], action, env_params
    )
    alive = c["alive"]
    reward = reward.reshape(num_episodes, -1).sum(axis=1)
    ended = alive & (terminated | truncated)
    score = jnp.where(ended, info["score"].astype(jnp.float32), c["score"]) if "score" in info else c["score"]
    return {
        "t": c["t"] + 1,
        "key": key,
        "obs": obs,
        "state": state,
        "alive": alive & ~ended,
        "return": c["return"] + jnp.where(alive, reward, 0.0),
        "length": c["length"] + alive,
        "score": score,
    }


def reports_score(env: Any, env_params: Any) -> bool:
    """Whether the env's step info carries a `score` (checked on shapes only)."""

    def probe(key: jax.Array):
        _, state = env.reset(key, env_params)
        return env.step(key, state, env.action_space(env_params).sample(key), env_params)[-1]

    return "score" in jax.eval_shape(probe, jax.random.key(0))


def play(
    env: Any, env_params: Any, policy: Policy, key: jax.Array, num_episodes: int, max_steps: int | None = None
) -> dict[str, jax.Array]:
    """Returns {"return", "length", "finished"} and "score" when the env reports one, each (num_episodes,)."""
    max_steps = default_max_steps(env_params) if max_steps is None else int(max_steps)
    out = jax.lax.while_loop(
        lambda c: c["alive"].any() & (c["t"] < max_steps),
        lambda c: _advance(env, env_params, policy, c),
        _start(env, env_params, key, num_episodes),
    )
    result = {"return": out["return"], "length": out["length"], "finished": ~out["alive"]}
    return {**result, "score": out["score"]} if reports_score(env, env_params) else result


def record(
    env: Any, env_params: Any, policy: Policy, key: jax.Array, num_episodes: int, index: int, length: int, render
) -> jax.Array:
    """Frames `render(state)` (any pytree) of episode `index` of the same `play(...)` call (same key and batch), one per step.

    `length` is that episode's length from `play`; the frames show the state before each of
    its `length` actions (the auto-reset after the last one is not shown).
    """
    pick = lambda c: render(jax.tree.map(lambda x: x[index], c["state"]))

    def step(c, _):
        c = _advance(env, env_params, policy, c)
        return c, pick(c)

    c = _start(env, env_params, key, num_episodes)
    first = pick(c)
    _, rest = jax.lax.scan(step, c, None, length=max(length - 1, 0))
    return jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, rest)
