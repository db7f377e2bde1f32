"""`precision=fp32 | tf32 | bf16`: what each puts into the traced programs (matmul operand dtypes and
precision attributes), float32 parameters and optimizer state under bf16, the run's config.yaml and resume."""

import csv
import math

import jax
import jax.extend.core as jcore
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl
from jaxrl import build
from jaxrl.algos.ppo import PPO
from jaxrl.cli.train import main as train_main
from jaxrl.config.compose import compose_config
from jaxrl.core.networks import ActorCritic, QNetwork
from jaxrl.core.precision import matmul_precision
from jaxrl.run.driver import Hook, Program

MATMULS = ("dot_general", "conv_general_dilated")


def matmuls(jaxpr) -> list[tuple[tuple[str, ...], object]]:
    """(operand dtypes, precision) of every matmul and convolution in a jaxpr, sub-jaxprs (jit, scan, while,
    custom_vjp) included."""
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in MATMULS:
            found.append((tuple(str(v.aval.dtype) for v in eqn.invars), eqn.params.get("precision")))
        for param in eqn.params.values():
            for sub in param if isinstance(param, tuple | list) else (param,):
                if isinstance(sub, jcore.ClosedJaxpr):
                    found += matmuls(sub.jaxpr)
                elif isinstance(sub, jcore.Jaxpr):
                    found += matmuls(sub)
    return found


def operand_dtypes(found) -> set[str]:
    return {dtype for operands, _ in found for dtype in operands}


NETWORKS = {
    "actor-critic": (lambda dtype: ActorCritic(num_actions=3, continuous=False, dtype=dtype), (5, 4)),
    "gaussian": (lambda dtype: ActorCritic(num_actions=2, continuous=True, dtype=dtype), (5, 3)),
    "shared-cnn": (
        lambda dtype: ActorCritic(num_actions=4, continuous=False, network="cnn", obs_ndim=3, shared=True, dtype=dtype),
        (5, 6, 6, 2),
    ),
    "q-network": (lambda dtype: QNetwork(num_actions=3, dtype=dtype), (300, 4)),  # 300 rows: the plain matmul path
}


@pytest.mark.parametrize("name", list(NETWORKS))
def test_bf16_network_computes_in_bfloat16_from_float32_parameters_forward_and_backward(name):
    make, obs_shape = NETWORKS[name]
    obs = jax.random.normal(jax.random.key(0), obs_shape)
    nets = {dtype: make(dtype) for dtype in (jnp.float32, jnp.bfloat16)}
    params = nets[jnp.float32].init(jax.random.key(1), obs[:1])
    bf16_params = nets[jnp.bfloat16].init(jax.random.key(1), obs[:1])
    assert {x.dtype for x in jax.tree.leaves(bf16_params)} == {jnp.dtype(jnp.float32)}  # log_std included
    jax.tree.map(np.testing.assert_array_equal, bf16_params, params)  # the same parameters, whatever the dtype
    loss = lambda net: lambda p: sum(jnp.sum(out**2) for out in jax.tree.leaves(net.apply(p, obs)))

    outputs = nets[jnp.bfloat16].apply(params, obs)
    assert {x.dtype for x in jax.tree.leaves(outputs)} == {jnp.dtype(jnp.float32)}  # logits, means, values, Q
    forward = matmuls(jax.make_jaxpr(nets[jnp.bfloat16].apply)(params, obs).jaxpr)
    backward = matmuls(jax.make_jaxpr(jax.grad(loss(nets[jnp.bfloat16])))(params).jaxpr)
    assert forward and operand_dtypes(forward) == {"bfloat16"}
    assert len(backward) > len(forward) and operand_dtypes(backward) == {"bfloat16"}
    grads = jax.grad(loss(nets[jnp.bfloat16]))(params)
    assert {x.dtype for x in jax.tree.leaves(grads)} == {jnp.dtype(jnp.float32)}

    fp32 = matmuls(jax.make_jaxpr(jax.grad(loss(nets[jnp.float32])))(params).jaxpr)
    assert fp32 and operand_dtypes(fp32) == {"float32"}
    # bf16 keeps about 3 significant digits: its outputs are the float32 network's, roughly.
    for got, want in zip(jax.tree.leaves(outputs), jax.tree.leaves(nets[jnp.float32].apply(params, obs)), strict=True):
        np.testing.assert_allclose(got, want, rtol=0.1, atol=0.05)


