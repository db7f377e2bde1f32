"""A2C: its loss against numbers worked out by hand and beside the network, RMSprop with PyTorch's epsilon,
one optimizer step per update at the defaults, one trace per run, agents, eval and resume; its learning check
is the parity row (tests/algos/test_parity.py, `parity_a2c_CartPole-v1`)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.algos.a2c import A2C, A2CConfig
from jaxrl.algos.actor_critic import Transition
from jaxrl.config.environment import make_env
from jaxrl.config.schema import TrainConfig
from jaxrl.core import losses
from tests.helpers import count_traces, env_config, several_agents_rows, three_chunks


def cartpole_a2c(**settings) -> A2C:
    cfg = TrainConfig(env=env_config("CartPole-v1"), algo=A2CConfig(**settings), num_envs=4)
    return A2C(cfg, *make_env(cfg))


def test_loss_is_the_advantage_weighted_policy_gradient_plus_value_regression_minus_entropy():
    a2c = cartpole_a2c(vf_coef=0.5, ent_coef=0.1)
    runner = a2c.init(jax.random.key(0))
    obs = jax.random.normal(jax.random.key(1), (6, 4))
    action = jnp.array([0, 1, 1, 0, 1, 0])
    advantages = jnp.array([1.0, -2.0, 0.5, 3.0, 0.0, -1.0])
    targets = jnp.array([2.0, 0.0, -1.0, 1.5, 0.5, 4.0])
    zeros = jnp.zeros(6)
    batch = Transition(a2c.obs_codec.encode(obs), action, zeros, zeros, zeros, zeros, zeros > 0, zeros > 0)
    total, stats = a2c.loss(runner.params, None, batch, advantages, targets)

    logits, value = (np.asarray(x, np.float64) for x in a2c.network.apply(runner.params, obs))
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    policy = -np.mean(np.asarray(advantages) * logp[np.arange(6), np.asarray(action)])
    value_loss = np.mean((np.asarray(targets) - value) ** 2)  # SB3's: no 1/2
    entropy = -np.mean(np.sum(np.exp(logp) * logp, axis=-1))
    np.testing.assert_allclose(float(stats["policy_loss"]), policy, rtol=1e-5)
    np.testing.assert_allclose(float(stats["value_loss"]), value_loss, rtol=1e-5)
    np.testing.assert_allclose(float(stats["entropy"]), entropy, rtol=1e-5)
    np.testing.assert_allclose(float(total), policy + 0.5 * value_loss - 0.1 * entropy, rtol=1e-5)


def test_a2c_loss_against_numbers_worked_out_by_hand():
    log_prob = jnp.log(jnp.array([0.5, 0.25]))
    advantages, value, targets = jnp.array([2.0, 1.0]), jnp.array([1.0, 0.0]), jnp.array([3.0, 1.0])
    entropy = jnp.array([0.6, 0.4])
    total, stats = losses.a2c_loss(log_prob, advantages, value, targets, entropy, 0.5, 0.1, False)
    policy = 2 * np.log(2)  # -mean(A * log pi) = -(2 ln 1/2 + 1 ln 1/4) / 2
    assert float(stats["policy_loss"]) == pytest.approx(policy, rel=1e-6)
    assert float(stats["value_loss"]) == pytest.approx((4 + 1) / 2)  # mean((3 - 1)^2, (1 - 0)^2)
    assert float(stats["entropy"]) == pytest.approx(0.5)
    assert float(total) == pytest.approx(policy + 0.5 * 2.5 - 0.1 * 0.5, rel=1e-6)
    normalized, _ = losses.a2c_loss(log_prob, advantages, value, targets, entropy, 0.0, 0.0, True)
    assert float(normalized) == pytest.approx(-np.log(2) / 2, rel=1e-5)  # A normalized to (1, -1)


def test_rmsprop_adds_its_epsilon_outside_the_root_as_pytorch_does():
    a2c = cartpole_a2c(lr=0.1, rms_decay=0.9, rms_eps=0.5, max_grad_norm=100.0)
    params = {"w": jnp.zeros(3)}
    optimizer = a2c.optimizer_with(a2c.algo.lr)
    state = optimizer.init(params)
    grads = {"w": jnp.array([1.0, -2.0, 0.0])}
    updates, _ = optimizer.update(grads, state, params)
    g = np.array([1.0, -2.0, 0.0])
    root = np.sqrt(0.1 * g**2)  # the average after one step from 0: (1 - decay) * g^2
    np.testing.assert_allclose(np.asarray(updates["w"]), -0.1 * g / (root + 0.5), rtol=1e-6)


def test_the_defaults_take_one_step_on_the_whole_rollout_per_update():
    a2c = cartpole_a2c()
    assert (a2c.algo.num_steps, a2c.num_minibatches, a2c.algo.update_epochs) == (5, 1, 1)
    assert a2c.minibatch_size == a2c.batch_size == 4 * 5
    cfg = TrainConfig(env=env_config("grid", num_agents=2, size=7), algo=A2CConfig(), num_envs=4)
    two_agents = A2C(cfg, *make_env(cfg))  # one step on both agents' transitions, not one per agent
    assert two_agents.num_minibatches == 1 and two_agents.minibatch_size == 4 * 2 * 5
    runner = a2c.init(jax.random.key(0))
    after, stats = jax.jit(a2c.update)(runner)
    assert int(after.update) == 1 and bool(stats.finite)
    assert not np.allclose(jax.tree.leaves(after.params)[0], jax.tree.leaves(runner.params)[0])


def test_one_trace_serves_every_a2c_chunk(monkeypatch):
    traces = count_traces(monkeypatch)
    runner = three_chunks(A2CConfig(num_steps=8, anneal_lr=True), steps_per_update=32)
    assert traces == [3], traces
    assert np.asarray(runner.update).tolist() == [7, 7]
    assert not np.allclose(*np.asarray(jax.tree.leaves(runner.params)[0]))  # two seeds, two networks


def test_a2c_on_several_agents_trains_evaluates_and_resumes(tmp_path):
    rows = several_agents_rows(tmp_path, "a2c")
    assert rows and all(np.isfinite(r["value_loss"]) and "approx_kl" not in r for r in rows)


@pytest.mark.parametrize(
    "settings, expected",
    [
        ({"algo.network": "lstm"}, "algo.network=lstm is invalid with algo=a2c: it has no recurrent variant"),
        ({"algo.rms_decay": 1.5}, "algo.rms_decay=1.5 is invalid: must be in [0, 1]"),
        ({"algo.rms_eps": 0}, "algo.rms_eps=0.0 is invalid: must be a finite number > 0"),
        ({"num_envs": 3, "algo.num_minibatches": 2}, "algo.num_minibatches=2 must divide num_envs * algo.num_steps"),
    ],
)
def test_bad_a2c_settings_are_one_line(settings, expected):
    from jaxrl.config.compose import compose_config

    with pytest.raises(Exception) as caught:
        compose_config(["algo=a2c", "env=CartPole-v1", *(f"{k}={v}" for k, v in settings.items())])
    assert expected in str(caught.value) and "\n" not in str(caught.value)
