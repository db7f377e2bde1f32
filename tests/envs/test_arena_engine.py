"""The arena against the official Battlesnake engine's rules where its recorded games rarely go: the order of
the eliminations, causes and credit, the food law, the starts of its maps, the four moves, and the rulesets.
(tests/battlesnake/test_replay.py replays the engine's own games.)"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.envs.arena import CAUSES, Arena

UP, RIGHT, DOWN, LEFT = range(4)


def advance(env: Arena, state, directions, params=None, key=0):
    params = params or env.default_params
    return env.advance(jax.random.key(key), state, jnp.array(directions, jnp.int32), params)


def cause(state, k: int) -> str:
    return CAUSES[int(state.cause[k])]


# -- the eliminations: the starved and those off the board leave before the collisions ----------------------


def test_a_body_of_a_snake_that_starves_this_turn_does_not_kill():
    env = Arena(size=7, num_snakes=2)
    a = [(3, 1), (3, 0), (4, 0)]  # moves right into (3, 2), which b's body holds
    b = [(2, 2), (3, 2), (4, 2), (5, 2)]  # health 1: it starves as it moves up
    _, s, _, _, _ = advance(env, env.make_state([a, b], health=[50, 1]), [RIGHT, UP])
    assert np.asarray(s.alive).tolist() == [True, False]
    assert cause(s, 1) == "out-of-health" and int(s.killer[1]) == -1 and int(s.kills[0]) == 0


def test_a_body_of_a_snake_that_leaves_the_board_this_turn_does_not_kill():
    env = Arena(size=7, num_snakes=2)
    a = [(1, 1), (1, 0), (2, 0)]  # right into (1, 2)
    b = [(0, 2), (1, 2), (2, 2), (3, 2)]  # up off the board
    _, s, _, _, _ = advance(env, env.make_state([a, b]), [RIGHT, UP])
    assert np.asarray(s.alive).tolist() == [True, False] and cause(s, 1) == "wall-collision"


def test_a_longer_snake_that_starves_loses_no_head_to_head():
    env = Arena(size=7, num_snakes=2)
    a = [(3, 2), (3, 1), (3, 0)]
    b = [(3, 4), (3, 5), (3, 6), (2, 6), (1, 6)]  # longer, but it starves on the step
    _, s, _, _, _ = advance(env, env.make_state([a, b], health=[50, 1]), [RIGHT, LEFT])
    assert np.asarray(s.alive).tolist() == [True, False] and cause(s, 1) == "out-of-health"
    assert int(s.length[0]) == 3 and int(s.owner[3 * 7 + 3]) == 0


def test_eating_on_the_last_point_of_health_saves_a_snake():
    env = Arena(size=7, num_snakes=2)
    s0 = env.make_state([[(3, 3), (3, 4), (3, 5)], [(6, 6), (6, 5), (6, 4)]], food=[(2, 3)], health=[1, 50])
    _, s, _, _, _ = advance(env, s0, [UP, UP])
    assert bool(s.alive[0]) and int(s.health[0]) == 100 and int(s.length[0]) == 4


def test_each_cause_and_who_is_credited():
    env = Arena(size=7, num_snakes=4)
    a = [(1, 1), (1, 2), (2, 2), (2, 1), (3, 1)]  # down into its own body at (2, 1)
    b = [(5, 1), (5, 2), (5, 3)]  # down into c's body at (6, 1)
    c = [(6, 0), (6, 1), (6, 2), (6, 3), (6, 4)]  # up into (5, 0)
    d = [(0, 5), (0, 6), (1, 6)]  # up off the board
    _, s, _, _, _ = advance(env, env.make_state([a, b, c, d]), [DOWN, DOWN, UP, UP])
    assert [cause(s, k) for k in range(4)] == ["snake-self-collision", "snake-collision", "", "wall-collision"]
    assert np.asarray(s.killer).tolist() == [0, 2, -1, -1]
    assert np.asarray(s.kills).tolist() == [0, 0, 1, 0]  # its own body is no one's kill


def test_a_three_way_head_to_head_credits_the_longest_and_equals_each_first_by_index():
    env = Arena(size=7, num_snakes=3)
    a = [(3, 2), (3, 1), (3, 0)]  # right into (3, 3)
    b = [(3, 4), (3, 5), (3, 6)]  # left into (3, 3)
    c = [(2, 3), (1, 3), (0, 3)]  # down into (3, 3)
    _, s, _, _, _ = advance(env, env.make_state([a, b, c]), [RIGHT, LEFT, DOWN])
    assert [cause(s, k) for k in range(3)] == ["head-collision"] * 3
    assert np.asarray(s.killer).tolist() == [1, 0, 0]
    longer = env.make_state([a, b, [(2, 3), (1, 3), (0, 3), (0, 4)]])
    _, s, _, _, _ = advance(env, longer, [RIGHT, LEFT, DOWN])
    assert np.asarray(s.alive).tolist() == [False, False, True] and np.asarray(s.killer).tolist() == [2, 2, -1]
    assert int(s.kills[2]) == 2


@pytest.mark.parametrize("ruleset", ["royale", "standard"])  # the engine's standard ruleset burns too (hazard maps)
def test_a_hazard_burns_health_unless_food_lies_there_and_kills_at_zero_at_once(ruleset):
    env = Arena(size=7, num_snakes=2, ruleset=ruleset)
    hazards = [(2, 3), (4, 3)]
    state = env.make_state(
        [[(3, 3), (3, 4), (3, 5)], [(5, 5), (5, 4), (5, 3)]], food=[(4, 3)], hazards=hazards, health=[10, 15]
    )
    _, s, _, _, _ = advance(env, state, [UP, UP])
    assert int(s.health[0]) == 10 - 1 - 14 + 0 or not bool(s.alive[0])
    assert cause(s, 0) == "hazard" and bool(s.alive[1])
    fed = env.make_state([[(3, 3), (3, 4), (3, 5)], [(5, 5), (5, 4), (5, 3)]], food=[(4, 3)], hazards=hazards)
    _, s, _, _, _ = advance(env, fed, [DOWN, UP])
    assert int(s.health[0]) == 100 and int(s.length[0]) == 4
    burned = env.make_state([[(3, 3), (3, 4), (3, 5)], [(5, 5), (5, 4), (5, 3)]], hazards=hazards)
    _, s, _, _, _ = advance(env, burned, [UP, UP])
    assert int(s.health[0]) == 100 - 1 - 14 and bool(s.alive[0])


# -- food: after the eliminations, on free cells not beside a live head, the whole shortfall ------------------


def test_food_tops_up_the_whole_shortfall_after_the_eliminations_never_beside_a_live_head():
    env = Arena(size=7, num_snakes=2)
    params = env.default_params.replace(min_food=12, food_chance=0)
    a = [(3, 3), (3, 4), (3, 5)]
    b = [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5)]  # leaves the board: its cells are free again
    state = env.make_state([a, b])
    step = jax.jit(lambda key: env.advance(jax.random.key(key), state, jnp.array([UP, UP]), params)[1])
    for key in range(10):
        s = step(key)
        food = np.asarray(s.food).reshape(7, 7)
        assert food.sum() == 12
        head = (2, 3)
        assert not any(food[head[0] + dr, head[1] + dc] for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)))
        assert not (food & (np.asarray(s.owner).reshape(7, 7) >= 0)).any()
    spread = np.zeros((7, 7), int)
    for key in range(200):
        spread += np.asarray(step(key).food).reshape(7, 7)
    assert spread[0, :6].sum() > 0, "the cells of the snake that left are free the same turn"


def test_the_chance_of_one_more_food_is_the_engines_fourteen_in_a_hundred():
    env = Arena(size=11, num_snakes=2)
    state = env.make_state([[(5, 5), (5, 6), (5, 7)], [(9, 9), (9, 8), (9, 7)]], food=[(0, 0)])
    step = jax.jit(jax.vmap(lambda k: env.advance(k, state, jnp.array([UP, UP]), env.default_params)[1].food))
    food = np.asarray(step(jax.random.split(jax.random.key(0), 20_000)))
    rate = (food.sum(axis=1) - 1).mean()
    assert abs(rate - 0.14) < 0.01, rate  # 4 standard errors at 20,000 draws is 0.0098
    never = jax.vmap(lambda k: env.advance(k, state, jnp.array([UP, UP]), env.default_params.replace(food_chance=1))[1])
    assert int(np.asarray(never(jax.random.split(jax.random.key(1), 2000)).food).sum()) == 2000


# -- the engine's starts ----------------------------------------------------------------------------------


def engine_points(state, env) -> list[tuple[int, int]]:
    """Each playing snake's start as the engine's (x, y)."""
    n = env.size
    return [(int(h) % n, n - 1 - int(h) // n) for h, p in zip(np.asarray(state.head), np.asarray(state.playing)) if p]


QUICK_STARTS = {(7, 8), (11, 4), (19, 2), (7, 3)}  # the default tier's; the slow tier runs every pair
STARTS = [
    pytest.param(size, snakes, marks=() if (size, snakes) in QUICK_STARTS else pytest.mark.slow)
    for size in (7, 11, 19)
    for snakes in (1, 2, 3, 4, 5, 8)
]


@pytest.mark.parametrize("size,snakes", STARTS)
def test_starts_follow_the_engines_fixed_places_and_start_food(size, snakes):
    env = Arena(size=size, num_snakes=snakes, num_agents=1)
    mn, md, mx = 1, (size - 1) // 2, size - 2
    corners = {(mn, mn), (mn, mx), (mx, mn), (mx, mx)}
    cardinals = {(mn, md), (md, mn), (md, mx), (mx, md)}
    centre = (md, md)
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    _, states = reset(jax.random.split(jax.random.key(size * 10 + snakes), 400), env.default_params)
    firsts, seen = set(), set()
    for i in range(400):
        s = jax.tree.map(lambda a, i=i: a[i], states)
        points = engine_points(s, env)
        assert len(set(points)) == snakes and set(points) <= corners | cardinals
        group = corners if points[0] in corners else cardinals
        assert set(points[:4]) <= group and set(points[4:]) <= (corners | cardinals) - group
        firsts.add(points[0] in corners)
        seen |= set(points)
        food = {(int(c) % size, size - 1 - int(c) // size) for c in np.flatnonzero(np.asarray(s.food))}
        assert centre in food
        per_snake = snakes <= 4 or size >= 11
        assert len(food) == 1 + (snakes if per_snake else 0)
        for x, y in food - {centre}:
            assert (x, y) not in {(0, 0), (0, size - 1), (size - 1, 0), (size - 1, size - 1)}
            owners = [p for p in points if abs(p[0] - x) == 1 and abs(p[1] - y) == 1]
            assert any((x < px < md) or (md < px < x) or (y < py < md) or (md < py < y) for px, py in owners), (
                "start food lies away from the centre on some axis"
            )
        assert np.asarray(s.length)[np.asarray(s.playing)].tolist() == [3] * snakes
    assert firsts == {True, False} and seen == (corners | cardinals if snakes > 4 else seen)
    if snakes <= 4:
        assert seen == corners | cardinals  # both groups come first in some games


def test_starts_of_nine_to_sixteen_snakes_spread_over_the_quadrants():
    size = 11
    env = Arena(size=size, num_snakes=12)
    h = (size // 2) // 3
    first = [(h, h), (size // 2 - h, h), (h, size // 2 - h), (size // 2 - h, size // 2 - h)]
    quads = [
        set(first),
        {(size - 1 - x, y) for x, y in first},
        {(x, size - 1 - y) for x, y in first},
        {(size - 1 - x, size - 1 - y) for x, y in first},
    ]
    _, states = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.key(0), 100), env.default_params)
    for i in range(100):
        points = engine_points(jax.tree.map(lambda a, i=i: a[i], states), env)
        assert len(set(points)) == 12
        where = [next(q for q, cells in enumerate(quads) if p in cells) for p in points]
        assert all(where[k + 1] == (where[k] + 1) % 4 for k in range(11)), "the quadrants take turns"


def test_other_boards_start_snakes_on_distinct_even_cells_but_the_centre():
    for size, snakes in ((5, 4), (6, 3), (9, 12), (19, 20)):
        env = Arena(size=size, num_snakes=snakes)
        _, states = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.key(1), 50), env.default_params)
        centre = ((size - 1) // 2, (size - 1) // 2)
        for i in range(50):
            s = jax.tree.map(lambda a, i=i: a[i], states)
            points = engine_points(s, env)
            assert len(set(points)) == snakes and all((x + y) % 2 == 0 for x, y in points) and centre not in points
            if size < 7:  # one random food per snake, never beside a head
                food = np.asarray(s.food)
                assert food.sum() == snakes
                heads = {(int(h) // size, int(h) % size) for h in np.asarray(s.head)}
                for c in np.flatnonzero(food):
                    r, col = divmod(int(c), size)
                    assert all(abs(r - hr) + abs(col - hc) > 1 for hr, hc in heads)


# -- four moves ---------------------------------------------------------------------------------------------


def test_every_first_move_from_a_stacked_start_can_be_played_and_back_into_the_neck_is_a_self_collision():
    env = Arena(size=11, num_snakes=2, num_agents=1)
    assert env.action_space().n == 4
    _, s = env.reset(jax.random.key(0), env.default_params)
    targets = set()
    for action in range(4):
        _, s1, _, _, _ = env.step_env(jax.random.key(1), s, jnp.int32(action), env.default_params)
        assert bool(s1.alive[0])
        targets.add(int(s1.head[0]))
    assert len(targets) == 4
    _, s1, _, _, _ = env.step_env(jax.random.key(1), s, jnp.int32(1), env.default_params)
    _, s2, _, _, _ = env.step_env(jax.random.key(2), s1, jnp.int32(3), env.default_params)
    assert not bool(s2.alive[0]) and cause(s2, 0) == "snake-self-collision"


# -- the rulesets ---------------------------------------------------------------------------------------------


def test_wrapped_edges_wrap_and_the_view_goes_on_across_them():
    env = Arena(size=7, num_snakes=2, ruleset="wrapped", view=7)
    state = env.make_state([[(0, 3), (1, 3), (2, 3)], [(6, 6), (6, 5), (6, 4)]])
    _, s, _, _, _ = advance(env, state, [UP, RIGHT])
    assert np.asarray(s.alive).tolist() == [True, True]
    assert int(s.head[0]) == 6 * 7 + 3 and int(s.head[1]) == 6 * 7 + 0
    obs = np.asarray(env.get_obs(s))
    assert obs[..., 5].sum() == 0, "no wall anywhere in a wrapped view"


def test_the_tails_channel_marks_the_tails_the_next_move_empties_and_not_a_stacked_one():
    env = Arena(size=7, num_snakes=2, view=7, tails=True)
    assert env.observation_space().shape == (7, 7, 9) and Arena(view=7).observation_space().shape == (7, 7, 8)
    # Snake 1 has just eaten: its tail is stacked and stays one more move.
    state = env.make_state([[(3, 3), (4, 3), (5, 3)], [(1, 1), (1, 2), (1, 3), (1, 3)]], heading=[UP, LEFT])
    obs = np.asarray(env.get_obs(state))  # heading up: the view is the board around the head, unturned
    assert np.argwhere(obs[..., 8]).tolist() == [[5, 3]]
    np.testing.assert_array_equal(obs[..., :8], np.asarray(Arena(size=7, num_snakes=2, view=7).get_obs(state)))
    _, s, _, _, _ = advance(env, state, [UP, LEFT])
    obs = np.asarray(env.get_obs(s))  # the head at (2, 3): its tail (4, 3), and snake 1's unstacked (1, 3)
    assert np.argwhere(obs[..., 8]).tolist() == [[2, 3], [5, 3]]
    with pytest.raises(ValueError, match="arena tails must be true or false, got 'yes'"):
        Arena(tails="yes")


def test_constrictor_grows_every_snake_every_turn_and_keeps_no_food():
    env = Arena(size=11, num_snakes=2, ruleset="constrictor")
    _, s = env.reset(jax.random.key(0), env.default_params)
    assert int(np.asarray(s.food).sum()) == 0 and np.asarray(s.length).tolist() == [3, 3]
    lengths = []
    for t in range(4):
        _, s, _, _, _ = env.step_env(jax.random.key(t), s, jnp.int32(1), env.default_params)
        lengths.append(int(s.length[1]))
        assert int(s.health[1]) == 100
    assert lengths == [3, 4, 5, 6]  # the stacked start does not grow twice


def test_royale_closes_in_one_side_every_shrink_and_solo_ends_only_when_no_snake_is_left():
    env = Arena(size=11, num_snakes=2, ruleset="royale")
    params = env.default_params.replace(shrink_every=3)
    _, s = env.reset(jax.random.key(0), params)
    sizes = []
    for t in range(9):
        s = s.replace(health=jnp.full(2, 100, jnp.int32))
        _, s, _, _, _ = env.advance(jax.random.key(t), s, jnp.zeros(2, jnp.int32) + s.heading, params)
        sizes.append(int(np.asarray(s.hazard).sum()))
    assert sizes[:2] == [0, 0] and sizes[2] == 11 and sizes[5] in (21, 22) and sizes[8] > sizes[5]
    solo = Arena(size=7, num_snakes=2, ruleset="solo")
    state = solo.make_state([[(3, 3), (3, 4), (3, 5)], [(0, 0), (1, 0), (2, 0)]])
    _, s, _, over, _ = advance(solo, state, [UP, UP])
    assert np.asarray(s.alive).tolist() == [True, False] and not bool(over)


def test_an_unknown_ruleset_is_refused_in_one_line():
    with pytest.raises(ValueError, match="ruleset must be one of standard, solo, wrapped"):
        Arena(ruleset="squad")


def test_evaluation_counts_how_the_learner_ended(tmp_path):
    import shutil
    from pathlib import Path

    import jaxrl

    fixture = Path(__file__).resolve().parents[1] / "data" / "runs" / "format-3" / "arena-selfplay-v2"
    run_dir = Path(shutil.copytree(fixture, tmp_path / "run"))
    result = jaxrl.load(run_dir).evaluate(episodes=16, seed=0)
    ended = result["ended_by"]
    assert sum(ended.values()) == 16 and set(ended) == {n or "nothing (alive at the end)" for n in CAUSES}
    assert sum(v for k, v in ended.items() if not k.startswith("nothing")) >= 16 - result["wins"] - 16 // 2