ALGOS = {
    "ppo": ["env=CartPole-v1", "num_envs=4", "algo.num_steps=16", "algo.num_minibatches=2", "algo.update_epochs=2"],
    "ppo-gaussian": ["env=Pendulum-v1", "num_envs=4", "algo.num_steps=16", "algo.num_minibatches=2"],
    "dqn": [
        "env=CartPole-v1",
        "algo=dqn",
        "num_envs=4",
        "algo.learning_starts=0",
        "algo.train_freq=4",
        "algo.batch_size=16",
        "algo.n_step=1",  # the tuned 3-step targets learn from the third update on: its first two report NaN losses
    ],
}


def program(overrides: list[str]) -> Program:
    cfg, _ = compose_config([*overrides, "total_timesteps=4096"])
    return build.program(cfg, chunk=3)


@pytest.mark.parametrize("algo", list(ALGOS))
def test_bf16_update_keeps_parameters_and_optimizer_state_float32(algo):
    prog = program([*ALGOS[algo], "precision=bf16"])
    runner, _ = prog.compile()
    before = jax.tree.map(np.asarray, runner.params)
    runner, stats = prog.run_chunk(runner, 3)
    floats = lambda tree: {x.dtype for x in jax.tree.leaves(tree) if jnp.issubdtype(x.dtype, jnp.floating)}
    assert floats(runner.params) == floats(runner.opt_state) == {jnp.dtype(jnp.float32)}
    assert any(not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(runner.params)))
    assert np.all(stats.finite) and all(np.isfinite(v).all() for v in stats.learner.values())
    assert {np.asarray(v).dtype for v in stats.learner.values()} == {np.dtype(np.float32)}


@pytest.mark.parametrize("algo", list(ALGOS))
def test_only_bf16_puts_bfloat16_matmuls_into_the_training_program(algo):
    found = {}
    for precision in ("fp32", "tf32", "bf16"):
        prog = program([*ALGOS[algo], f"precision={precision}"])
        jaxpr = jax.make_jaxpr(prog._chunk_fn)(prog.abstract_runner(), prog.chunk_hypers, jnp.int32(3))
        found[precision] = matmuls(jaxpr.jaxpr)
    assert operand_dtypes(found["fp32"]) == operand_dtypes(found["tf32"]) == {"float32"}
    assert operand_dtypes(found["bf16"]) == {"bfloat16"}  # every matmul of the update is the network's
    assert len(found["bf16"]) == len(found["fp32"])


def lowered_precisions(text: str) -> set[str]:
    """The `precision = [...]` attributes of every dot in a lowered program's StableHLO text."""
    dots = [line for line in text.splitlines() if "stablehlo.dot_general" in line or "stablehlo.convolution" in line]
    assert dots
    return {line.split("precision = [")[1].split("]")[0] if "precision = [" in line else "none" for line in dots}


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_tf32_and_fp32_are_the_matmul_precision_of_the_traced_programs_and_the_policy(algo):
    want = {"fp32": {"HIGHEST, HIGHEST"}, "tf32": {"HIGH, HIGH"}, "bf16": {"HIGHEST, HIGHEST"}}
    for precision, attributes in want.items():
        prog = program([*ALGOS[algo], f"precision={precision}"])
        runner = prog.abstract_runner()
        chunk = prog._chunk_fn.lower(runner, prog.chunk_hypers, jnp.int32(3))
        assert lowered_precisions(chunk.as_text()) == attributes, precision
        assert lowered_precisions(prog._init_fn.lower(*prog.init_args()).as_text()) == attributes, precision  # init
        # The policy that eval and Run.policy_of jit, traced wherever they are.
        params = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), prog.algo.policy_params(runner))
        obs = jax.ShapeDtypeStruct((7, *prog.algo.obs_shape), jnp.float32)
        policy = jax.jit(prog.policy(greedy=False)).lower(params, None, obs, jax.random.key(0))
        assert lowered_precisions(policy.as_text()) == attributes, precision
        assert jax.config.jax_default_matmul_precision is None  # set while tracing only


