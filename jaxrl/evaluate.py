"""Play whole episodes on device with a fixed policy: one env per episode, stepped until all have ended.

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


def play(
    env: Any, env_params: Any, policy: Policy, key: jax.Array, num_episodes: int, max_steps: int | None = None
) -> dict[str, jax.Array]:
    """Returns {"return", "length", "score", "finished"}, each (num_episodes,)."""
    max_steps = default_max_steps(env_params) if max_steps is None else int(max_steps)
    reset_key, key = jax.random.split(key)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, num_episodes), env_params)
    zeros = jnp.zeros(num_episodes, jnp.float32)
    init = {
        "t": jnp.zeros((), jnp.int32),
        "key": key,
        "obs": obs,
        "state": state,
        "alive": jnp.ones(num_episodes, bool),
        "return": zeros,
        "length": jnp.zeros(num_episodes, jnp.int32),
        "score": zeros,
    }

    def body(c: dict) -> dict:
        key, act_key, step_key = jax.random.split(c["key"], 3)
        action = policy(c["obs"], act_key)
        obs, state, reward, terminated, truncated, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(step_key, num_episodes), c["state"], action, env_params
        )
        alive = c["alive"]
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

    out = jax.lax.while_loop(lambda c: c["alive"].any() & (c["t"] < max_steps), body, init)
    return {"return": out["return"], "length": out["length"], "score": out["score"], "finished": ~out["alive"]}
