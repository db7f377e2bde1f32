"""Snake rules on hand-built states."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs

UP, RIGHT, DOWN, LEFT = 0, 1, 2, 3


@pytest.fixture(scope="module")
def snake():
    return envs.make("snake", size=10)


def cells_of(env, state):
    """Set of (row, col) the snake occupies, decoded from the observation."""
    obs = np.asarray(env.get_obs(state))
    return {tuple(map(int, rc)) for rc in np.argwhere((obs[..., 0] + obs[..., 1]) > 0)}


def step(env, params, state, action, seed=0):
    return env.step_env(jax.random.key(seed), state, jnp.int32(action), params)


def test_plain_move_frees_the_tail(snake):
    env, params = snake
    state = env.make_state([(5, 5), (5, 4), (5, 3)], apple=(0, 0), direction=RIGHT)
    obs, new, reward, terminated, info = step(env, params, state, RIGHT)
    assert cells_of(env, new) == {(5, 6), (5, 5), (5, 4)}
    assert float(reward) == 0.0 and not bool(terminated)
    assert int(new.length) == 3 and int(new.hunger) == 1 and int(info["score"]) == 0
    assert np.asarray(obs)[5, 6, 0] == 1 and np.asarray(obs)[5, 5, 1] == 1 and np.asarray(obs)[0, 0, 2] == 1


def test_eat_and_grow(snake):
    env, params = snake
    state = env.make_state([(5, 5), (5, 4), (5, 3)], apple=(5, 6), direction=RIGHT, hunger=7)
    _obs, new, reward, terminated, info = step(env, params, state, RIGHT)
    assert float(reward) == 1.0 and not bool(terminated)
    assert int(new.length) == 4 and int(info["score"]) == 1 and int(new.hunger) == 0
    assert cells_of(env, new) == {(5, 6), (5, 5), (5, 4), (5, 3)}  # the tail stays
    apple = divmod(int(new.apple), 10)
    assert apple not in cells_of(env, new)
    if apple != (5, 7):  # the grown snake moves as a whole: the next plain step frees the old tail
        _, after, _, _, _ = step(env, params, new, RIGHT)
        assert cells_of(env, after) == {(5, 7), (5, 6), (5, 5), (5, 4)}


@pytest.mark.parametrize(
    "cells,direction,action",
    [
        ([(0, 4), (1, 4), (2, 4)], UP, UP),
        ([(9, 4), (8, 4), (7, 4)], DOWN, DOWN),
        ([(4, 0), (4, 1), (4, 2)], LEFT, LEFT),
        ([(4, 9), (4, 8), (4, 7)], RIGHT, RIGHT),
    ],
)
def test_wall_death_on_every_side(snake, cells, direction, action):
    env, params = snake
    state = env.make_state(cells, apple=(5, 5), direction=direction)
    _, _, reward, terminated, _ = step(env, params, state, action)
    assert bool(terminated) and float(reward) == -1.0


def test_self_collision(snake):
    env, params = snake
    # Head at (5,5) heading up; (4,5) is a body cell that is not the tail.
    cells = [(5, 5), (6, 5), (6, 6), (5, 6), (4, 6), (4, 5), (4, 4)]
    state = env.make_state(cells, apple=(0, 0), direction=UP)
    _, _, reward, terminated, _ = step(env, params, state, UP)
    assert bool(terminated) and float(reward) == -1.0


def test_moving_into_the_vacating_tail_cell_is_safe(snake):
    env, params = snake
    cells = [(5, 5), (6, 5), (6, 6), (5, 6), (4, 6), (4, 5)]  # (4,5) is the tail
    state = env.make_state(cells, apple=(0, 0), direction=UP)
    _, new, reward, terminated, _ = step(env, params, state, UP)
    assert not bool(terminated) and float(reward) == 0.0
    assert cells_of(env, new) == {(4, 5), (5, 5), (6, 5), (6, 6), (5, 6), (4, 6)}


def test_reverse_action_keeps_direction(snake):
    env, params = snake
    state = env.make_state([(5, 5), (5, 4), (5, 3)], apple=(0, 0), direction=RIGHT)
    _, new, _, terminated, _ = step(env, params, state, LEFT)
    assert not bool(terminated)
    assert (int(new.head_row), int(new.head_col)) == (5, 6) and int(new.direction) == RIGHT


def test_turning_works(snake):
    env, params = snake
    state = env.make_state([(5, 5), (5, 4), (5, 3)], apple=(0, 0), direction=RIGHT)
    _, new, _, _, _ = step(env, params, state, DOWN)
    assert (int(new.head_row), int(new.head_col)) == (6, 5)
    _, new, _, _, _ = step(env, params, new, LEFT)
    assert cells_of(env, new) == {(6, 4), (6, 5), (5, 5)}


def test_win_on_a_full_tiny_board():
    env, params = envs.make("snake", size=4)
    path = [(0, 0), (0, 1), (0, 2), (0, 3), (1, 3), (1, 2), (1, 1), (1, 0), (2, 0), (2, 1), (2, 2), (2, 3)]
    path += [(3, 3), (3, 2), (3, 1)]
    state = env.make_state(path[::-1], apple=(3, 0), direction=LEFT)
    _obs, _new, reward, terminated, truncated, info = env.step(jax.random.key(0), state, jnp.int32(LEFT), params)
    assert bool(terminated) and not bool(truncated)
    assert float(reward) == 1.0 and int(info["score"]) == 16 - 3
    assert np.asarray(info["final_observation"])[..., :2].sum() == 16  # the final board is full


def test_truncation_is_not_termination(snake):
    env, params = snake
    hungry = env.make_state([(5, 5), (5, 4), (5, 3)], apple=(0, 0), direction=RIGHT, hunger=params.hunger_limit - 1)
    _, reset, _, terminated, truncated, info = env.step(jax.random.key(0), hungry, jnp.int32(RIGHT), params)
    assert bool(truncated) and not bool(terminated)
    assert np.asarray(info["final_observation"])[5, 6, 0] == 1  # the cut episode's last observation
    assert int(reset.time) == 0 and int(reset.length) == 3  # auto-reset
    old = env.make_state([(5, 5), (5, 4), (5, 3)], apple=(0, 0), direction=RIGHT, time=params.max_steps_in_episode - 1)
    _, _, _, terminated, truncated, _ = env.step(jax.random.key(0), old, jnp.int32(RIGHT), params)
    assert bool(truncated) and not bool(terminated)
    dying = env.make_state([(4, 9), (4, 8), (4, 7)], apple=(0, 0), direction=RIGHT, hunger=params.hunger_limit - 1)
    _, _, _, terminated, truncated, _ = env.step(jax.random.key(0), dying, jnp.int32(RIGHT), params)
    assert bool(terminated)


def test_rewards_are_params(snake):
    env, params = snake
    params = params.replace(reward_apple=5.0, reward_death=-3.0, reward_step=-0.01)
    state = env.make_state([(5, 5), (5, 4), (5, 3)], apple=(5, 6), direction=RIGHT)
    assert float(step(env, params, state, RIGHT)[2]) == 5.0
    assert float(step(env, params, state, UP)[2]) == pytest.approx(-0.01)
    wall = env.make_state([(4, 9), (4, 8), (4, 7)], apple=(0, 0), direction=RIGHT)
    assert float(step(env, params, wall, RIGHT)[2]) == -3.0


def test_reset_places_a_straight_snake_with_a_safe_first_step(snake):
    env, params = snake
    keys = jax.random.split(jax.random.key(3), 2000)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    obs = np.asarray(obs)
    assert (obs[..., 0].sum(axis=(1, 2)) == 1).all() and (obs[..., 1].sum(axis=(1, 2)) == 2).all()
    assert (obs[..., 2].sum(axis=(1, 2)) == 1).all()
    assert set(np.asarray(state.direction).tolist()) == {0, 1, 2, 3}
    _, _, _, terminated, _ = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))(keys, state, state.direction, params)
    assert not bool(terminated.any())
    heads = {(int(r), int(c)) for r, c in zip(state.head_row, state.head_col)}
    assert len(heads) > 60  # spread over the board


def test_apple_never_on_the_snake(snake):
    env, params = snake
    n = 256
    _, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.key(4), n), params)

    def body(state, key):
        act_key, step_key = jax.random.split(key)
        actions = jax.random.randint(act_key, (n,), 0, 4)
        obs, state, _, _, _, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(step_key, n), state, actions, params
        )
        snake_cells = obs[..., 0] + obs[..., 1]
        overlap = (obs[..., 2] * snake_cells).sum()
        apples = obs[..., 2].sum(axis=(1, 2))
        return state, (overlap, apples, info["score"])

    _, (overlap, apples, score) = jax.lax.scan(body, state, jax.random.split(jax.random.key(5), 300))
    assert int(overlap.sum()) == 0
    assert bool((apples == 1).all())
    assert int(score.max()) >= 1  # some random snakes ate, so spawns after eating were exercised


def test_apple_spawn_is_uniform_over_free_cells(snake):
    env, _ = snake
    state = env.make_state([(5, 5), (5, 4), (5, 3), (4, 3), (3, 3)], apple=(0, 0), direction=RIGHT)
    u = jax.random.uniform(jax.random.key(6), (100_000,))
    cells = np.asarray(jax.vmap(env._spawn_apple, in_axes=(0, None))(u, state.occupied))
    counts = np.bincount(cells, minlength=100)
    taken = [55, 54, 53, 43, 33]
    assert counts[taken].sum() == 0
    free = np.delete(counts, taken)
    expected = len(cells) / 95
    chi2 = ((free - expected) ** 2 / expected).sum()
    assert chi2 < 160, f"chi2={chi2:.0f} over 94 degrees of freedom"  # p ~ 1e-5 under uniformity


def test_observation_channels(snake):
    env, _params = snake
    state = env.make_state([(2, 2), (2, 1), (1, 1)], apple=(7, 8), direction=RIGHT)
    obs = np.asarray(env.get_obs(state))
    assert obs.shape == (10, 10, 3) and obs.dtype == np.uint8
    assert {tuple(x) for x in np.argwhere(obs[..., 0])} == {(2, 2)}
    assert {tuple(x) for x in np.argwhere(obs[..., 1])} == {(2, 1), (1, 1)}
    assert {tuple(x) for x in np.argwhere(obs[..., 2])} == {(7, 8)}


def test_bad_size_is_one_clear_error():
    with pytest.raises(ValueError, match="size must be an integer from 4 to 64, got 2"):
        envs.make("snake", size=2)
