"""The contract every env of ours meets: compiles once, vmaps, stays in its spaces, finite values."""

import chex
import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import envs

OUR_ENVS = [name for name in envs.registered_names() if name not in gymnax.registered_envs]

CASES = [
    ("snake", {}),
    ("snake", {"size": 6}),
    ("snake", {"view": "ego", "actions": "relative"}),
    ("snake", {"size": 5, "actions": "relative"}),
    ("grid", {}),
    ("grid", {"size": 6, "view": 7}),
    ("grid", {"num_agents": 4}),
    ("arena", {}),
    ("arena", {"size": 9, "num_snakes": 6, "num_agents": 2, "view": 5}),
    ("arena_open", {"width": 24, "height": 16, "num_snakes": 12, "num_food": 16, "view": 7}),
    ("arena_open", {"width": 8, "height": 8, "num_snakes": 1, "num_food": 2, "view": 3}),
]
assert {name for name, _ in CASES} == set(OUR_ENVS), "every env of ours needs a contract case"


@pytest.mark.parametrize("name,kwargs", CASES)
def test_compiles_once_over_100_steps(name, kwargs):
    env, params = envs.make(name, **kwargs)
    chex.clear_trace_counter()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def step(key, state, action):
        return env.step(key, state, action, params)

    key = jax.random.key(0)
    obs, state = env.reset(key, params)
    space = env.observation_space(params)
    for i in range(100):
        key, act_key, step_key = jax.random.split(key, 3)
        action = env.action_space(params).sample(act_key)
        assert action.shape == env.action_space(params).shape and bool(env.action_space(params).contains(action))
        obs, state, reward, terminated, truncated, info = step(step_key, state, action)
        assert obs.shape == space.shape and obs.dtype == space.dtype
        assert bool(space.contains(obs)), f"step {i}: observation outside the space"
        assert bool(space.contains(info["final_observation"]))
        assert np.isfinite(np.asarray(reward)).all()
        assert terminated.dtype == jnp.bool_ and truncated.dtype == jnp.bool_


@pytest.mark.parametrize("name,kwargs", CASES)
def test_vmaps_over_64(name, kwargs):
    env, params = envs.make(name, **kwargs)
    n = 64
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.key(1), n), params)
    space = env.observation_space(params)
    assert obs.shape == (n,) + space.shape

    def body(carry, key):
        state = carry
        act_key, step_key = jax.random.split(key)
        actions = jax.vmap(env.action_space(params).sample)(jax.random.split(act_key, n))
        obs, state, reward, term, trunc, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(step_key, n), state, actions, params
        )
        ok = jax.vmap(space.contains)(obs).all()
        return state, (ok, reward, term | trunc)

    _, (ok, rewards, done) = jax.lax.scan(body, state, jax.random.split(jax.random.key(2), 300))
    assert bool(ok.all())
    assert np.isfinite(np.asarray(rewards)).all()
    assert bool(done.any()), "a random policy should end some episodes in 300 steps"
    assert rewards.shape[:2] == (300, n)


def test_unknown_name_lists_valid_ones():
    with pytest.raises(envs.UnknownEnvError, match="unknown env 'snak'.*snake.*grid.*CartPole-v1"):
        envs.make("snak")


def test_gymnax_ids_pass_through():
    env, params = envs.make("CartPole-v1")
    obs, _ = env.reset(jax.random.key(0), params)
    assert obs.shape == (4,)
