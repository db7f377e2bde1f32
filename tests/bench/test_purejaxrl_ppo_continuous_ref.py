"""The PureJaxRL-shaped continuous-action PPO reference: its wrappers, its Gaussian and a short run."""

import math

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.bench.peers.purejaxrl_ppo_continuous_ref import (
    PUREJAXRL_CONTINUOUS,
    ClipAction,
    NormalizeObs,
    NormalizeReward,
    gaussian_evaluate,
    gaussian_sample,
    make_env,
    run_reference,
)
from jaxrl.bench.peers.purejaxrl_ref import EpisodeLog, VecEnv, final_return


def test_a_short_run_gives_finite_figures_and_the_latest_episodes_return():
    # 3 updates of 64 envs x 100 steps: each env ends its one 200-step Pendulum episode in the second
    # update, none in the last, so the final return reads the second's.
    r = run_reference("Pendulum-v1", 0, TOTAL_TIMESTEPS=3 * 64 * 100, NUM_ENVS=64, NUM_STEPS=100)
    assert set(r) == {"sps", "compile_s", "final_return", "seconds"}
    assert all(math.isfinite(r[k]) and r[k] > 0 for k in ("sps", "compile_s", "seconds")), r
    assert -1800 < r["final_return"] < -100, r  # one episode per env, a barely trained policy


def test_the_gaussian_matches_its_closed_forms():
    mean, log_std = jnp.array([[0.5, -1.0]]), jnp.array([[0.0, np.log(2.0)]])
    log_prob, entropy = gaussian_evaluate((mean, log_std), jnp.array([[1.5, -1.0]]))
    # N(1.5; 0.5, 1) and N(-1; -1, 2): -0.5 - log(2 pi) / 2 and -log 2 - log(2 pi) / 2.
    np.testing.assert_allclose(log_prob, [-0.5 - np.log(2) - np.log(2 * np.pi)], rtol=1e-6)
    np.testing.assert_allclose(entropy, [np.log(2) + 1 + np.log(2 * np.pi)], rtol=1e-6)
    draws, _ = gaussian_sample(jax.random.PRNGKey(0), (jnp.zeros((20000, 2)) + mean, jnp.zeros((20000, 2)) + log_std))
    np.testing.assert_allclose(draws.mean(0), [0.5, -1.0], atol=0.05)
    np.testing.assert_allclose(draws.std(0), [1.0, 2.0], rtol=0.03)


def test_actions_are_clipped_to_purejaxrls_unit_box():
    env, params = gymnax.make("Pendulum-v1")
    clipped = ClipAction(env)
    _, state = env.reset(jax.random.PRNGKey(0), params)
    key = jax.random.PRNGKey(1)
    # Pendulum's torque range is [-2, 2]; PureJaxRL's wrapper clips to [-1, 1] (kept on purpose).
    _, a, *_ = clipped.step(key, state, jnp.array([2.0]), params)
    _, b, *_ = env.step(key, state, jnp.array([1.0]), params)
    np.testing.assert_array_equal(a.theta_dot, b.theta_dot)


def test_the_normalisers_keep_running_moments_of_the_whole_batch():
    env, params = gymnax.make("Pendulum-v1")
    plain = VecEnv(EpisodeLog(env))
    vec = NormalizeReward(NormalizeObs(plain), gamma=0.9)
    reset_keys = jax.random.split(jax.random.PRNGKey(0), 64)
    obs, state = vec.reset(reset_keys, params)
    _, plain_state = plain.reset(reset_keys, params)
    np.testing.assert_allclose(obs.mean(0), 0, atol=1e-4)  # the first batch is the statistics
    np.testing.assert_allclose(obs.std(0), 1, atol=1e-3)
    discounted = np.zeros(64)
    for t in range(3):
        keys, action = jax.random.split(jax.random.PRNGKey(t + 1), 64), jnp.full((64, 1), 0.5)
        obs, state, reward, *_ = vec.step(keys, state, action, params)
        _, plain_state, raw, *_ = plain.step(keys, plain_state, action, params)
        discounted = 0.9 * discounted + np.asarray(raw)
    assert float(state.returns.count) == pytest.approx(1e-4 + 3 * 64)  # every env's return, every step
    assert float(state.inner.obs.count) == pytest.approx(1e-4 + 4 * 64)  # the reset batch too
    np.testing.assert_allclose(state.discounted, discounted, rtol=1e-5)
    # Rewards are divided by the running std of the discounted returns; the mean is not subtracted.
    np.testing.assert_allclose(reward, raw / np.sqrt(float(state.returns.var) + 1e-8), rtol=1e-5)
    assert np.all(np.asarray(reward) < 0)  # Pendulum's rewards are costs, and stay so


def test_the_final_return_widens_back_to_the_last_episodes_that_ended():
    ended = np.zeros((10, 3, 2), bool)
    returns = np.zeros((10, 3, 2), np.float32)
    ended[4, 1, 0], returns[4, 1, 0] = True, -300.0
    ended[2, 0, 1], returns[2, 0, 1] = True, -900.0
    assert final_return({"returned_episode": ended, "returned_episode_returns": returns}) == -300.0
    ended[9, 2, 1], returns[9, 2, 1] = True, -100.0
    assert final_return({"returned_episode": ended, "returned_episode_returns": returns}) == -100.0
    assert math.isnan(final_return({"returned_episode": ended & False, "returned_episode_returns": returns}))


def test_the_config_is_purejaxrls_and_typos_are_refused():
    assert (PUREJAXRL_CONTINUOUS["NUM_ENVS"], PUREJAXRL_CONTINUOUS["NUM_STEPS"]) == (2048, 10)
    env, _ = make_env({**PUREJAXRL_CONTINUOUS, "NORMALIZE_ENV": False})
    assert isinstance(env, VecEnv)
    with pytest.raises(KeyError, match="NUM_ENV'"):
        run_reference("Pendulum-v1", 0, NUM_ENV=8)
