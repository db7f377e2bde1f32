"""PQN: Q(lambda) returns (hand-computed, with termination and truncation), the truncation bootstrap
from the final observation, epsilon, one trace per run, agents, eval, and learning CartPole."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.algos.pqn import PQN, PQNConfig
from jaxrl.config.environment import make_env
from jaxrl.config.schema import TrainConfig
from jaxrl.core import losses
from tests.helpers import count_traces, env_config, several_agents_rows, three_chunks


def test_q_lambda_returns_equal_hand_computed_numbers():
    rewards = jnp.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]])
    next_q = jnp.array([[10.0, 10.0], [20.0, 20.0], [30.0, 30.0], [40.0, 40.0]])
    terminated = jnp.zeros((4, 2), bool).at[1, 1].set(True)  # stream 1: terminates at t=1 ...
    truncated = jnp.zeros((4, 2), bool).at[2, 1].set(True)  # ... and is cut at t=2
    got = losses.q_lambda_returns(rewards, next_q, terminated, truncated, gamma=0.5, q_lambda=0.5)
    # Stream 0, no episode end: G3 = 4 + .5 * 40; G2 = 3 + .5 * (.5 * G3 + .5 * 30); and so on.
    # Stream 1: G3 as stream 0; G2 = 3 + .5 * 30 (truncated: bootstrap from the final observation's Q,
    # G3 belongs to the next episode); G1 = 2 (terminated); G0 = 1 + .5 * (.5 * 2 + .5 * 10).
    expected = np.array([[6.28125, 4.0], [11.125, 2.0], [16.5, 18.0], [24.0, 24.0]])
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6)


def test_q_lambda_returns_at_lambda_0_and_1():
    key = jax.random.key(0)
    rewards, next_q = jax.random.normal(key, (2, 6, 3))
    terminated = jax.random.bernoulli(jax.random.key(1), 0.2, (6, 3))
    truncated = jax.random.bernoulli(jax.random.key(2), 0.2, (6, 3)) & ~terminated
    one_step = losses.q_lambda_returns(rewards, next_q, terminated, truncated, 0.9, 0.0)
    np.testing.assert_allclose(one_step, rewards + 0.9 * (1 - terminated) * next_q, rtol=1e-6)
    # lambda = 1, no episode ends: the discounted sum of rewards to the rollout's end, bootstrapped there.
    none = jnp.zeros((6, 3), bool)
    mc = losses.q_lambda_returns(rewards, next_q, none, none, 0.9, 1.0)
    expected = next_q[-1] * 0.9 ** jnp.arange(6, 0, -1)[:, None]
    for t in range(6):
        expected = expected.at[t].add(sum(rewards[k] * 0.9 ** (k - t) for k in range(t, 6)))
    np.testing.assert_allclose(mc, expected, rtol=1e-5)


def pqn(num_envs=4, env="CartPole-v1", total=4096, **settings):
    algo = PQNConfig(**{"num_steps": 16, "num_minibatches": 2, **settings})
    name = env if isinstance(env, str) else env["name"]
    kw = {} if isinstance(env, str) else {k: v for k, v in env.items() if k != "name"}
    cfg = TrainConfig(env=env_config(name, **kw), algo=algo, num_envs=num_envs, total_timesteps=total)
    return PQN(cfg, *make_env(cfg))


def test_collect_bootstraps_truncation_from_the_final_observation():
    # CartPole cut at 10 steps; with the pole barely moving a random start rarely falls in 10.
    algo = pqn(num_envs=6, env={"name": "CartPole-v1", "max_steps_in_episode": 10}, num_steps=32)
    runner = algo.init(jax.random.key(0))
    epsilon = jnp.float32(0.5)
    new_runner, traj, _ = jax.jit(algo.collect)(runner, jax.random.key(1), epsilon)
    q_max = jax.jit(lambda o: algo.network.apply(runner.params, o).max(axis=-1))
    truncated, terminated = np.asarray(traj.truncated), np.asarray(traj.terminated)
    assert truncated.sum() >= 6

    def step(r, draws):
        before = r.envs.state
        r, _ = algo.env_step(r, draws, epsilon)
        return r, (before, r.envs.obs)

    env_key, explore_key = jax.random.split(jax.random.key(1))
    draws = (algo.vec.step_keys(env_key, 32), algo.exploration(explore_key, (32, 6)))
    _, (states, next_obs) = jax.jit(lambda r: jax.lax.scan(step, r, draws))(runner)
    next_q = np.asarray(traj.next_q)
    plain = ~truncated & ~terminated
    np.testing.assert_allclose(next_q[plain], np.asarray(q_max(next_obs))[plain], rtol=1e-5, atol=1e-5)
    env, params = algo.env, algo.env_params
    for t, e in zip(*np.nonzero(truncated)):
        state = jax.tree.map(lambda x, t=t, e=e: x[t, e], states)
        final_obs = env.step_env(jax.random.key(0), state, traj.action[t, e], params)[0]
        np.testing.assert_allclose(next_q[t, e], float(q_max(final_obs[None])[0]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(new_runner.envs.obs), np.asarray(next_obs[-1]))


def test_epsilon_falls_linearly_then_stays():
    algo = pqn(total=1000 * 64, epsilon_start=1.0, epsilon_end=0.1, epsilon_decay=0.5)  # 64 env steps per update
    eps = [float(algo.epsilon(jnp.int32(u))) for u in (0, 250, 500, 900)]
    np.testing.assert_allclose(eps, [1.0, 0.55, 0.1, 0.1], rtol=1e-6)


def test_one_trace_serves_every_pqn_chunk(monkeypatch):
    traces = count_traces(monkeypatch)
    algo = PQNConfig(num_steps=8, num_minibatches=2, anneal_lr=True)
    runner = three_chunks(algo, steps_per_update=32)
    assert traces == [3], traces
    assert np.asarray(runner.update).tolist() == [7, 7]
    assert not np.allclose(*np.asarray(jax.tree.leaves(runner.params)[0]))  # two seeds, two networks


def test_pqn_on_several_agents_trains_evaluates_and_resumes(tmp_path):
    rows = several_agents_rows(tmp_path, "pqn")
    assert rows and all("epsilon" in r and np.isfinite(r["loss"]) for r in rows)


@pytest.mark.optimized
@pytest.mark.slow
def test_pqn_learns_cartpole_within_5e5_steps():
    """The shipped pqn_CartPole-v1 config learns CartPole within 5e5 steps: the mean of 4 seeds, in training and
    greedily; bars and measured draws: jaxrl.bench.checks and docs/reliability.md."""
    from jaxrl.bench import checks

    checks.run_test_draw("pqn_cartpole")
