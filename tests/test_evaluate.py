"""On-device evaluation: whole episodes, stopped at each env's first episode end, with scores."""

import jax
import jax.numpy as jnp
import numpy as np

import envs
from jaxrl.evaluate import play


def constant(action: int):
    return lambda obs, key: jnp.full(obs.shape[0], action, jnp.int32)


def test_cartpole_episodes_count_until_their_first_end():
    env, params = envs.make("CartPole-v1")
    out = jax.jit(lambda k: play(env, params, constant(0), k, 16))(jax.random.key(0))
    ret, length = np.asarray(out["return"]), np.asarray(out["length"])
    assert np.asarray(out["finished"]).all()
    np.testing.assert_array_equal(ret, length)  # +1 per step, nothing counted after the first end
    assert 5 <= length.min() and length.max() <= 20  # always pushing left topples the pole within ~10 steps
    assert len(np.unique(length)) > 1  # independent resets


def test_max_steps_stops_unfinished_episodes():
    env, params = envs.make("CartPole-v1")

    def balance(obs, key):  # push toward the side the pole leans to: keeps it up for long
        return (obs[:, 2] + 0.5 * obs[:, 3] > 0).astype(jnp.int32)

    out = jax.jit(lambda k: play(env, params, balance, k, 4, max_steps=50))(jax.random.key(1))
    np.testing.assert_array_equal(np.asarray(out["length"]), 50)
    assert not np.asarray(out["finished"]).any()


def test_snake_reports_the_score_of_the_ended_episode():
    env, params = envs.make("snake", size=6)
    out = jax.jit(lambda k: play(env, params, constant(0), k, 32))(jax.random.key(2))
    score, ret, length = (np.asarray(out[k]) for k in ("score", "return", "length"))
    assert np.asarray(out["finished"]).all()
    assert (score >= 0).all() and (score <= 6).all() and score.max() > 0  # apples in its straight path
    # Going straight always ends at a wall: every step earns an apple, the death, or the step reward.
    expected = score * params.reward_apple + params.reward_death + (length - score - 1) * params.reward_step
    np.testing.assert_allclose(ret, expected, rtol=1e-6)
