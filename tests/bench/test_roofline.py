"""bench.roofline: a compiled program's work counted with its loops' trip counts, the machine's ceilings,
and the verdict on what bounds a run."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import pytest

import jaxrl
from jaxrl import build
from jaxrl.bench import roofline
from jaxrl.bench.parts.train import purejaxrl_settings


def compiled(fn, *args, donate=()):
    return jax.jit(fn, donate_argnums=donate).lower(*args).compile()


def test_a_dot_counts_what_xla_counts_and_a_scan_its_trip_count_times():
    x, w = jnp.ones((64, 128)), jnp.ones((128, 32))
    once = compiled(lambda x, w: jnp.tanh(x @ w), x, w)
    xla = once.cost_analysis()
    xla = xla[0] if isinstance(xla, list) else xla
    assert roofline.hlo_cost(once).matmul_flops == xla["flops"] == 2 * 64 * 128 * 32

    w = jnp.ones((128, 128))

    def scanned(x, w):
        return jax.lax.scan(lambda c, _: (jnp.tanh(c @ w), None), x, None, length=10)[0]

    cost = roofline.hlo_cost(compiled(scanned, x, w))
    assert cost.matmul_flops == 10 * 2 * 64 * 128 * 128  # XLA's cost_analysis says 1x
    assert cost.untimed_loops == 0
    assert cost.flops > cost.matmul_flops  # the tanh is arithmetic too


def test_a_loop_with_a_traced_count_counts_once_and_says_so():
    def loop(x, w, n):
        return jax.lax.fori_loop(0, n, lambda i, c: c @ w, x)

    cost = roofline.hlo_cost(compiled(loop, jnp.ones((8, 16)), jnp.ones((16, 16)), 5))
    assert cost.matmul_flops == 2 * 8 * 16 * 16
    assert cost.untimed_loops == 1


def test_a_loop_to_a_constant_from_a_start_xla_cannot_see_counts_the_constant():
    """DQN's gradient steps: `i < gradient_steps` from min(update, 0), which XLA cannot prove is 0."""

    def loop(x, w, u):
        return jax.lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] @ w), (jnp.minimum(u, 0), x))[1]

    cost = roofline.hlo_cost(compiled(loop, jnp.ones((8, 16)), jnp.ones((16, 16)), 3))
    assert cost.matmul_flops == 4 * 2 * 8 * 16 * 16 and cost.untimed_loops == 0


def test_a_convolution_counts_two_flops_per_multiply_add():
    x, k = jnp.ones((2, 10, 10, 3)), jnp.ones((3, 3, 3, 8))
    conv = lambda x, k: jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    assert roofline.hlo_cost(compiled(conv, x, k)).matmul_flops == 2 * (2 * 10 * 10 * 8) * (3 * 3 * 3)


def test_bytes_are_what_kernels_read_and_write_and_an_in_place_update_moves_only_the_update():
    x = jnp.ones((1 << 20,), jnp.float32)
    assert roofline.hlo_cost(compiled(lambda v: v * 2.0 + 1.0, x)).bytes == 2 * x.nbytes

    buffer, row = jnp.zeros((4096, 256)), jnp.ones((1, 256))
    put = lambda b, r, i: jax.lax.dynamic_update_slice(b, r, (i, 0))
    moved = roofline.hlo_cost(compiled(put, buffer, row, 7, donate=(0,))).bytes
    assert moved < 4 * row.nbytes  # not the 4 MiB buffer


def test_ppo_on_cartpole_does_the_matmul_work_its_network_and_epochs_say():
    """PureJaxRL's CartPole PPO, 64x64 actor and critic: per env step one forward in the rollout, then per
    epoch a forward and a backward (weight gradients for every layer, input gradients past the first)."""
    settings = purejaxrl_settings(seed=0)

    program = build.program(jaxrl.make_config(env="CartPole-v1", **settings), chunk=1)
    program.compile()
    per_step = roofline.program_cost(program)
    macs = lambda sizes: sum(a * b for a, b in itertools.pairwise(sizes))
    forward = macs([4, 64, 64, 2]) + macs([4, 64, 64, 1])
    backward_inputs = macs([64, 64, 2]) + macs([64, 64, 1])
    epochs = settings["algo.update_epochs"]
    expected = 2 * (forward + epochs * (2 * forward + backward_inputs))
    assert per_step["matmul_flops"] == pytest.approx(expected, rel=0.03)


@pytest.mark.parametrize(
    "matmul,moved,verdict",
    [
        (80e9, 1e9, "compute-bound"),
        (5e9, 9e9, "memory-bound"),
        (20e9, 2e9, "overhead-bound"),
        (20e9, 30e9, "overhead-bound"),  # above streaming: from cache, 30% of the cached ceiling
        (20e9, 70e9, "memory-bound"),  # 70% of the cached ceiling
    ],
)
def test_the_verdict_follows_the_larger_share_above_half(matmul, moved, verdict):
    ceiling = {"matmul_fp32_flops": 100e9, "matmul_bf16_flops": 200e9, "stream_bytes_per_s": 10e9}
    ceiling["cache_bytes_per_s"] = 100e9
    got = roofline.bound({"matmul_flops": matmul, "flops": matmul, "bytes": moved}, ceiling)
    assert got["bound"] == verdict
    assert got["matmul_share"] == pytest.approx(matmul / 100e9)
    assert roofline.bound({"matmul_flops": 80e9, "bytes": 0}, ceiling, "bf16")["bound"] == "overhead-bound"


def test_ceilings_are_measured_rates():
    c = roofline.ceilings(size=128, stream_bytes=1 << 22, repeats=2)
    assert c["matmul_fp32_flops"] > 1e8 and c["matmul_bf16_flops"] > 1e7 and c["stream_bytes_per_s"] > 1e8
    assert c["cache_bytes_per_s"] > 1e8
    assert "GFLOP/s fp32" in roofline.describe_ceilings(c)


def test_the_command_names_a_bad_override_in_one_line(capsys):
    assert roofline.main(["env=nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: unknown env 'nope'; valid: snake") and "\n" not in err
