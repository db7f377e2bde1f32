"""Snake rules on hand-built states."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import envs

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


# -- options: relative actions, the egocentric view, mirroring, shaping, hunger deaths ---------

TURN_LEFT, STRAIGHT, TURN_RIGHT = 0, 1, 2


@pytest.fixture(scope="module")
def ego():
    return envs.make("snake", size=10, view="ego", actions="relative")


@pytest.mark.parametrize("direction", [UP, RIGHT, DOWN, LEFT])
@pytest.mark.parametrize("mirrored", [False, True])
def test_relative_actions_turn_from_the_heading(direction, mirrored):
    env, params = envs.make("snake", size=10, actions="relative")
    assert env.action_space(params).n == 3
    dr, dc = [(-1, 0), (0, 1), (1, 0), (0, -1)][direction]
    cells = [(5, 5), (5 - dr, 5 - dc), (5 - 2 * dr, 5 - 2 * dc)]
    state = env.make_state(cells, apple=(0, 0), direction=direction, mirrored=mirrored)
    left, right = (direction + 1) % 4, (direction + 3) % 4  # mirrored: the agent's left is the world's right
    if not mirrored:
        left, right = right, left
    for action, expected in ((TURN_LEFT, left), (STRAIGHT, direction), (TURN_RIGHT, right)):
        assert int(step(env, params, state, action)[1].direction) == expected


def test_mirrored_absolute_actions_swap_left_and_right(snake):
    env, params = snake
    state = env.make_state([(5, 5), (4, 5), (3, 5)], apple=(0, 0), direction=DOWN, mirrored=True)
    assert int(step(env, params, state, RIGHT)[1].head_col) == 4  # the agent's right is the world's left
    assert int(step(env, params, state, LEFT)[1].head_col) == 6
    assert int(step(env, params, state, DOWN)[1].head_row) == 6  # up and down are unchanged
    plain = state.replace(mirrored=jnp.bool_(False))
    flipped = np.asarray(env.get_obs(state))
    np.testing.assert_array_equal(flipped, np.asarray(env.get_obs(plain))[:, ::-1])


@pytest.mark.parametrize("direction", [UP, RIGHT, DOWN, LEFT])
def test_ego_view_turns_the_heading_up(ego, direction):
    env, params = ego
    assert env.observation_space(params).shape == (10, 10, 3)
    dr, dc = [(-1, 0), (0, 1), (1, 0), (0, -1)][direction]
    cells = [(5, 5), (5 - dr, 5 - dc), (5 - 2 * dr, 5 - 2 * dc)]
    ahead, left_of_head = (5 + dr, 5 + dc), (5 - dc, 5 + dr)  # rotating (dr, dc) a quarter counterclockwise
    state = env.make_state(cells, apple=ahead, direction=direction)
    obs = np.asarray(env.get_obs(state))
    (head,) = np.argwhere(obs[..., 0])
    (apple,) = np.argwhere(obs[..., 2])
    assert tuple(apple) == (head[0] - 1, head[1])  # the cell ahead is up
    assert {tuple(x) for x in np.argwhere(obs[..., 1])} == {(head[0] + 1, head[1]), (head[0] + 2, head[1])}
    # The cell to the snake's left is to the left in the view: put the apple there instead.
    state = env.make_state(cells, apple=left_of_head, direction=direction)
    (apple,) = np.argwhere(np.asarray(env.get_obs(state))[..., 2])
    assert tuple(apple) == (head[0], head[1] - 1)
    # And turning left moves onto it.
    _, _, reward, _, info = step(env, params, state, TURN_LEFT)
    assert float(reward) == 1.0 and int(info["score"]) == 1


@pytest.mark.parametrize("direction", [UP, RIGHT, DOWN, LEFT])
def test_ego_view_puts_the_wall_ahead_at_the_top_edge(ego, direction):
    """Heading into a wall, the head is on the view's top row, and going straight on dies."""
    env, params = ego
    edge = {UP: (0, 5), RIGHT: (5, 9), DOWN: (9, 5), LEFT: (5, 0)}[direction]
    dr, dc = [(-1, 0), (0, 1), (1, 0), (0, -1)][direction]
    cells = [edge, (edge[0] - dr, edge[1] - dc), (edge[0] - 2 * dr, edge[1] - 2 * dc)]
    state = env.make_state(cells, apple=(4, 4), direction=direction)
    (head,) = np.argwhere(np.asarray(env.get_obs(state))[..., 0])
    assert head[0] == 0
    assert bool(step(env, params, state, STRAIGHT)[3])


def test_ego_view_mirrored_is_flipped_left_to_right(ego):
    env, _ = ego
    state = env.make_state([(2, 3), (2, 2), (2, 1)], apple=(7, 8), direction=RIGHT)
    mirrored = state.replace(mirrored=jnp.bool_(True))
    np.testing.assert_array_equal(np.asarray(env.get_obs(mirrored)), np.asarray(env.get_obs(state))[:, ::-1])


def test_ego_view_needs_relative_actions_and_bad_options_are_one_line():
    with pytest.raises(ValueError, match="view='ego' needs actions='relative'"):
        envs.make("snake", view="ego")
    with pytest.raises(ValueError, match="view='top' is invalid: allowed world, ego"):
        envs.make("snake", view="top")
    with pytest.raises(ValueError, match="actions='turns' is invalid: allowed absolute, relative"):
        envs.make("snake", actions="turns")


