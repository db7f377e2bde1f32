"""A run's numeric precision (`precision=fp32 | tf32 | bf16`): the network's compute dtype and jax's
default matmul precision while the run's programs are traced.

fp32: float32 throughout, and float32 matmuls and convolutions at full precision. Without this,
      jax leaves the choice to XLA, which on NVIDIA GPUs since Ampere runs them in TensorFloat-32.
tf32: float32 numbers; matmuls and convolutions at TensorFloat-32 precision (inputs rounded to a
      10-bit mantissa, float32 sums) on NVIDIA GPUs, three bfloat16 passes on TPUs. The CPU
      computes in float32 whatever is asked, so on the CPU tf32 is fp32.
bf16: the network's layers compute in bfloat16, forward and backward (inputs, kernels, matmuls,
      activations), from float32 master parameters; the optimizer state stays float32. The network
      casts its outputs (logits, means, values, Q-values) to float32, so log-probs, entropies,
      losses, returns, GAE and TD targets are float32. Matmuls on float32 inputs (the orthogonal
      initializer's) run at full precision, as with fp32.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

PRECISIONS = ("fp32", "tf32", "bf16")
_MATMUL = {"fp32": "float32", "tf32": "tensorfloat32", "bf16": "float32"}  # jax_default_matmul_precision


def compute_dtype(precision: str) -> Any:
    """The dtype the network's layers compute in (their parameters are float32 whatever it is)."""
    return jnp.bfloat16 if precision == "bf16" else jnp.float32


def matmul_precision(precision: str) -> Any:
    """A context in which jax's default matmul and convolution precision is the run's.

    jax reads it when a matmul is traced (it is written into the program), so it must be in force
    while a program is traced, not when it is called.
    """
    return jax.default_matmul_precision(_MATMUL[precision])


def with_matmul_precision(precision: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with the run's matmul precision in force whenever it runs: also while `jax.jit` traces it."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with matmul_precision(precision):
            return fn(*args, **kwargs)

    return wrapped
