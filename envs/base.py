"""A gymnax Environment whose auto-reset observes once."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import environment, spaces


def hash32(x: jax.Array) -> jax.Array:
    """Murmur3's 32-bit finalizer: a bijection of uint32 with full avalanche."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


INT32_MAX = 2**31 - 1  # env parameters are int32 and float32 inside the compiled step


def fusion_boundary(tree: Any, token: jax.Array | None = None) -> Any:
    """`tree` unchanged, but computed into buffers of its own before any consumer reads it.

    XLA's CPU fusion folds a producer into every consumer that reads it, and a consumer that reads
    a value per element it writes recomputes the producer per element: an observation of 300 cells
    recomputed the whole env step (and the policy's action draw before it) 300 times per env. A
    one-trip while loop whose trip count XLA cannot prove is a fusion boundary (it starts at
    min(token, 0), with `token` non-negative; by default a word of the tree's first leaf, shifted
    so that it is); the select inside keeps the loop from being removed. `optimization_barrier`
    does not stop fusion on CPU. Under vmap the loop is batched: one pass over the tree's values.
    """
    if token is None:
        word = jnp.ravel(jax.tree.leaves(tree)[0])[0].astype(jnp.uint32) >> 1
        token = jax.lax.bitcast_convert_type(word, jnp.int32)

    def body(carry):
        i, x = carry
        return i + 1, jax.tree.map(lambda a: jnp.where(i > 1, jnp.zeros_like(a), a), x)

    start = jnp.minimum(jnp.asarray(token, jnp.int32), 0)
    return jax.lax.while_loop(lambda c: c[0] < 1, body, (start, tree))[1]


def whole(x: Any) -> float:
    """x if it is a whole number that fits int32, else NaN (so that every range check on it fails)."""
    x = float(x)
    return x if math.isfinite(x) and x == int(x) and abs(x) <= INT32_MAX else math.nan


def finite32(x: Any) -> bool:
    """Whether x is a finite float32 (1e39 is not: it becomes inf inside the step)."""
    with np.errstate(over="ignore"):
        return bool(np.isfinite(np.float32(float(x))))


def pick(values: tuple[int, ...], index: jax.Array) -> jax.Array:
    """values[index] for a small static table, as selects (no gather under vmap)."""
    out = jnp.int32(values[-1])
    for i in range(len(values) - 2, -1, -1):
        out = jnp.where(index == i, jnp.int32(values[i]), out)
    return out


GIF_PIXELS = 320  # the long side of replay frames (jaxrl's GIF, the Gymnasium adapter's rgb_array)


def upscale(frames: np.ndarray, pixels: int) -> np.ndarray:
    """(T, H, W, 3) -> (T, H*p, W*p, 3) with p chosen so the long side is about `pixels`."""
    p = max(1, pixels // max(frames.shape[1:3]))
    return frames.repeat(p, axis=1).repeat(p, axis=2)


class AgentsDiscrete(spaces.Discrete):
    """One `Discrete(n)` action per agent of a world: shape `(num_agents,)`, int32.

    A subclass of `Discrete` with its `n`, so code that reads `n` sees one agent's choices;
    `sample` draws every agent's action independently.
    """

    def __init__(self, n: int, num_agents: int):
        super().__init__(n)
        self.shape = (num_agents,)

    def __repr__(self) -> str:
        return f"AgentsDiscrete({self.n}, num_agents={self.shape[0]})"

    def contains(self, x: jax.Array) -> jax.Array:
        return jnp.logical_and(jnp.shape(x) == self.shape, jnp.all(super().contains(x)))


class Env(environment.Environment):
    """gymnax 1.0 base class with a cheaper auto-reset for envs whose `get_obs` is a pure function of state.

    gymnax's `step` builds the observation of the reset state and of the stepped state and then
    selects between them. Here the states are selected first and observed once; the stepped
    observation is still returned as `info["final_observation"]` (XLA drops it when unread). The
    stepped state passes a `fusion_boundary` before it is observed, so XLA does not recompute the step
    for every observed cell (a second boundary on the continued state gained nothing, so there is none).
    Subclasses fill `step_env`, `reset_env`, `get_obs`, `is_truncated` and the spaces.

    Randomness: `step` hands the same key to `step_env` and `reset_env`, which must draw with
    `uniform(key, salt, n)` using different salts. Hashing the key's bits is a few integer
    operations, where a threefry split per env per step costs as much as the whole Snake step.
    """

    STEP_SALT = 0x5EED_0001
    RESET_SALT = 0x5EED_0002

    @staticmethod
    def uniform(key: jax.Array, salt: int, count: int) -> jax.Array:
        """(count,) float32 uniform in [0, 1) from the key's bits and a salt (distinct salts, independent draws)."""
        if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            key = jax.random.key_data(key)
        words = key.reshape(-1).astype(jnp.uint32)
        mixed = hash32(words[0] ^ hash32(words[-1] ^ jnp.uint32(salt)))
        draws = hash32(mixed ^ (jnp.arange(count, dtype=jnp.uint32) * jnp.uint32(0x9E3779B9)))
        return (draws >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)

    def check_params(self, params: Any) -> None:
        """ValueError naming the first parameter out of range and what is allowed; concrete
        (host) params only. The trainer calls it on the config's and every curriculum phase's."""

    @staticmethod
    def _require(params: Any, name: str, ok: bool, allowed: str) -> None:
        if not ok:
            raise ValueError(f"{name}={getattr(params, name)!r} is invalid: must be {allowed}")

    def autoreset_state(self, key: jax.Array, stepped: Any, params: Any) -> Any:
        """The state an episode that just ended continues from: `reset_env`'s, unless a subclass
        prepares it during the episode (it is computed beside every step)."""
        return self.reset_env(key, params)[1]

    @partial(jax.jit, static_argnames=("self",))
    def step(
        self, key: jax.Array, state: Any, action: jax.Array, params: Any = None
    ) -> tuple[jax.Array, Any, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
        if params is None:
            params = self.default_params
        _, stepped, reward, terminated, info = self.step_env(key, state, action, params)
        stepped = fusion_boundary(stepped)  # observed from buffers, not recomputed per cell
        truncated = self.is_truncated(stepped, params)
        done = terminated | truncated
        fresh = self.autoreset_state(key, stepped, params)
        state = jax.tree.map(lambda new, old: jnp.where(done, new, old), fresh, stepped)
        info = {
            **info,
            "terminated": terminated,
            "truncated": truncated,
            "final_observation": self.get_obs(stepped, params),
        }
        return self.get_obs(state, params), state, reward, terminated, truncated, info