def test_mirror_prob_mirrors_that_share_of_episodes(snake):
    env, params = snake
    keys = jax.random.split(jax.random.key(7), 4000)
    for prob, low, high in ((0.0, 0, 0), (0.5, 0.46, 0.54), (1.0, 1, 1)):
        _, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params.replace(mirror_prob=prob))
        assert low <= float(np.mean(state.mirrored)) <= high


def test_shaping_is_potential_based_and_the_score_stays_apples(snake):
    env, params = snake
    params = params.replace(shaping=0.2, shaping_gamma=0.9)
    phi = lambda d: -0.2 * d / 18
    state = env.make_state([(5, 5), (5, 4), (5, 3)], apple=(5, 8), direction=RIGHT)  # 3 cells away
    assert float(step(env, params, state, RIGHT)[2]) == pytest.approx(0.9 * phi(2) - phi(3))  # closer
    assert float(step(env, params, state, UP)[2]) == pytest.approx(0.9 * phi(4) - phi(3))  # farther
    wall = env.make_state([(4, 9), (4, 8), (4, 7)], apple=(0, 0), direction=RIGHT)  # 13 cells away, then dead
    assert float(step(env, params, wall, RIGHT)[2]) == pytest.approx(-1.0 - phi(13))  # an end has potential 0
    eats = env.make_state([(5, 5), (5, 4), (5, 3)], apple=(5, 6), direction=RIGHT)
    _, new, reward, _, info = step(env, params, eats, RIGHT)
    distance = abs(int(new.apple) // 10 - 5) + abs(int(new.apple) % 10 - 6)  # to the new apple
    assert float(reward) == pytest.approx(1.0 + 0.9 * phi(distance) - phi(1))
    assert int(info["score"]) == 1
    assert float(env.eval_params(params).shaping) == 0.0


def test_hunger_kills_ends_the_episode_as_a_death(snake):
    env, params = snake
    params = params.replace(hunger_kills=True, hunger_limit=20)
    hungry = env.make_state([(5, 5), (5, 4), (5, 3)], apple=(0, 0), direction=RIGHT, hunger=19)
    _, _, reward, terminated, truncated, _ = env.step(jax.random.key(0), hungry, jnp.int32(RIGHT), params)
    assert bool(terminated) and not bool(truncated) and float(reward) == -1.0
    fed = env.make_state([(5, 5), (5, 4), (5, 3)], apple=(5, 6), direction=RIGHT, hunger=19)
    _, _, reward, terminated, truncated, _ = env.step(jax.random.key(0), fed, jnp.int32(RIGHT), params)
    assert not bool(terminated | truncated) and float(reward) == 1.0


def test_won_marks_the_full_board_only():
    env, params = envs.make("snake", size=4)
    path = [(0, 0), (0, 1), (0, 2), (0, 3), (1, 3), (1, 2), (1, 1), (1, 0), (2, 0), (2, 1), (2, 2), (2, 3)]
    path += [(3, 3), (3, 2), (3, 1)]
    full = env.make_state(path[::-1], apple=(3, 0), direction=LEFT)
    assert bool(env.step(jax.random.key(0), full, jnp.int32(LEFT), params)[-1]["won"])
    short = env.make_state(path[::-1][:5], apple=(3, 0), direction=LEFT)  # eats, but the board is not full
    _, _, reward, _, _, info = env.step(jax.random.key(0), short, jnp.int32(LEFT), params)
    assert float(reward) == 1.0 and not bool(info["won"])


def test_eval_params_never_cut_a_legal_game_short(snake):
    env, params = snake
    assert int(env.eval_params(params.replace(hunger_limit=30)).hunger_limit) == 100
    assert int(env.eval_params(params.replace(hunger_limit=250)).hunger_limit) == 250


def test_ego_relative_snake_follows_the_same_rules_as_the_world_one(ego, snake):
    """The same internal states under translated actions: the options change only what the agent sees and says."""
    (env_e, params_e), (env_w, params_w) = ego, snake
    n = 128
    keys = jax.random.split(jax.random.key(8), n)
    _, state = jax.vmap(env_e.reset, in_axes=(0, None))(keys, params_e.replace(mirror_prob=0.5))

    def body(state, key):
        act_key, step_key = jax.random.split(key)
        turn = jax.random.randint(act_key, (n,), 0, 3)
        world = (state.direction + jnp.where(state.mirrored, 1 - turn, turn - 1)) % 4
        world = jnp.where(state.mirrored & (world & 1 == 1), 4 - world, world)  # as the mirrored world agent says it
        keys = jax.random.split(step_key, n)
        out_e = jax.vmap(env_e.step, in_axes=(0, 0, 0, None))(keys, state, turn, params_e)
        out_w = jax.vmap(env_w.step, in_axes=(0, 0, 0, None))(keys, state, world, params_w)
        same = jax.tree.map(lambda a, b: jnp.all(a == b), out_e[1], out_w[1])
        counted = out_e[0][..., :2].sum(axis=(1, 2, 3)) == out_e[1].length  # head + body cells in view
        return out_e[1], (jnp.array(jax.tree.leaves(same)).all(), counted.all(), out_e[2] == out_w[2])

    _, (same, counted, rewards) = jax.lax.scan(body, state, jax.random.split(jax.random.key(9), 300))
    assert bool(same.all()) and bool(counted.all()) and bool(rewards.all())
