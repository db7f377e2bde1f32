"""The open arena (PufferLib Snake's setting): random worlds against a body-list reference written from
the rules, hand-built fights, births, the continuing episodes, the observation, and bad settings."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import envs
from jaxrl.envs.arena import DCOL, DROW
from jaxrl.envs.arena_open import BODY, CLASSES, FOOD, HEAD, KIND, TAG, WALL, OpenArena

UP, RIGHT, DOWN, LEFT = range(4)


def segments(env: OpenArena, state) -> list[list[tuple[int, int]] | None]:
    """Each live snake head first, a stacked tail repeated (Battlesnake's body list); None while dead."""
    lengths, alive = np.asarray(state.length), np.asarray(state.alive)
    out = []
    for k, cells in enumerate(env.bodies(state)):
        out.append(None if not alive[k] else cells[::-1] + [cells[0]] * (int(lengths[k]) - len(cells)))
    return out


def food_cells(env: OpenArena, state) -> set[tuple[int, int]]:
    grid = np.asarray(state.grid) & KIND
    return {(int(c // env.side - env.half), int(c % env.side - env.half)) for c in np.flatnonzero(grid == FOOD)}


def place(env: OpenArena, snakes, food=(), heading=None, health=None, time=10, params=None):
    """A state holding these snakes (head first; a repeated last cell is a stacked tail; None: dead) and food."""
    params = params or env.default_params
    _, state = env.reset(jax.random.key(0), params)
    grid = np.where(np.asarray(state.grid) == WALL, WALL, 0).astype(np.uint16)  # the border only
    index = lambda r, c: (r + env.half) * env.side + c + env.half
    ways = {(-1, 0): 0, (0, 1): 1, (1, 0): 2, (0, -1): 3}
    head, tail, stack, length, alive = [], [], [], [], []
    for k, body in enumerate(snakes):
        if not body:
            head.append(index(0, 0)), tail.append(index(0, 0)), stack.append(0), length.append(1), alive.append(False)
            continue
        distinct = list(dict.fromkeys(body))
        for i, (r, c) in enumerate(distinct):
            toward = distinct[i - 1] if i else None  # the next cell toward the head
            kind = HEAD if i == 0 else BODY + ways[(toward[0] - r, toward[1] - c)]
            grid[index(r, c)] = kind | (len(body) if i == 0 else k + 1) << TAG  # a head's length, a body's snake
        head.append(index(*body[0])), tail.append(index(*distinct[-1])), stack.append(len(body) - len(distinct))
        length.append(len(body)), alive.append(True)
    for r, c in food:
        grid[index(r, c)] = FOOD
    n = env.num_snakes
    return state.replace(
        grid=jnp.asarray(grid),
        head=jnp.asarray(head, jnp.int32),
        tail=jnp.asarray(tail, jnp.int32),
        stack=jnp.asarray(stack, jnp.int32),
        heading=jnp.asarray(heading or [UP] * n, jnp.int32),
        length=jnp.asarray(length, jnp.int32),
        health=jnp.asarray(health or [100] * n, jnp.int32),
        alive=jnp.asarray(alive),
        food_count=jnp.int32(len(food)),
        time=jnp.int32(time),
    )


def step(env, state, actions, params=None, key=1):
    params = params or env.default_params
    return env.step(jax.random.key(key), state, jnp.asarray(actions, jnp.int32), params)


STRAIGHT = 1


# -- fights, tails, births -------------------------------------------------------------------------------


def test_head_to_head_the_longer_survives_and_equal_lengths_both_die():
    env = OpenArena(width=12, height=9, num_snakes=3, num_food=0, view=5)
    a = [(4, 2), (4, 1), (4, 0)]  # heading right into (4, 3)
    b = [(4, 4), (4, 5), (4, 6), (4, 7)]  # heading left into (4, 3), longer
    c = [(8, 11)]
    state = place(env, [a, b, c], heading=[RIGHT, LEFT, UP])
    _, s, reward, term, _trunc, _ = step(env, state, [STRAIGHT] * 3)
    bodies = segments(env, s)
    assert bodies[1] == [(4, 3), (4, 4), (4, 5), (4, 6)] and float(reward[1]) == 0.0
    assert float(reward[0]) == -1.0 and bodies[0] != a[:1]  # died: born again elsewhere, 3 long on one cell
    assert bodies[0] is None or (len(set(bodies[0])) == 1 and len(bodies[0]) == 3)
    a2 = [(4, 2), (4, 1), (4, 0), (3, 0)]
    state = place(env, [a2, b, c], heading=[RIGHT, LEFT, UP])
    _, s, reward, _, _, _ = step(env, state, [STRAIGHT] * 3)
    assert np.asarray(reward)[:2].tolist() == [-1.0, -1.0]
    assert not bool(term) and int(np.asarray(s.claim).sum()) == 0


def test_a_tail_that_moves_away_is_free_but_one_stacked_by_eating_is_not():
    env = OpenArena(width=8, height=8, num_snakes=2, num_food=0, view=5)
    chaser = [(2, 2), (2, 1)]  # heads right into (2, 3), the other's tail
    ring = [(1, 3), (1, 4), (2, 4), (2, 3)]  # its tail at (2, 3) leaves as it moves up
    state = place(env, [chaser, ring], heading=[RIGHT, UP])
    _, s, reward, _, _, _ = step(env, state, [STRAIGHT, STRAIGHT])
    assert np.asarray(reward).tolist() == [0.0, 0.0] and segments(env, s)[0] == [(2, 3), (2, 2)]
    stacked = [(1, 3), (1, 4), (2, 4), (2, 3), (2, 3)]  # just ate: the tail stays one more move
    state = place(env, [chaser, stacked], heading=[RIGHT, UP])
    _, s, reward, _, _, _ = step(env, state, [STRAIGHT, STRAIGHT])
    assert float(reward[0]) == -1.0 and segments(env, s)[1] == [(0, 3), (1, 3), (1, 4), (2, 4), (2, 3)]


def test_walls_starving_and_eating():
    env = OpenArena(width=8, height=8, num_snakes=3, num_food=1, view=5)
    params = env.default_params.replace(max_health=5)
    snakes = [[(0, 3), (1, 3)], [(5, 5), (6, 5)], [(3, 1), (4, 1)]]
    state = place(env, snakes, food=[(2, 1)], heading=[UP, UP, UP], health=[5, 1, 5], params=params)
    _, s, reward, _, _, _ = step(env, state, [STRAIGHT] * 3, params)
    assert np.asarray(reward).tolist() == pytest.approx([-1.0, -1.0, 0.1])  # the wall, starving, food
    assert segments(env, s)[2] == [(2, 1), (3, 1), (3, 1)] and int(s.health[2]) == 5
    assert int(s.food_count) == 1 and len(food_cells(env, s)) == 1 and (2, 1) not in food_cells(env, s)


# -- random worlds against a body-list reference ---------------------------------------------------------


def reference_step(env, snakes, food, health, directions, params):
    """Battlesnake's move, feed and eliminate on body lists: (moved bodies, health, eats, dies)."""
    moved, eats, heads, dies = [], [], [], []
    for k, body in enumerate(snakes):
        if body is None:
            moved.append(None), eats.append(False), heads.append(None)
            continue
        r, c = body[0][0] + DROW[directions[k]], body[0][1] + DCOL[directions[k]]
        heads.append((r, c) if 0 <= r < env.height and 0 <= c < env.width else None)
        new = [(r, c), *body[:-1]]
        ate = heads[k] is not None and heads[k] in food
        eats.append(ate)
        moved.append([*new, new[-1]] if ate else new)
        health[k] = params.max_health if ate else health[k] - 1
    taken = {cell for body in moved if body for cell in body[1:]}
    for k, body in enumerate(moved):
        if body is None:
            dies.append(False)
            continue
        rivals = [len(moved[j]) for j in range(len(moved)) if j != k and moved[j] and heads[j] == heads[k]]
        dies.append(
            heads[k] is None
            or (params.max_health > 0 and health[k] <= 0)
            or heads[k] in taken
            or any(length >= len(body) for length in rivals)
        )
    return moved, health, eats, dies


@pytest.mark.parametrize(("width", "height", "num_snakes", "seed"), [(10, 8, 10, 0), (16, 12, 6, 1)])
def test_random_worlds_follow_the_rules_of_a_body_list_reference(width, height, num_snakes, seed):
    env = OpenArena(width=width, height=height, num_snakes=num_snakes, num_food=8, view=5)
    params = env.default_params.replace(max_health=25, start_length=2)
    step_fn = jax.jit(env.step)
    key = jax.random.key(seed)
    _, state = env.reset(key, params)
    rng = np.random.default_rng(seed)
    fights = births = meals = 0
    for _ in range(150):
        snakes, food = segments(env, state), food_cells(env, state)
        health = np.asarray(state.health).tolist()
        actions = rng.integers(0, 3, num_snakes)
        directions = [(h + a - 1) % 4 for h, a in zip(np.asarray(state.heading).tolist(), actions)]
        moved, health, eats, dies = reference_step(env, snakes, food, health, directions, params)
        key, sub = jax.random.split(key)
        _, new, reward, term, _trunc, _ = step_fn(sub, state, jnp.asarray(actions, jnp.int32), params)
        got, alive = segments(env, new), np.asarray(new.alive)
        eaten = {m[0] for m, e in zip(moved, eats) if e}
        survivors = {cell for m, d in zip(moved, dies) if m and not d for cell in m}
        fresh = set()
        for k in range(num_snakes):
            expect = params.reward_death if dies[k] else params.reward_food if eats[k] else 0.0
            assert float(reward[k]) == pytest.approx(expect if moved[k] else 0.0), k
            if moved[k] and not dies[k]:
                assert got[k] == moved[k] and int(new.health[k]) == health[k], k
            elif alive[k]:  # born again this step on a free cell, start_length stacked there
                births += 1
                assert len(set(got[k])) == 1 and len(got[k]) == params.start_length
                assert got[k][0] not in survivors | (food - eaten) | fresh
                fresh.add(got[k][0])
        now = food_cells(env, new)
        assert food - eaten <= now and not (now - (food - eaten)) & (survivors | fresh)
        assert len(now) == int(new.food_count) <= env.num_food
        assert int(np.asarray(new.claim).sum()) == 0 and not bool(term)
        word = np.asarray(new.grid)
        assert (((word & KIND) == 0) == (word == 0)).all()  # an empty cell is the word 0: births test whole words
        index = lambda r, c: (r + env.half) * env.side + c + env.half
        for k, cells in enumerate(got):
            tags = [int(word[index(*cell)]) >> TAG for cell in dict.fromkeys(cells or [])]
            assert tags == [] or tags == [len(cells)] + [k + 1] * (len(tags) - 1), k  # a head's length, then owner
        fights += sum(dies)
        meals += sum(eats)
        state = new
    assert fights >= 10 and births >= 10 and meals >= 5, (fights, births, meals)


# -- episodes and the observation ---------------------------------------------------------------------


def test_the_world_continues_across_truncations():
    env, params = envs.make("arena_open", width=12, height=10, num_snakes=4, num_food=4, view=5)
    params = params.replace(max_steps_in_episode=7)
    key = jax.random.key(3)
    _, state = env.reset(key, params)
    for t in range(1, 22):
        before = state
        obs, state, _, term, trunc, info = env.step(jax.random.fold_in(key, t), state, jnp.ones(4, jnp.int32), params)
        assert bool(trunc) == (t % 7 == 0) and not bool(term)
        assert int(state.time) == t  # never reset: the stamps' clock goes on
        np.testing.assert_array_equal(obs, info["final_observation"])
        if t % 7 == 0:
            assert int(state.deaths) == 0 and int(info["deaths"]) >= int(before.deaths)


def test_each_snake_sees_its_turned_crop():
    env = OpenArena(width=10, height=9, num_snakes=3, num_food=0, view=5)
    a = [(1, 1), (2, 1), (3, 1), (3, 2)]
    b = [(2, 3), (2, 4), (2, 5)]  # as long as... shorter than a: b's view marks a's head as at least as long
    c = [(8, 8), (8, 9)]
    state = place(env, [a, b, c], food=[(0, 3)], heading=[UP, LEFT, LEFT], health=[3, 100, 100])
    obs = np.asarray(env.get_obs(state))
    half = env.half
    for k, (body, heading) in enumerate(zip([a, b, c], [UP, LEFT, LEFT])):
        r0, c0 = body[0]
        expect = np.zeros((5, 5, 7), np.uint8)
        for i in range(5):
            for j in range(5):
                r, cc = r0 + i - half, c0 + j - half
                if not (0 <= r < env.height and 0 <= cc < env.width):
                    expect[i, j, 5] = 1
                    continue
                for m, other in enumerate([a, b, c]):
                    if (r, cc) in other:
                        if m == k:
                            expect[i, j, 0] = 1
                        elif (r, cc) == other[0]:
                            expect[i, j, 2] = 1
                            expect[i, j, 3] = int(len(other) >= len(body))
                        else:
                            expect[i, j, 1] = 1
                expect[i, j, 4] = int((r, cc) == (0, 3))
        expect = np.rot90(expect, heading, axes=(0, 1)).copy()
        expect[..., 6] = (np.arange(25) < int(state.health[k])).reshape(5, 5)
        np.testing.assert_array_equal(one_code(expect), obs[k], err_msg=f"snake {k}")


def one_code(channels: np.ndarray) -> np.ndarray:
    """The arena's channels (own body, other bodies, other heads, heads at least as long, food, wall, health
    bar) as the open arena's one code a cell: what lies there, plus CLASSES under the health bar."""
    c = channels.astype(int)
    what = np.select(
        [c[..., 0] == 1, (c[..., 2] & c[..., 3]) == 1, c[..., 2] == 1, c[..., 1] == 1, c[..., 4] == 1, c[..., 5] == 1],
        [1, 4, 3, 2, 5, 6],
        0,
    )
    return (what + CLASSES * c[..., 6]).astype(np.uint8)


# -- settings ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"width": 4}, "arena_open width must be an integer from 8 to 4096, got 4"),
        ({"width": 8, "height": 8, "num_snakes": 9}, "arena_open num_snakes must be an integer from 1 to 8"),
        ({"view": 4}, "arena_open view must be an odd integer from 3 to 63, got 4"),
        ({"width": 8, "height": 8, "num_snakes": 2, "num_food": 17}, "num_food must be an integer from 0 to 16"),
        ({"max_health": -1}, "max_health=-1 is invalid: must be an integer from 0 (no starving)"),
    ],
)
def test_bad_settings_are_refused_in_one_line(settings, message):
    with pytest.raises(ValueError) as err:
        envs.spec("arena_open").make(**settings)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_ppo_trains_every_snake_as_a_stream(tmp_path):
    import csv

    from jaxrl.cli.train import main

    args = ["env=arena_open", "env.width=16", "env.height=12", "env.num_snakes=8", "env.num_food=8", "env.view=5"]
    args += ["env.max_steps_in_episode=16", "num_envs=2", "algo.num_steps=16", "algo.num_minibatches=2"]
    args += ["algo.hidden=[16]", "total_timesteps=1024", f"run_dir={tmp_path / 'run'}", "progress=false"]
    assert main(args) == 0
    with open(tmp_path / "run" / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert int(rows[-1]["env_steps"]) == 1024 and len(rows) == 32  # world steps: 2 worlds x 16 steps an update
    assert float(rows[-1]["episodes"]) == 16  # each window of 16 steps ends an episode for each of the 2 x 8 snakes
    assert np.isfinite(float(rows[-1]["episode_return"])) and float(rows[-1]["episode_length"]) == 16
    assert 1 <= float(rows[-1]["score"]) < 20  # the live snakes' mean length at the windows' ends


@pytest.mark.parametrize("rules", ["battlesnake", "pufferlib"])
def test_worlds_past_int32_indexes_step_in_groups_as_they_would_at_once(rules):
    """More worlds than fit in int32 flat-board indexes step as groups that fit, one after another, to the
    same bits as all at once: here the limit is lowered so that 5 small worlds go 2 at a time."""
    from jaxrl.envs.arena_open import open_arena

    at_once = open_arena(width=16, height=12, num_snakes=4, num_food=6, view=5, rules=rules, max_length=1024)
    grouped = open_arena(width=16, height=12, num_snakes=4, num_food=6, view=5, rules=rules, max_length=1024)
    # A puffer world's span is its rings (4 snakes x 1024 cells), longer than its board (16 x 12).
    assert grouped._world_span() == (4 * 1024 if rules == "pufferlib" else grouped.num_cells)
    grouped.index_limit = 3 * grouped._world_span()  # below 3 worlds' indexes: groups of 2, the last one padded
    seen = []  # the worlds each flat step is given, recorded as it is traced
    flat_step = grouped._step_worlds
    grouped._step_worlds = lambda keys, *rest: seen.append(keys.shape[0]) or flat_step(keys, *rest)
    params = at_once.default_params
    keys = jax.random.split(jax.random.key(3), 5)
    _, state = jax.vmap(at_once.reset, (0, None))(keys, params)
    steps = [jax.jit(jax.vmap(env.step, (0, 0, 0, None))) for env in (at_once, grouped)]
    a = b = state
    rng = np.random.default_rng(0)
    deaths = 0
    for t in range(40):
        actions = jnp.asarray(rng.integers(0, 3, (5, 4)), jnp.int32)
        keys = jax.random.split(jax.random.key(100 + t), 5)
        out_a, out_b = steps[0](keys, a, actions, params), steps[1](keys, b, actions, params)
        for x, y in zip(jax.tree.leaves(out_a), jax.tree.leaves(out_b)):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=f"step {t}")
        a, b = out_a[1], out_b[1]
        deaths += int(np.asarray(out_a[5]["deaths"]).sum())
    assert deaths > 0  # the worlds did change: snakes died and were born
    assert max(seen) == 2  # the 5 worlds went in groups of 2 (3 of them, in turn), never all at once


def test_one_snake_has_no_agent_axis_like_the_other_envs():
    env, params = envs.make("arena_open", width=8, height=8, num_snakes=1, num_food=2, view=3)
    assert (
        env.num_agents == 1 and env.action_space(params).shape == () and env.observation_space(params).shape == (3, 3)
    )
    obs, state = env.reset(jax.random.key(0), params)
    obs, _, reward, _, _, _ = env.step(jax.random.key(1), state, jnp.int32(1), params)
    assert obs.shape == (3, 3) and reward.shape == ()


def test_a_long_body_that_dies_is_walked_clear_cell_by_cell():
    """A winding snake of 19 cells (a stacked tail too) runs into the wall: every cell of its body is
    cleared on that step, while a snake beside it keeps all of its own."""
    env = OpenArena(width=12, height=10, num_snakes=2, num_food=0, view=3)
    winding = [(0, c) for c in range(1, 10)] + [(1, c) for c in range(9, -1, -1)]  # head (0, 1), heading up
    winding = winding + [winding[-1]]  # a stacked tail
    other = [(5, 5), (6, 5), (7, 5)]
    state = place(env, [winding, other], heading=[UP, UP])
    _, s, reward, _, _, _ = step(env, state, [STRAIGHT, STRAIGHT])
    assert np.asarray(reward).tolist() == [-1.0, 0.0]
    grid = np.asarray(s.grid) & KIND
    index = lambda r, c: (r + env.half) * env.side + c + env.half
    left = [cell for cell in dict.fromkeys(winding) if grid[index(*cell)] >= BODY]
    born = segments(env, s)[0]
    assert left == [] or (born is not None and set(left) == {born[0]})  # only a snake born there since
    assert segments(env, s)[1] == [(4, 5), (5, 5), (6, 5)]
