"""Actor-critic networks (MLP, small CNN, or a GRU/LSTM after either) with a categorical or diagonal-Gaussian
policy head, and Q-networks; float32 parameters, computed in float32 or bfloat16 (`jaxrl.core.precision`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu, "silu": nn.silu}
RECURRENT = ("gru", "lstm")
NETWORKS = ("mlp", "cnn", *RECURRENT)
TORSOS = ("mlp", "cnn", "none")  # what a recurrent network puts before its cell


def orthogonal(scale: float = 1.0, iterations: int = 60):
    """Orthogonal initializer built from matmuls only (Newton-Schulz polar factor of a Gaussian matrix).

    flax's `orthogonal` calls LAPACK's QR; batched under `vmap` over seeds, jaxlib 0.10's CPU
    QR kernel waits on the same 2-thread pool that runs it and deadlocks (seen here, about
    half the runs). The polar factor of a Gaussian matrix is a uniformly random orthogonal
    (or semi-orthogonal) matrix, the same distribution QR gives.
    """

    def init(key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        tall = (max(rows, cols), min(rows, cols))
        x = jax.random.normal(key, tall, jnp.float32)
        x = x / jnp.linalg.norm(x)  # every singular value in (0, 1]: Newton-Schulz converges
        eye = jnp.eye(tall[1], dtype=jnp.float32)
        x = jax.lax.fori_loop(0, iterations, lambda _, x: x @ (1.5 * eye - 0.5 * x.T @ x), x)
        x = x if rows >= cols else x.T
        return (scale * x).reshape(shape).astype(dtype)

    return init


SMALL_BATCH = 128  # rows up to which `matmul_cpu` pays on the CPU (see there)


@jax.custom_vjp
def matmul_cpu(x: jax.Array, w: jax.Array) -> jax.Array:
    """x @ w (x: (N, in), w: (in, out)) whose weight gradient x^T g takes an explicit transpose.

    XLA's CPU backend folds x^T into a dot that contracts over the batch axis and hands it to
    Eigen, which for small batches is slower than the plain dot of a transposed copy.
    `optimization_barrier` keeps the transpose from being folded back. It speeds up small batches and
    slows large ones, so `Dense` takes this path for batches of at most `SMALL_BATCH` rows on the CPU only
    (figures: docs/benchmarks.md, "Measured choices in the code").
    """
    return x @ w


def _matmul_fwd(x: jax.Array, w: jax.Array) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
    return x @ w, (x, w)


def _matmul_bwd(res: tuple[jax.Array, jax.Array], g: jax.Array) -> tuple[jax.Array, jax.Array]:
    x, w = res
    return g @ w.T, jax.lax.optimization_barrier(x.T) @ g


matmul_cpu.defvjp(_matmul_fwd, _matmul_bwd)


class Dense(nn.Module):
    """`nn.Dense` (same parameter names and initializers), with `matmul_cpu`'s weight gradient for
    small batches when jax's default backend is the CPU.

    Parameters are float32; with `dtype=bfloat16` the input, kernel and bias are cast to it, so the
    matmul, the output and the backward pass's matmuls are bfloat16 (as `nn.Dense(dtype=...)`).
    """

    features: int
    kernel_init: nn.initializers.Initializer
    bias_init: nn.initializers.Initializer = nn.initializers.zeros
    dtype: Any = jnp.float32  # compute dtype (see `jaxrl.core.precision`)

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        kernel = self.param("kernel", self.kernel_init, (x.shape[-1], self.features), jnp.float32)
        bias = self.param("bias", self.bias_init, (self.features,), jnp.float32)
        x, kernel, bias = (a.astype(self.dtype) for a in (x, kernel, bias))
        rows = x.shape[0] if x.ndim == 2 else None  # a symbolic batch (an ONNX export's) is not small
        small = isinstance(rows, int) and rows <= SMALL_BATCH and jax.default_backend() == "cpu"
        return (matmul_cpu(x, kernel) if small else x @ kernel) + bias


def _dense(features: int, scale: float = np.sqrt(2), dtype: Any = jnp.float32) -> Dense:
    return Dense(features, kernel_init=orthogonal(scale), bias_init=nn.initializers.zeros, dtype=dtype)


class Torso(nn.Module):
    """(N, ...) observations -> (N, features). `cnn` expects (N, H, W, C); `mlp` flattens."""

    network: str
    hidden: Sequence[int]
    channels: Sequence[int]
    activation: str
    dtype: Any = jnp.float32  # compute dtype of every layer (parameters are float32)
    layer_norm: bool = False  # LayerNorm between each dense layer and its activation
    codes: int = 0  # > 0: each observation byte is one of this many codes, one-hot here (a trailing axis)

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        act = ACTIVATIONS[self.activation]
        if self.codes:  # one byte a cell in the env and in the rollout; the one-hot exists only here
            x = jax.nn.one_hot(obs, self.codes, dtype=self.dtype)
        else:
            x = obs.astype(self.dtype)  # compact (uint8/bool) observations become floats only here
        if self.network == "cnn":
            for c in self.channels:  # kernels float32 (flax's default param_dtype)
                x = act(nn.Conv(c, (3, 3), padding="SAME", kernel_init=orthogonal(np.sqrt(2)), dtype=self.dtype)(x))
        x = x.reshape(x.shape[0], -1)
        for h in self.hidden:
            x = _dense(h, dtype=self.dtype)(x)
            x = act(nn.LayerNorm(dtype=self.dtype)(x) if self.layer_norm else x)
        return x


class ActorCritic(nn.Module):
    """Actor and critic torsos (separate, or one shared when `shared`); `__call__` gives (policy params, value).

    A shared torso halves the network's cost (rollout and SGD alike); separate torsos keep the
    value loss from pulling on the policy's features.
    """

    num_actions: int  # discrete: number of actions; continuous: action dimension
    continuous: bool
    network: str = "mlp"
    hidden: Sequence[int] = (64, 64)
    channels: Sequence[int] = (16, 32)
    activation: str = "tanh"
    obs_ndim: int = 1  # dimensions of one observation, so batches of any rank work
    shared: bool = False
    dtype: Any = jnp.float32  # compute dtype of the layers; outputs and log_std are float32 whatever it is
    layer_norm: bool = False  # LayerNorm in the torsos' dense layers
    codes: int = 0  # observation codes one-hot in the torso (see Torso)

    def setup(self) -> None:
        kw = {"network": self.network, "hidden": self.hidden, "channels": self.channels, "activation": self.activation}
        kw["layer_norm"], kw["codes"] = self.layer_norm, self.codes
        self.actor_torso = Torso(**kw, dtype=self.dtype)
        self.critic_torso = self.actor_torso if self.shared else Torso(**kw, dtype=self.dtype)
        self.policy_head = _dense(self.num_actions, 0.01, self.dtype)
        self.value_head = _dense(1, 1.0, self.dtype)
        if self.continuous:
            self.log_std = self.param("log_std", nn.initializers.zeros, (self.num_actions,), jnp.float32)

    def _flat(self, obs: jax.Array) -> tuple[jax.Array, tuple[int, ...]]:
        batch = obs.shape[: obs.ndim - self.obs_ndim]
        return obs.reshape((-1,) + obs.shape[obs.ndim - self.obs_ndim :]), batch

    def value(self, obs: jax.Array) -> jax.Array:
        flat, batch = self._flat(obs)
        return self.value_head(self.critic_torso(flat))[..., 0].reshape(batch).astype(jnp.float32)

    def __call__(self, obs: jax.Array) -> tuple[jax.Array | tuple[jax.Array, jax.Array], jax.Array]:
        flat, batch = self._flat(obs)
        features = self.actor_torso(flat)
        out = self.policy_head(features).reshape(batch + (self.num_actions,)).astype(jnp.float32)
        value = self.value_head(features if self.shared else self.critic_torso(flat))[..., 0]
        value = value.reshape(batch).astype(jnp.float32)
        if self.continuous:
            return (out, jnp.broadcast_to(self.log_std, out.shape)), value
        return out, value


# -- recurrent networks -------------------------------------------------------------------------


def initial_carry(cell: str, batch: int, hidden: int) -> Any:
    """A fresh carry for `batch` streams, zeros: (batch, hidden) for a GRU, (cell state, hidden) for an LSTM."""
    h = jnp.zeros((batch, hidden), jnp.float32)
    return (h, h) if cell == "lstm" else h


def reset_where(carry: Any, reset: jax.Array) -> Any:
    """The carry with the rows where `reset` (batch,) holds set back to the initial carry (zeros)."""
    return jax.tree.map(lambda c: jnp.where(reset[:, None], jnp.zeros((), c.dtype), c), carry)


def _per_gate(init, gates: int):
    """An initializer that fills each of `gates` equal column blocks with its own draw of `init`."""

    def fill(key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
        block = shape[:-1] + (shape[-1] // gates,)
        return jnp.concatenate([init(k, block, dtype) for k in jax.random.split(key, gates)], axis=-1)

    return fill


class RecurrentCore(nn.Module):
    """A GRU or LSTM run over a sequence, with the carry reset where an episode starts.

    The input projection of every step is one matmul before the scan; inside the scan each step
    does only the recurrent matmul and the gates. Each gate's kernel block gets its own orthogonal
    draw; the LSTM's forget-gate bias starts at 1.
    """

    cell: str  # gru | lstm
    hidden: int
    dtype: Any = jnp.float32  # compute dtype of the matmuls; the carry stays float32

    @nn.compact
    def __call__(self, carry: Any, x: jax.Array, resets: jax.Array) -> tuple[Any, jax.Array]:
        """carry (B, H) (GRU) or (c, h) (LSTM); x (T, B, F); resets (T, B) bool: the carry is set back to
        zeros before step t where it holds. Returns (the carry after the last step, outputs (T, B, H))."""
        gates = 4 if self.cell == "lstm" else 3
        size = gates * self.hidden
        steps, batch = x.shape[:2]
        bias_init = nn.initializers.zeros
        if self.cell == "lstm":  # gate order i, f, g, o: forget bias 1
            bias_init = lambda key, shape, dtype=jnp.float32: (
                jnp.zeros(shape, dtype).at[self.hidden : 2 * self.hidden].set(1)
            )
        projected = Dense(size, kernel_init=_per_gate(orthogonal(1.0), gates), bias_init=bias_init, dtype=self.dtype)(
            x.reshape(steps * batch, -1)
        ).reshape(steps, batch, size)
        kernel = self.param("recurrent_kernel", _per_gate(orthogonal(1.0), gates), (self.hidden, size), jnp.float32)
        kernel = kernel.astype(self.dtype)
        h_bias = (
            self.param("candidate_bias", nn.initializers.zeros, (self.hidden,), jnp.float32) if gates == 3 else None
        )
        n = self.hidden

        def step(carry: Any, inputs: tuple[jax.Array, jax.Array]) -> tuple[Any, jax.Array]:
            xt, reset = inputs
            carry = reset_where(carry, reset)
            h = carry[1] if self.cell == "lstm" else carry
            hh = (h.astype(self.dtype) @ kernel).astype(jnp.float32)
            xt = xt.astype(jnp.float32)
            if self.cell == "lstm":
                c = carry[0]
                i, f, g, o = (xt[:, k * n : (k + 1) * n] + hh[:, k * n : (k + 1) * n] for k in range(4))
                c = nn.sigmoid(f) * c + nn.sigmoid(i) * jnp.tanh(g)
                h = nn.sigmoid(o) * jnp.tanh(c)
                return (c, h), h
            r = nn.sigmoid(xt[:, :n] + hh[:, :n])
            z = nn.sigmoid(xt[:, n : 2 * n] + hh[:, n : 2 * n])
            candidate = jnp.tanh(xt[:, 2 * n :] + r * (hh[:, 2 * n :] + h_bias))
            h = (1 - z) * candidate + z * h
            return h, h

        return jax.lax.scan(step, carry, (projected, resets))


class RecurrentActorCritic(nn.Module):
    """A feed-forward torso (MLP, CNN, or none), then a GRU or LSTM, then policy and value heads.

    Actor and critic share the torso and the cell (as PureJaxRL's recurrent PPO does). `__call__`
    runs sequences, time-major; `step` acts one step for a batch of streams.
    """

    num_actions: int
    continuous: bool
    cell: str = "gru"  # gru | lstm
    torso: str = "mlp"  # mlp | cnn | none: what the observation goes through before the cell
    rnn_hidden: int = 128
    hidden: Sequence[int] = (64,)
    channels: Sequence[int] = (16, 32)
    activation: str = "tanh"
    obs_ndim: int = 1
    dtype: Any = jnp.float32
    layer_norm: bool = False
    codes: int = 0  # observation codes one-hot in the torso (see Torso)

    def setup(self) -> None:
        none = self.torso == "none"
        self.features = Torso(
            "mlp" if none else self.torso,
            () if none else self.hidden,
            self.channels,
            self.activation,
            dtype=self.dtype,
            layer_norm=self.layer_norm,
            codes=self.codes,
        )
        self.core = RecurrentCore(self.cell, self.rnn_hidden, self.dtype)
        self.policy_head = _dense(self.num_actions, 0.01, self.dtype)
        self.value_head = _dense(1, 1.0, self.dtype)
        if self.continuous:
            self.log_std = self.param("log_std", nn.initializers.zeros, (self.num_actions,), jnp.float32)

    def __call__(self, carry: Any, obs: jax.Array, resets: jax.Array):
        """carry for B streams; obs (T, B, *obs_shape); resets (T, B) bool (the carry restarts before step t).
        Returns (carry after the last step, policy head output (T, B, ...), value (T, B))."""
        steps, batch = obs.shape[:2]
        x = self.features(obs.reshape((steps * batch,) + obs.shape[2:])).reshape(steps, batch, -1)
        carry, out = self.core(carry, x, resets)
        out = out.reshape(steps * batch, -1)
        head = self.policy_head(out).reshape(steps, batch, self.num_actions).astype(jnp.float32)
        value = self.value_head(out)[..., 0].reshape(steps, batch).astype(jnp.float32)
        if self.continuous:
            return carry, (head, jnp.broadcast_to(self.log_std, head.shape)), value
        return carry, head, value

    def step(self, carry: Any, obs: jax.Array):
        """One step of B streams: obs (B, *obs_shape) -> (carry, policy head output (B, ...), value (B,))."""
        carry, pi, value = self(carry, obs[None], jnp.zeros((1, obs.shape[0]), bool))
        return carry, jax.tree.map(lambda x: x[0], pi), value[0]


class QNetwork(nn.Module):
    """Torso and one linear head: an action value per discrete action."""

    num_actions: int
    network: str = "mlp"
    hidden: Sequence[int] = (120, 84)
    channels: Sequence[int] = (16, 32)
    activation: str = "relu"
    obs_ndim: int = 1
    dtype: Any = jnp.float32  # compute dtype of the layers; Q-values are float32 whatever it is
    layer_norm: bool = False  # LayerNorm in the torso's dense layers
    codes: int = 0  # observation codes one-hot in the torso (see Torso)

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        batch = obs.shape[: obs.ndim - self.obs_ndim]
        flat = obs.reshape((-1,) + obs.shape[obs.ndim - self.obs_ndim :])
        x = Torso(self.network, self.hidden, self.channels, self.activation, self.dtype, self.layer_norm, self.codes)(
            flat
        )
        q = _dense(self.num_actions, 1.0, self.dtype)(x)
        return q.reshape(batch + (self.num_actions,)).astype(jnp.float32)


# -- distributions: pure functions over the policy head's output -------------------------------


def sample(key: jax.Array, pi, continuous: bool) -> jax.Array:
    """Draw actions from logits (discrete) or (mean, log_std) (continuous): `sample_with` fresh `noise`."""
    head = pi[0] if continuous else pi
    return sample_with(pi, noise(key, head.shape[:-1], head.shape[-1], continuous), continuous)


def noise(key: jax.Array, batch: tuple[int, ...], num_actions: int, continuous: bool) -> jax.Array:
    """The randomness `sample_with` needs for `batch` actions, drawn at once (a rollout's worth in
    one call): Gumbel noise per logit (discrete) or standard normals (continuous)."""
    draw = jax.random.normal if continuous else jax.random.gumbel
    return draw(key, (*batch, num_actions))


def sample_with(pi, noise: jax.Array, continuous: bool) -> jax.Array:
    """Actions from pre-drawn `noise`: argmax(logits + Gumbel) (what `jax.random.categorical`
    computes) or mean + std * normal."""
    if continuous:
        mean, log_std = pi
        return mean + jnp.exp(log_std) * noise
    return jnp.argmax(pi + noise, axis=-1)


def mode(pi, continuous: bool) -> jax.Array:
    """Most likely action."""
    return pi[0] if continuous else jnp.argmax(pi, axis=-1)


def log_prob(pi, action: jax.Array, continuous: bool) -> jax.Array:
    """Log-probability of `action` under the policy."""
    if continuous:
        mean, log_std = pi
        z = (action - mean) * jnp.exp(-log_std)
        return jnp.sum(-0.5 * z**2 - log_std - 0.5 * jnp.log(2 * jnp.pi), axis=-1)
    logp = jax.nn.log_softmax(pi)
    # A one-hot sum, not a gather: the gradient of a gather is a scatter-add, slow on CPU.
    picked = jnp.arange(pi.shape[-1]) == action[..., None]
    return jnp.sum(jnp.where(picked, logp, 0.0), axis=-1)


def entropy(pi, continuous: bool) -> jax.Array:
    """Entropy of the policy."""
    if continuous:
        return jnp.sum(pi[1] + 0.5 * jnp.log(2 * jnp.pi * jnp.e), axis=-1)
    logp = jax.nn.log_softmax(pi)
    return -jnp.sum(jnp.exp(logp) * logp, axis=-1)