@pytest.mark.skipif(
    jax.default_backend() != "gpu", reason="TensorFloat-32 is an NVIDIA GPU's (the CPU is float32 either way)"
)
def test_on_a_gpu_tf32_rounds_matmul_inputs_and_fp32_does_not():
    a, b = jax.random.normal(jax.random.key(0), (2, 512, 512))
    exact = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    err = {}
    for precision in ("fp32", "tf32"):
        with matmul_precision(precision):
            err[precision] = float(np.abs(np.asarray(jax.jit(jnp.matmul)(a, b)) - exact).max() / np.abs(exact).max())
    # Measured on an H100 (jax 0.11.2), 2048^2 inputs: fp32 2e-6, tf32 3e-4 (a 10-bit mantissa).
    assert err["fp32"] < 1e-5 and err["tf32"] > 1e-4, err


class Spy(Hook):
    """Notes the precision a run trains at: its config's and its network's compute dtype."""

    def __init__(self):
        self.seen = None

    def start(self, ctx) -> None:
        self.seen = (ctx.cfg.precision, jnp.dtype(ctx.program.algo.network.dtype))


def test_precision_is_written_to_config_yaml_and_a_resumed_run_keeps_it(tmp_path, monkeypatch):
    spy = Spy()
    run = jaxrl.train(
        env="CartPole-v1",
        precision="bf16",
        total_timesteps=2048,
        num_chunks=1,
        progress=False,
        run_dir=tmp_path / "r",
        hooks=[spy],
    )
    assert "precision: bf16" in (run.run_dir / "config.yaml").read_text().splitlines()
    assert spy.seen == ("bf16", jnp.dtype(jnp.bfloat16))
    resumed_spy = Spy()
    resumed = jaxrl.train(resume=run.run_dir, total_timesteps=4096, hooks=[resumed_spy])
    assert resumed_spy.seen == ("bf16", jnp.dtype(jnp.bfloat16))
    assert resumed.config.precision == jaxrl.load(run.run_dir).config.precision == "bf16"
    assert "precision: bf16" in (run.run_dir / "config.yaml").read_text().splitlines()  # rewritten on resume
    # The policy Run.policy and eval act with: its matmuls bfloat16, traced at the run's matmul precision.
    obs, key = jnp.zeros((3, 4)), jax.random.key(0)
    policy = jaxrl.load(run.run_dir).policy_of(greedy=True)
    assert lowered_precisions(policy.apply.lower(policy.params, None, obs, key).as_text()) == {"HIGHEST, HIGHEST"}
    assert operand_dtypes(matmuls(jax.make_jaxpr(policy.apply)(policy.params, None, obs, key).jaxpr)) == {"bfloat16"}
    # Evaluation traces the policy at the run's matmul precision too.
    seen = []
    monkeypatch.setattr(PPO, "policy", recording_policy(PPO.policy, seen))
    jaxrl.load(run.run_dir).evaluate(episodes=2)
    assert seen and set(seen) == {"float32"}


def recording_policy(policy, seen: list):
    """`Algorithm.policy` whose acting function notes jax's default matmul precision whenever it is traced."""

    def make(self, greedy: bool = True):
        act = policy(self, greedy)

        def recording(*args):
            seen.append(jax.config.jax_default_matmul_precision)
            return act(*args)

        return recording

    return make


def test_a_bf16_dqn_run_from_the_command_line_ends_with_finite_figures(tmp_path):
    argv = ["env=CartPole-v1", "algo=dqn", "precision=bf16", "total_timesteps=6000", "algo.learning_starts=1000"]
    assert train_main([*argv, "num_chunks=3", "progress=false", f"run_dir={tmp_path / 'r'}"]) == 0
    with open(tmp_path / "r" / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    losses = [float(row["loss"]) for row in rows]
    assert len(rows) == 3 and all(math.isfinite(x) for x in losses[1:]), losses
    assert all(math.isfinite(float(row["q_mean"])) for row in rows[1:])
