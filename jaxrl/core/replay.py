"""On-device circular replay buffer with n-step sampling.

Layout: time-major rows of one vector env step, `(rows, num_envs, ...)`, so an insertion is one
`dynamic_update_slice` and the n steps after a transition of env `e` are the next rows of
column `e`. Each transition stores its own next observation (gymnax's `final_observation` at
an episode end), so truncated episodes bootstrap from the state they really reached.

Observations keep their compact dtype; binary ones (a `Box(0, 1)` of uint8 or bool, as
Snake's and the grid worlds') are bit-packed, 8 cells per byte: 1M Snake 10x10 transitions
with both observations take ~84 MB instead of ~600 MB.

Written here rather than taken from flashbax: flashbax 0.1.3 (March 2025) predates the pinned
jax, stores full observations, and has no sampling of n-step windows cut at episode ends.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import struct

from jaxrl.core.groups import group_major, merge_groups
from jaxrl.core.groups import keys as group_keys
from jaxrl.envs.kernels import fusion_boundary


def materialize(tree, token: jax.Array):
    """`tree` unchanged, computed into buffers before any consumer reads it (`envs.kernels.fusion_boundary`).

    XLA's CPU fusion folded the producer of an observation (the whole env step) into the fused
    write of the replay, recomputing it for every stored element (every bit, when packed), which
    cost the Snake DQN several times the env step itself. `token`: a non-negative value XLA cannot
    prove is one (the count of steps written).
    """
    return fusion_boundary(tree, token)


@struct.dataclass
class ReplayState:
    obs: jax.Array  # (rows, num_envs, *stored_shape) observations, packed when binary
    next_obs: jax.Array  # (rows, num_envs, *stored_shape) observation each step reached (before any reset)
    action: jax.Array  # (rows, num_envs) int32
    reward: jax.Array  # (rows, num_envs) float32
    terminated: jax.Array  # (rows, num_envs) bool: no bootstrap
    done: jax.Array  # (rows, num_envs) bool: terminated or truncated, ends an n-step window
    written: jax.Array  # () int32, vector steps written (once full, kept in [rows, 2 rows)); next row: written % rows


@struct.dataclass
class Batch:
    obs: jax.Array  # (B, *obs_shape)
    action: jax.Array  # (B,)
    reward: jax.Array  # (B,) discounted sum of up to n rewards
    discount: jax.Array  # (B,) gamma^m, or 0 when the window ended by termination
    next_obs: jax.Array  # (B, *obs_shape) observation to bootstrap from


class ObsCodec:
    """How observations are stored: binary ones (a `Box(0, 1)` of uint8 or bool, as Snake's and
    the grid worlds') bit-packed 8 cells per byte, others in their own dtype. The replay and PPO's
    rollout store through it."""

    def __init__(self, obs_shape: tuple[int, ...], obs_dtype, binary: bool):
        self.obs_shape = tuple(obs_shape)
        self.obs_dtype = jnp.dtype(obs_dtype)
        self.binary = binary
        self.obs_size = math.prod(self.obs_shape)

    @staticmethod
    def is_binary(space) -> bool:
        """Whether a gymnax `Box` space holds only 0s and 1s in uint8 or bool."""
        dtype = jnp.dtype(space.dtype)
        return (
            (dtype == jnp.uint8 or dtype == jnp.bool_)
            and bool(jnp.all(jnp.asarray(space.low) == 0))
            and bool(jnp.all(jnp.asarray(space.high) == 1))
        )

    @classmethod
    def for_space(cls, space) -> ObsCodec:
        return cls(space.shape, space.dtype, cls.is_binary(space))

    @property
    def stored_shape(self) -> tuple[int, ...]:
        return (-(-self.obs_size // 8),) if self.binary else self.obs_shape

    @property
    def stored_dtype(self):
        return jnp.dtype(jnp.uint8) if self.binary else self.obs_dtype

    @property
    def stored_bytes(self) -> int:
        """Bytes of one stored observation."""
        return math.prod(self.stored_shape) * self.stored_dtype.itemsize

    def encode(self, obs: jax.Array) -> jax.Array:
        """(..., *obs_shape) -> (..., *stored_shape)."""
        if not self.binary:
            return obs.astype(self.obs_dtype)
        lead = obs.shape[: obs.ndim - len(self.obs_shape)]
        return jnp.packbits(obs.reshape(lead + (self.obs_size,)) != 0, axis=-1)

    def decode(self, stored: jax.Array) -> jax.Array:
        """(..., *stored_shape) -> (..., *obs_shape) in the env's dtype."""
        if not self.binary:
            return stored
        lead = stored.shape[:-1]
        bits = jnp.unpackbits(stored, axis=-1, count=self.obs_size)
        return bits.reshape(lead + self.obs_shape).astype(self.obs_dtype)


class ReplayBuffer(ObsCodec):
    """Static shape of a buffer; the data lives in a `ReplayState` (a pytree that jit, vmap and scan carry)."""

    def __init__(self, capacity: int, num_envs: int, obs_shape: tuple[int, ...], obs_dtype, binary: bool):
        super().__init__(obs_shape, obs_dtype, binary)
        self.rows = capacity // num_envs
        if self.rows < 1:
            raise ValueError(f"replay capacity {capacity} is below one vector step ({num_envs} envs)")
        self.num_envs = num_envs

    @classmethod
    def for_space(cls, capacity: int, num_envs: int, space) -> ReplayBuffer:
        """A buffer for a gymnax `Box` observation space; binary spaces are bit-packed."""
        return cls(capacity, num_envs, space.shape, space.dtype, ObsCodec.is_binary(space))

    @property
    def capacity(self) -> int:
        return self.rows * self.num_envs

    def nbytes(self) -> int:
        """Device bytes of one buffer."""
        return self.capacity * (2 * self.stored_bytes + 4 + 4 + 1 + 1)

    # -- state ------------------------------------------------------------------------------------

    def init(self) -> ReplayState:
        shape = (self.rows, self.num_envs)
        return ReplayState(
            obs=jnp.zeros(shape + self.stored_shape, self.stored_dtype),
            next_obs=jnp.zeros(shape + self.stored_shape, self.stored_dtype),
            action=jnp.zeros(shape, jnp.int32),
            reward=jnp.zeros(shape, jnp.float32),
            terminated=jnp.zeros(shape, bool),
            done=jnp.zeros(shape, bool),
            written=jnp.zeros((), jnp.int32),
        )

    def add(self, state: ReplayState, obs, action, reward, next_obs, terminated, truncated) -> ReplayState:
        """Write one vector step (each argument has a leading num_envs axis) over the oldest row."""
        row = state.written % self.rows
        obs, next_obs = materialize((obs, next_obs), state.written)
        put = lambda buf, x: jax.lax.dynamic_update_index_in_dim(buf, x.astype(buf.dtype), row, axis=0)
        return state.replace(
            obs=put(state.obs, self.encode(obs)),
            next_obs=put(state.next_obs, self.encode(next_obs)),
            action=put(state.action, action),
            reward=put(state.reward, reward),
            terminated=put(state.terminated, terminated),
            done=put(state.done, terminated | truncated),
            written=self.advance(state.written),
        )

    def advance(self, written: jax.Array) -> jax.Array:
        """The write count after one more vector step. Once the buffer is full only the count mod rows
        matters, so it wraps within [rows, 2 * rows): a run of 2^31 vector steps would overflow int32."""
        return jnp.where(written >= self.rows, self.rows + (written - self.rows + 1) % self.rows, written + 1)

    def filled(self, state: ReplayState) -> jax.Array:
        """Rows holding data."""
        return jnp.minimum(state.written, self.rows)

    def sample(
        self, state: ReplayState, key: jax.Array, batch_size: int, n_step: int, gamma: float, groups: int = 1
    ) -> Batch:
        """Uniform transitions among the filled rows whose n-step window is written, with n-step targets.

        The window of a transition at (row t, env e) is rows t..t+n-1 of env e, cut after the
        first step that ended an episode; the bootstrap comes from that last step's next
        observation, discounted by gamma^m (m steps summed), and is 0 if it terminated.
        Needs at least n_step filled rows.

        With `groups` > 1 (`jaxrl.core.groups`) each group of num_envs / groups consecutive env columns
        gives batch_size / groups of the transitions, drawn from its own columns with its own key,
        so a device holding a group's columns samples them without reading another's.
        """
        if groups == 1:
            return self.sample_columns(state, key, batch_size, n_step, gamma, self.num_envs)
        split = lambda x: x if x.ndim == 0 else group_major(x, groups, 1)  # (groups, rows, columns / groups, ...)
        columns = self.num_envs // groups
        draw = lambda part, k: self.sample_columns(part, k, batch_size // groups, n_step, gamma, columns)
        batch = jax.vmap(draw, in_axes=(ReplayState(0, 0, 0, 0, 0, 0, None), 0))(
            jax.tree.map(split, state), group_keys(key, groups)
        )
        return jax.tree.map(lambda x: merge_groups(x, 0), batch)

    def sample_columns(
        self, state: ReplayState, key: jax.Array, batch_size: int, n_step: int, gamma: float, columns: int
    ) -> Batch:
        """`sample` from a buffer of `columns` env columns (all of them, or one group's)."""
        filled = self.filled(state)
        oldest = (state.written - filled) % self.rows
        row_key, env_key = jax.random.split(key)
        offset = jax.random.randint(row_key, (batch_size,), 0, jnp.maximum(filled - n_step + 1, 1))
        t = (oldest + offset) % self.rows
        e = jax.random.randint(env_key, (batch_size,), 0, columns)

        ret = jnp.zeros(batch_size, jnp.float32)
        open_ = jnp.ones(batch_size, bool)  # the window has not hit an episode end yet
        steps = jnp.zeros(batch_size, jnp.float32)  # rewards summed so far (m)
        last = t
        terminated = jnp.zeros(batch_size, bool)
        for k in range(n_step):
            tk = (t + k) % self.rows
            ret = ret + jnp.where(open_, gamma**k * state.reward[tk, e], 0.0)
            last = jnp.where(open_, tk, last)
            terminated = jnp.where(open_, state.terminated[tk, e], terminated)
            steps = steps + open_
            open_ = open_ & ~state.done[tk, e]
        discount = jnp.where(terminated, 0.0, jnp.float32(gamma) ** steps)
        return Batch(
            obs=self.decode(state.obs[t, e]),
            action=state.action[t, e],
            reward=ret,
            discount=discount,
            next_obs=self.decode(state.next_obs[last, e]),
        )
