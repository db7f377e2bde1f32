"""The Gymnasium adapters: check_env without warnings, numpy in and out, the replay's frames, Gymnasium's
reset and same-step autoreset semantics, and SB3's PPO training on the adapter."""

import warnings

import jax
import numpy as np
import pytest

from jaxrl import envs

gymnasium = pytest.importorskip("gymnasium")


@pytest.mark.parametrize(
    "name, settings",
    [("snake", {"size": 8}), ("grid", {}), ("grid", {"num_agents": 4}), ("CartPole-v1", {}), ("Breakout-MinAtar", {})],
)
def test_single_env_passes_check_env_without_warnings(name, settings):
    from gymnasium.utils.env_checker import check_env

    render_mode = "rgb_array" if name in ("snake", "grid") else None
    env = envs.to_gymnasium(name, render_mode=render_mode, **settings)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    assert [str(w.message) for w in caught] == []


def test_single_env_is_numpy_and_does_not_reset_itself():
    env = envs.to_gymnasium("snake", size=6, hunger_limit=8)
    obs, info = env.reset(seed=3)
    assert isinstance(obs, np.ndarray) and obs.dtype == np.uint8 and obs.shape == (6, 6, 3) and info == {}
    again, _ = env.reset(seed=3)
    np.testing.assert_array_equal(obs, again)  # a seed fixes the episode
    steps = 0
    while True:
        obs, reward, terminated, truncated, info = env.step(1)  # right, into the wall or hungry
        steps += 1
        assert isinstance(reward, float) and isinstance(terminated, bool) and isinstance(info["score"], np.ndarray)
        if terminated or truncated:
            break
    assert steps <= 8
    # The episode's last observation is what step returned: nothing was reset behind the caller's back.
    assert env._state.time == steps


def test_settings_and_bad_render_mode():
    env = envs.to_gymnasium("snake", size=12, reward_apple=2.0)
    assert env.observation_space.shape == (12, 12, 3) and float(env.env_params.reward_apple) == 2.0
    with pytest.raises(ValueError, match="render_mode='human' is not supported by snake; allowed: rgb_array"):
        envs.to_gymnasium("snake", render_mode="human")
    with pytest.raises(ValueError, match="CartPole-v1; allowed: none"):
        envs.to_gymnasium("CartPole-v1", render_mode="rgb_array")


def test_rgb_array_is_the_replay_gifs_frame():
    from jaxrl.envs.render import GIF_PIXELS, upscale

    env = envs.to_gymnasium("snake", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    expected = upscale(np.asarray(jax.device_get(env.env.render_rgb(env._state)))[None], GIF_PIXELS)[0]
    assert frame.shape == (320, 320, 3) and frame.dtype == np.uint8
    np.testing.assert_array_equal(frame, expected)
    assert frame.std() > 0  # a picture, not a blank


def test_several_agents_get_a_multidiscrete_and_the_worlds_reward():
    env = envs.to_gymnasium("grid", num_agents=3)
    assert isinstance(env.action_space, gymnasium.spaces.MultiDiscrete) and list(env.action_space.nvec) == [6, 6, 6]
    env.reset(seed=0)
    for _ in range(50):
        _, reward, _, _, info = env.step(np.full(3, 5))  # everyone collects
        assert reward == pytest.approx(float(info["agent_rewards"].sum()))


def test_vector_env_resets_finished_envs_in_the_same_step():
    vec = envs.to_gymnasium_vector("snake", num_envs=16, size=6, hunger_limit=10)
    assert vec.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    assert vec.observation_space.shape == (16, 6, 6, 3) and vec.single_action_space.n == 4
    obs, _ = vec.reset(seed=0)
    finished = 0
    for _ in range(40):
        before = obs
        obs, reward, terminated, truncated, info = vec.step(np.ones(16, np.int64))
        assert obs.shape == (16, 6, 6, 3) and reward.shape == (16,) and reward.dtype == np.float32
        done = terminated | truncated
        if done.any():
            np.testing.assert_array_equal(info["_final_obs"], done)
            # The new episode's first observation differs from the finished one's last.
            assert any((obs[i] != info["final_obs"][i]).any() for i in np.flatnonzero(done))
            finished += int(done.sum())
        else:
            assert "final_obs" not in info
        assert before.shape == obs.shape
    assert finished >= 16  # every env ended at least once (walls and hunger)


@pytest.mark.optimized
def test_sb3_ppo_learns_on_the_adapter():
    """SB3's PPO lengthens CartPole's episodes through the adapter in 8192 steps; bar and measured draws:
    jaxrl.bench.checks and docs/reliability.md."""
    pytest.importorskip("stable_baselines3")
    from jaxrl.bench import checks

    checks.run_test_draw("sb3_adapter")
