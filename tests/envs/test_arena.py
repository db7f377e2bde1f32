"""The multi-snake arena: Battlesnake's rules on hand-built states, random games against a body-list
reference written from the rules, the bots, the observation, and bad settings."""

from __future__ import annotations

from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import envs
from jaxrl.envs.arena import CHANNELS, DCOL, DROW, Arena
from jaxrl.envs.arena import EnvParams as ArenaParams

UP, RIGHT, DOWN, LEFT = range(4)


def advance(env: Arena, state, directions, params=None, key=0):
    params = params or env.default_params
    return env.advance(jax.random.key(key), state, jnp.array(directions, jnp.int32), params)


# -- rules on hand-built states ------------------------------------------------------------------


def test_head_to_head_the_longer_survives_and_is_credited_with_the_kill():
    env = Arena(size=7, num_snakes=2)
    a = [(3, 2), (3, 1), (3, 0)]  # length 3, moving right into (3, 3)
    b = [(3, 4), (3, 5), (3, 6), (2, 6)]  # length 4, moving left into (3, 3)
    _, s, reward, over, info = advance(env, env.make_state([a, b]), [RIGHT, LEFT])
    assert np.asarray(s.alive).tolist() == [False, True]
    assert int(s.kills[1]) == 1 and int(info["winner"]) == 1 and bool(over)
    assert float(reward) == -1.0 and not bool(info["won"])
    assert np.asarray(s.placement).tolist() == [2, 1]


def test_head_to_head_of_equal_lengths_kills_both_and_nobody_wins():
    env = Arena(size=7, num_snakes=2)
    a = [(3, 2), (3, 1), (3, 0)]
    b = [(3, 4), (3, 5), (3, 6)]
    _, s, _, over, info = advance(env, env.make_state([a, b]), [RIGHT, LEFT])
    assert not np.asarray(s.alive).any() and bool(over)
    assert int(info["winner"]) == -1 and np.asarray(s.placement).tolist() == [1, 1]
    assert np.asarray(s.kills).tolist() == [1, 1]  # the engine credits each with the other
    assert np.asarray(s.cause).tolist() == [4, 4] and np.asarray(s.killer).tolist() == [1, 0]


def test_eating_before_the_meeting_decides_the_head_to_head():
    env = Arena(size=7, num_snakes=2)
    a = [(3, 2), (3, 1), (3, 0)]
    b = [(3, 4), (3, 5), (3, 6)]  # equal lengths, but a food lies on the meeting cell: both eat, still equal
    _, s, _, _, _ = advance(env, env.make_state([a, b], food=[(3, 3)]), [RIGHT, LEFT])
    assert not np.asarray(s.alive).any()
    c = [(2, 3), (1, 3), (0, 3), (0, 4)]  # a snake of 4 steps onto the food cell with b (3): only b dies
    env3 = Arena(size=7, num_snakes=3)
    state = env3.make_state([[(6, 0), (6, 1), (6, 2)], b, c])
    _, s, _, _, _ = advance(env3, state, [UP, LEFT, DOWN])
    assert np.asarray(s.alive).tolist() == [True, False, True]


def test_a_tail_that_moves_away_is_free_but_one_stacked_by_eating_is_not():
    env = Arena(size=7, num_snakes=2)
    chaser = [(2, 1), (2, 0), (1, 0)]
    runner = [(3, 3), (3, 2), (3, 1)]  # tail at (3, 1); the chaser moves down into it
    _, s, _, _, _ = advance(env, env.make_state([chaser, runner]), [DOWN, RIGHT])
    assert np.asarray(s.alive).tolist() == [True, True]
    # The runner eats now: its tail (3, 1) still frees this step, but the new tail (3, 2) is stacked.
    _, s, _, _, _ = advance(env, env.make_state([chaser, runner], food=[(3, 4)]), [DOWN, RIGHT])
    assert np.asarray(s.alive).tolist() == [True, True] and int(s.length[1]) == 4
    _, s, _, _, _ = advance(env, s, [RIGHT, RIGHT])  # the chaser at (3, 1) moves into the stacked tail (3, 2)
    assert np.asarray(s.alive).tolist() == [False, True] and int(s.kills[1]) == 1


def test_own_body_and_the_board_edge_kill():
    env = Arena(size=7, num_snakes=2)
    coiled = [(2, 2), (2, 3), (3, 3), (3, 2), (3, 1)]  # moving down enters its own body at (3, 2)
    edge = [(0, 5), (1, 5), (2, 5)]
    _, s, _, _, _ = advance(env, env.make_state([coiled, edge]), [DOWN, UP])
    assert np.asarray(s.alive).tolist() == [False, False]
    assert np.asarray(s.owner).max() == -1, "the dead leave the board"


def test_starving_at_zero_health_unless_the_step_eats():
    env = Arena(size=7, num_snakes=2)
    a, b = [(1, 1), (1, 0), (0, 0)], [(5, 5), (5, 6), (6, 6)]
    _, s, _, _, _ = advance(env, env.make_state([a, b], health=[1, 2]), [RIGHT, UP])
    assert np.asarray(s.alive).tolist() == [False, True] and int(s.health[1]) == 1
    _, s, _, _, _ = advance(env, env.make_state([a, b], food=[(1, 2)], health=[1, 2]), [RIGHT, UP])
    assert np.asarray(s.alive).tolist() == [True, True] and int(s.health[0]) == 100


def test_the_last_learner_alone_wins_and_a_dead_learners_rewards_stop():
    env = Arena(size=7, num_snakes=3, num_agents=2)
    learner, other, bot = [(1, 1), (1, 0), (0, 0)], [(0, 5), (1, 5), (2, 5)], [(5, 6), (5, 5), (5, 4)]
    params = env.default_params.replace(reward_win=5.0, reward_death=-2.0, reward_step=0.1, reward_outlive=0.5)
    state = env.make_state([learner, other, bot])
    _, s, reward, over, info = advance(env, state, [RIGHT, UP, UP], params)  # the second learner leaves the board
    assert np.asarray(reward).tolist() == pytest.approx([0.1 + 0.5, -2.0]) and not bool(over)
    _, s, reward, over, info = advance(env, s, [DOWN, UP, RIGHT], params)  # the bot leaves the board
    assert np.asarray(reward).tolist() == pytest.approx([5.0 + 0.5, 0.0]) and bool(over) and bool(info["won"])
    assert int(info["winner"]) == 0 and np.asarray(s.placement).tolist() == [1, 3, 2]


def test_the_game_ends_when_no_learner_is_left_and_in_a_solo_game_only_at_death():
    env = Arena(size=7, num_snakes=3)
    state = env.make_state([[(0, 1), (1, 1), (2, 1)], [(5, 5), (5, 4), (5, 3)], [(3, 5), (3, 4), (3, 3)]])
    _, s, _, over, info = advance(env, state, [UP, UP, UP])
    assert bool(over) and int(info["winner"]) == -1 and np.asarray(s.alive).tolist() == [False, True, True]
    solo = env.make_state([[(3, 3), (3, 2), (3, 1)], [], []])
    _, s, _, over, info = advance(env, solo, [UP, UP, UP])
    assert not bool(over) and not bool(info["won"])


def test_food_tops_up_to_the_minimum_on_free_cells_only():
    env = Arena(size=5, num_snakes=2)
    params = env.default_params.replace(min_food=3, food_chance=0)
    # 25 cells: two snakes of 10 and 9 leave 6 free cells after the move (their tails free).
    a = [(0, c) for c in range(5)] + [(1, c) for c in range(4, -1, -1)]  # head (0, 0) ... tail (1, 0)
    b = [(4, c) for c in range(5)] + [(3, c) for c in range(4, 0, -1)]
    state = env.make_state([a, b])
    for key in range(20):
        _, s, _, _, _ = advance(env, state, [DOWN, RIGHT], params, key=key)
        food, owner = np.asarray(s.food), np.asarray(s.owner)
        assert food.sum() == 3 and not (food & (owner >= 0)).any()


# -- random games against a reference written from the rules ---------------------------------------


def reference_step(size, bodies, health, food, directions, max_health):
    """The engine's standard turn on body lists (head first): move, health, feed, then the eliminations in
    two passes (starved and off the board first, their bodies gone before the collisions are judged)."""
    alive = [b is not None for b in bodies]
    heads = {}
    for k, body in enumerate(bodies):
        if body is None:
            continue
        r, c = body[0][0] + DROW[directions[k]], body[0][1] + DCOL[directions[k]]
        bodies[k] = [(r, c), *body[:-1]]
        health[k] -= 1
        heads[k] = (r, c)
    eaten = set()
    for k, (r, c) in heads.items():
        if 0 <= r < size and 0 <= c < size and food[r, c]:
            health[k] = max_health
            bodies[k].append(bodies[k][-1])
            eaten.add((r, c))
    for r, c in eaten:
        food[r, c] = False
    first = {k for k, (r, c) in heads.items() if health[k] <= 0 or not (0 <= r < size and 0 <= c < size)}
    left = [k for k in heads if k not in first]
    dead = set(first)
    for k in left:
        if any(heads[k] in bodies[j][1:] for j in left):
            dead.add(k)
        for j in left:
            if j != k and heads[j] == heads[k] and len(bodies[j]) >= len(bodies[k]):
                dead.add(k)
    for k in dead:
        bodies[k], alive[k] = None, False
    return dead


def owners(size, bodies):
    board = np.full((size, size), -1)
    for k, body in enumerate(bodies):
        for r, c in body or []:
            board[r, c] = k
    return board


@pytest.mark.parametrize("size,num_snakes,seed", [(7, 4, 0), (11, 4, 1), (9, 8, 2)])
def test_random_games_follow_the_rules_of_a_body_list_reference(size, num_snakes, seed):
    env = Arena(size=size, num_snakes=num_snakes)
    params = env.default_params.replace(max_health=25, min_food=2, greedy_share=0.5)
    advance_fn = jax.jit(env.advance)
    bots = jax.jit(env.bot_directions)
    rng = np.random.default_rng(seed)
    checked = 0
    for game in range(40):  # games until 300 transitions are checked (small boards end their games fast)
        if checked >= 300:
            break
        _, s = env.reset(jax.random.key(1000 * seed + game), params)
        start = np.asarray(s.head)
        bodies = [[divmod(int(start[k]), size)] * 3 if bool(s.playing[k]) else None for k in range(num_snakes)]
        health = [25] * num_snakes
        for t in range(300):
            key = jax.random.key(10_000 * seed + 100 * game + t)
            directions = np.array(bots(key, s))
            if rng.random() < 0.1:  # the learner plays random_safe, and now and then any move, backwards included
                directions[0] = rng.integers(4)
            food = np.asarray(s.food).reshape(size, size).copy()
            dead = reference_step(size, bodies, health, food, directions.tolist(), 25)
            _, s, _, over, _ = advance_fn(key, s, jnp.asarray(directions, jnp.int32), params)
            alive = [b is not None for b in bodies]
            assert np.asarray(s.alive).tolist() == alive, (game, t)
            assert (np.asarray(s.owner).reshape(size, size) == owners(size, bodies)).all(), (game, t)
            assert np.asarray(s.length)[alive].tolist() == [len(b) for b in bodies if b is not None]
            assert np.asarray(s.health)[alive].tolist() == [h for h, a in zip(health, alive, strict=True) if a]
            new_food = np.asarray(s.food).reshape(size, size)
            assert (new_food >= food).all(), "food only appears"
            spawned = new_food & ~food
            taken = owners(size, bodies) >= 0
            beside = np.zeros_like(taken)
            for body in bodies:
                if body is not None:
                    r, c = body[0]
                    for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                        if 0 <= r + dr < size and 0 <= c + dc < size:
                            beside[r + dr, c + dc] = True
            need = max(2 - int(food.sum()), 0)
            assert spawned.sum() == min(need, int((~taken & ~beside & ~food).sum())) or (
                need == 0 and spawned.sum() <= 1
            )
            assert not (spawned & (taken | beside)).any(), "new food lands on free cells, never beside a live head"
            checked += 1
            del dead, over  # the game would end with the learner; the rules go on for the bots
            if sum(alive) <= 1:
                break
    assert checked > 200


def test_bots_never_choose_a_certain_death_when_a_safe_move_exists():
    env = Arena(size=9, num_snakes=6)
    params = env.default_params.replace(greedy_share=0.5)

    def play(key):
        _, s = env.reset(key, params)

        def body(s, key):
            directions = env.bot_directions(key, s)
            turns = [(s.heading + t) % 4 for t in (-1, 0, 1)]
            safe = jnp.stack(
                [(env._target(s.head, d) >= 0) & ~env._at(s.life >= 2, env._target(s.head, d)) for d in turns]
            )
            chosen = env._target(s.head, directions)
            chosen_safe = (chosen >= 0) & ~env._at(s.life >= 2, chosen)
            _, s, _, _, _, _ = env.step(key, s, jnp.int32(1), params)
            return s, (s.alive, jnp.any(safe, axis=0), chosen_safe)

        _, out = jax.lax.scan(body, s, jax.random.split(key, 200))
        return out

    _alive, any_safe, chosen_safe = jax.jit(jax.vmap(play))(jax.random.split(jax.random.key(3), 32))
    any_safe, chosen_safe = np.asarray(any_safe), np.asarray(chosen_safe)
    assert any_safe.sum() > 10_000
    assert not (any_safe & ~chosen_safe).any()


def bfs(size, passable, food, start):
    if start < 0:
        return 0
    seen = {start: 0}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if food[cell]:
            return seen[cell]
        r, c = divmod(cell, size)
        for dr, dc in zip(DROW, DCOL, strict=True):
            nr, nc = r + dr, c + dc
            n = nr * size + nc
            if 0 <= nr < size and 0 <= nc < size and passable[n] and n not in seen:
                seen[n] = seen[cell] + 1
                queue.append(n)
    return None


def test_the_greedy_bots_path_lengths_match_a_breadth_first_search():
    env = Arena(size=9, num_snakes=4)
    params = env.default_params.replace(min_food=1, food_chance=0)
    rng = np.random.default_rng(0)
    dist = jax.jit(env.food_distance)
    compared = 0
    for game in range(20):
        _, s = env.reset(jax.random.key(game), params)
        for t in range(int(rng.integers(5, 40))):
            _, s, _, _, _, _ = env.step(jax.random.key(100 * game + t), s, jnp.int32(rng.integers(3)), params)
        targets = rng.integers(-1, 81, size=16)
        got = np.asarray(dist(s, jnp.asarray(targets, jnp.int32)))
        passable, food = np.asarray(s.life) <= 1, np.asarray(s.food)
        for target, d in zip(targets.tolist(), got.tolist(), strict=True):
            want = bfs(9, passable, food, target) if target < 0 or passable[target] or food[target] else None
            if want is None:
                continue  # a blocked target cell: a certain death, ranked apart
            assert d == min(want, 18), (game, target)
            compared += 1
    assert compared > 100


def test_greedy_bots_beat_random_safe_bots():
    env = Arena(size=11, num_snakes=4, num_agents=1)
    # The learner's slot plays random_safe too (its own choice); three greedy bots against it.
    params = env.default_params.replace(greedy_share=1.0)

    def play(key):
        _, s = env.reset(key, params)

        def body(carry, key):
            s, done, won = carry
            d = env.bot_directions(key, s)
            greedy_free = s.replace(greedy=jnp.zeros_like(s.greedy))
            d = d.at[0].set(env.bot_directions(key, greedy_free)[0])
            _, s2, _, over, info = env.advance(key, s, d, params)
            return (s2, done | over, jnp.where(done, won, info["winner"])), None

        (_, _, winner), _ = jax.lax.scan(body, (s, False, jnp.int32(-1)), jax.random.split(key, 300))
        return winner

    winners = np.asarray(jax.jit(jax.vmap(play))(jax.random.split(jax.random.key(0), 200)))
    assert (winners == 0).mean() < 0.15, "random_safe rarely outlasts three greedy bots"


# -- observation ------------------------------------------------------------------------------


def reference_view(env: Arena, s, k):
    size, half = env.size, env.half
    owner = np.asarray(s.owner).reshape(size, size)
    food = np.asarray(s.food).reshape(size, size)
    alive, heads, length = np.asarray(s.alive), np.asarray(s.head), np.asarray(s.length)
    out = np.zeros((env.view, env.view, len(CHANNELS)), np.uint8)
    if not alive[k]:
        return out
    hr, hc = divmod(int(heads[k]), size)
    head_cells = {int(heads[j]): j for j in range(env.num_snakes) if alive[j]}
    for i in range(env.view):
        for j in range(env.view):
            r, c = hr + i - half, hc + j - half
            if not (0 <= r < size and 0 <= c < size):
                out[i, j, 5] = 1
                continue
            o = owner[r, c]
            head_of = head_cells.get(r * size + c)
            out[i, j, 0] = o == k
            out[i, j, 1] = o >= 0 and o != k and head_of is None
            out[i, j, 2] = head_of is not None and head_of != k
            out[i, j, 3] = head_of is not None and head_of != k and length[head_of] >= length[k]
            out[i, j, 4] = food[r, c]
    out = np.rot90(out, int(s.heading[k])).copy()
    out[..., 6] = (np.arange(env.view**2) < int(s.health[k])).reshape(env.view, env.view)
    return out


def test_each_learner_sees_its_turned_crop():
    env = Arena(size=9, num_snakes=5, num_agents=3, view=7)
    params = env.default_params
    _, s = env.reset(jax.random.key(4), params)
    step = jax.jit(env.step)
    rng = np.random.default_rng(1)
    for t in range(60):
        obs, s, _, _, _, _ = step(jax.random.key(t), s, jnp.asarray(rng.integers(0, 3, 3), jnp.int32), params)
        for k in range(3):
            assert (np.asarray(obs[k]) == reference_view(env, s, k)).all(), (t, k)


def test_relative_actions_turn_from_the_heading():
    env = Arena(size=7, num_snakes=2)
    state = env.make_state([[(3, 3), (4, 3), (5, 3)], [(0, 0), (0, 1), (0, 2)]], heading=[UP, LEFT])
    for action, cell in [(0, (3, 2)), (1, (2, 3)), (2, (3, 4))]:
        _, s, _, _, _, _ = env.step(jax.random.key(0), state, jnp.int32(action), env.default_params)
        assert divmod(int(s.head[0]), 7) == cell


# -- settings ----------------------------------------------------------------------------------


def test_num_bots_and_the_bot_kind_change_without_recompiling():
    env = Arena(size=11, num_snakes=6)
    traces = []

    @jax.jit
    def game(key, params):
        traces.append(1)
        _, s = env.reset(key, params)
        return jnp.sum(s.playing), s.greedy

    for bots, share in [(1, 0.0), (3, 0.5), (5, 1.0)]:
        params = envs.spec("arena").with_params(env, env.default_params, num_bots=bots, greedy_share=share)
        playing, greedy = game(jax.random.key(0), jax.tree.map(jnp.asarray, params))
        assert int(playing) == 1 + bots
        if share in (0.0, 1.0):  # every bot of the game plays one kind; the learner is none
            assert np.asarray(greedy).tolist() == [False] + [share == 1.0] * 5
    assert len(traces) == 1


@pytest.mark.parametrize(
    "settings,message",
    [
        ({"num_snakes": 40}, "num_snakes must be an integer from 1 to 32"),
        ({"size": 5, "num_snakes": 13}, "too small for num_snakes=13"),
        ({"num_agents": 5}, "num_agents (learners) must be an integer from 1 to num_snakes"),
        ({"view": 4}, "view must be an odd integer"),
        ({"num_bots": 4}, "num_bots=4 is invalid: must be an integer from 0 to num_snakes - num_agents"),
        ({"greedy_share": 1.5}, "greedy_share=1.5 is invalid"),
    ],
)
def test_bad_settings_are_refused_in_one_line(settings, message):
    with pytest.raises(ValueError) as e:
        envs.spec("arena").make(**settings)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_default_params_fill_the_board_with_bots():
    env, params = envs.make("arena", num_snakes=6, num_agents=2)
    assert isinstance(params, ArenaParams) and params.num_bots == 4
    obs, _ = env.reset(jax.random.key(0), params)
    assert obs.shape == (2, 11, 11, 8) and obs.dtype == jnp.uint8


@pytest.mark.slow
def test_a_curriculum_over_the_bots_trains_with_one_compiled_chunk(tmp_path, monkeypatch):
    import csv

    from jaxrl.cli.train import main
    from tests.helpers import count_traces

    traces = count_traces(monkeypatch)
    phases = "[{steps: 2048, num_bots: 0}, {steps: 2048, num_bots: 1, greedy_share: 0}, {num_bots: 3}]"
    args = ["env=arena", "env.view=5", "num_envs=16", "algo.num_steps=16", "total_timesteps=6144", "num_chunks=6"]
    args += ["algo.hidden=[16]", f"curriculum={phases}", f"run_dir={tmp_path / 'run'}", "progress=false"]
    assert main(args) == 0
    assert len(traces) == 1, "every phase ran the same compiled chunk"
    with open(tmp_path / "run" / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    by_phase = {r["phase"]: r for r in rows}
    assert set(by_phase) == {"1", "2", "3"}
    assert float(by_phase["1"]["win_rate"]) == 0.0, "alone on the board nobody wins"
    assert float(by_phase["3"]["placement"]) > 1.5, "a barely trained snake among 3 greedy bots places low"


def test_bad_curriculum_bot_counts_are_one_line(tmp_path, capsys):
    from jaxrl.cli.train import main

    code = main(["env=arena", "curriculum=[{steps: 100, num_bots: 5}, {}]", f"run_dir={tmp_path / 'never'}"])
    err = capsys.readouterr().err
    assert code == 2 and "curriculum phase 1: num_bots=5 is invalid: must be an integer from 0 to" in err, err


def _played_states(env, games=8, turns=60, seed=0):
    """Concrete states from games of greedy bots (every snake a bot): bodies, heads and food in play."""
    params = env.default_params.replace(greedy_share=1.0)
    table = env.table()

    def play(key):
        _, s = table.reset_env(key, params)

        def body(s, key):
            s = table.step_env(key, s, table.bot_actions(key, s, "greedy"), params)[1]
            return s, s

        return jax.lax.scan(body, s, jax.random.split(key, turns))[1]

    out = jax.device_get(jax.jit(jax.vmap(play))(jax.random.split(jax.random.key(seed), games)))
    return [jax.tree.map(lambda x, g=g, t=t: x[g, t], out) for g in range(games) for t in range(0, turns, 7)]


def _neighbours_of(env, cell):
    r, c = divmod(cell, env.size)
    for dr, dc in zip(DROW, DCOL, strict=True):
        rr, cc = r + dr, c + dc
        if env.wrapped:
            rr, cc = rr % env.size, cc % env.size
        if 0 <= rr < env.size and 0 <= cc < env.size:
            yield rr * env.size + cc


@pytest.mark.parametrize("ruleset", ["standard", "wrapped", "constrictor"])
def test_room_is_a_flood_fill_in_time_and_distances_a_breadth_first_search(ruleset):
    env = Arena(size=9, num_snakes=5, num_agents=5, ruleset=ruleset)
    rng = np.random.default_rng(0)
    checked = 0
    room_of, distances_of = jax.jit(env.room), jax.jit(env.distances)
    for s in _played_states(env):
        life = np.asarray(s.life)
        targets = rng.integers(-1, env.num_cells, size=(3, env.num_snakes))
        blocked = rng.random((env.num_snakes, env.num_cells)) < 0.1
        room = np.asarray(room_of(s, jnp.asarray(targets), jnp.asarray(blocked)))
        for m in range(3):
            for k in range(env.num_snakes):
                t = int(targets[m, k])
                arrival = {} if t < 0 else {t: 1}  # the move on which each cell is first entered
                frontier = list(arrival)
                while frontier:
                    cell = frontier.pop(0)
                    move = arrival[cell] + 1
                    for n in _neighbours_of(env, cell):
                        opens = life[n] == 0 if env.constrictor else life[n] <= move  # its body moved off
                        if n not in arrival and opens and not blocked[k, n] and move <= 2 * env.size + 1:
                            arrival[n] = move
                            frontier.append(n)
                assert room[m, k] == len(arrival), (m, k)
                checked += 1
        sources = rng.random((2, env.num_cells)) < 0.05
        passable = life <= 1
        dist = np.asarray(distances_of(jnp.asarray(sources), jnp.asarray(passable)))
        for k in range(2):
            want = np.full(env.num_cells, 2 * env.size + 1)
            frontier = list(np.flatnonzero(sources[k]))
            want[frontier] = 0
            while frontier:
                cell = frontier.pop(0)
                for n in _neighbours_of(env, cell):
                    if passable[n] and want[n] > want[cell] + 1 and want[cell] + 1 <= 2 * env.size:
                        want[n] = want[cell] + 1
                        frontier.append(n)
            np.testing.assert_array_equal(dist[k], want)
    assert checked > 500


@pytest.mark.parametrize("kind, snakes, least", [("space", 5, 200), ("lookahead", 4, 150)])  # lookahead: 3 rivals
def test_the_strong_bots_take_no_certain_death_or_ghost_head_when_they_have_another_move(kind, snakes, least):
    env = Arena(size=9, num_snakes=snakes, num_agents=snakes)
    bot = jax.jit(lambda key, s: env.bot_actions(key, s, kind))
    chosen_bad, could_avoid = 0, 0
    for i, s in enumerate(_played_states(env, seed=1)):
        actions = np.asarray(bot(jax.random.key(i), s))
        alive, head, heading = np.asarray(s.alive), np.asarray(s.head), np.asarray(s.heading)
        length, life = np.asarray(s.length), np.asarray(s.life)
        for k in np.flatnonzero(alive):
            r, c = divmod(int(head[k]), env.size)

            def bad(direction, k=k, r=r, c=c):
                rr, cc = r + DROW[direction], c + DCOL[direction]
                if not (0 <= rr < env.size and 0 <= cc < env.size) or life[rr * env.size + cc] >= 2:
                    return True
                return any(
                    alive[j] and j != k and length[j] >= length[k] and abs(rr - hr) + abs(cc - hc) == 1
                    for j, (hr, hc) in enumerate(divmod(int(h), env.size) for h in head)
                )

            options = [bad(int((heading[k] + t) % 4)) for t in (-1, 0, 1)]
            if not all(options):
                could_avoid += 1
                chosen_bad += options[int(actions[k])] if actions[k] < 3 else 1
    assert could_avoid > least and chosen_bad == 0


def test_the_lookahead_bot_takes_a_kill_its_rival_cannot_escape_and_not_a_body():
    env = Arena(size=7, num_snakes=2, num_agents=2)
    # The rival (3 long) in the bottom-left corner heading left can only go up, into the cell beside my head.
    mine = [(5, 1), (4, 1), (3, 1), (2, 1), (1, 1)]  # 5 long, heading down: left is the kill, down its body
    state = env.make_state([mine, [(6, 0), (6, 1), (6, 2)]], food=[(0, 6)], heading=[2, 3])
    look = jax.jit(lambda key, s: env.bot_actions(key, s, "lookahead"))
    for i in range(8):
        assert int(look(jax.random.key(i), state)[0]) == 2  # turn right (west), whatever the tie-breaks
    # As long as the rival, the same cell is a head-on both lose: never taken while another move lives.
    even = env.make_state([mine[:3], [(6, 0), (6, 1), (6, 2)]], food=[(0, 6)], heading=[2, 3])
    for i in range(8):
        assert int(look(jax.random.key(i), even)[0]) == 0  # turn left (east): ahead a body, west a head as long


@pytest.mark.parametrize("script", ["space", "lookahead"])
def test_the_step_plays_the_script_it_was_built_with_and_says_what_it_cannot(script):
    with pytest.raises(ValueError, match=r"arena script must be one of greedy, space, lookahead, or .* got 'smart'"):
        Arena(script="smart")
    plain, spaced = Arena(), Arena().with_script(script)  # as an evaluation against that kind builds it
    assert spaced.script == script and Arena(script=script).with_script("random_safe").script == script
    assert spaced.set_bots(spaced.default_params, script, None).greedy_share == 1.0
    with pytest.raises(ValueError, match=f"opponents={script} is not compiled into this arena's step"):
        plain.set_bots(plain.default_params, script, None)
    params = spaced.default_params.replace(greedy_share=1.0)
    _, s = spaced.reset(jax.random.key(0), params)
    differ = 0
    space = jax.jit(lambda key, s: plain.bot_directions(key, s, script))
    greedy = jax.jit(plain.bot_directions)
    step = jax.jit(lambda key, s: spaced.step_env(key, s, jnp.int32(1), params)[1])
    for t in range(40):  # the step's bots move as space at a table would, and not always as greedy
        key = jax.random.key(t)
        want = np.asarray(space(key, s))
        differ += int((want != np.asarray(greedy(key, s))).sum())
        before = np.asarray(s.alive)
        s = step(key, s)
        moved = before & np.asarray(s.alive)
        np.testing.assert_array_equal(np.asarray(s.heading)[1:][moved[1:]], want[1:][moved[1:]])
    assert differ > 0


def test_a_mixed_script_gives_the_bots_seats_its_kinds_in_turn():
    with pytest.raises(ValueError, match="got 'space\\+smart'"):
        Arena(script="space+smart")
    mixed, plain = Arena().with_script("space+lookahead"), Arena()
    params = mixed.set_bots(mixed.default_params, "space+lookahead", None)
    _, s = mixed.reset(jax.random.key(3), params)
    kinds = {k: jax.jit(lambda key, s, k=k: plain.bot_directions(key, s, k)) for k in ("space", "lookahead")}
    learner = jax.jit(lambda key, s: plain.bot_actions(key, s, "space")[0])
    step = jax.jit(lambda key, s, a: mixed.step_env(key, s, a, params)[1])
    differ = 0
    for t in range(60):  # seats 1 and 3 play space, seat 2 lookahead (the learner plays space too)
        key = jax.random.key(t)
        space, look = np.asarray(kinds["space"](key, s)), np.asarray(kinds["lookahead"](key, s))
        want = np.array([space[0], space[1], look[2], space[3]])
        differ += int(space[2] != look[2])
        before = np.asarray(s.alive)
        s = step(key, s, learner(jax.random.fold_in(key, 1), s))
        if not np.asarray(s.alive)[0]:
            break
        moved = before & np.asarray(s.alive)
        np.testing.assert_array_equal(np.asarray(s.heading)[1:][moved[1:]], want[1:][moved[1:]])
    assert differ > 0


def test_fewest_bots_draws_each_games_number_of_bots():
    env = Arena()
    reset = jax.jit(jax.vmap(env.reset_env, in_axes=(0, None)))
    keys = jax.random.split(jax.random.key(0), 600)
    always = np.asarray(reset(keys, env.default_params)[1].playing).sum(axis=1)
    assert set(always.tolist()) == {4}  # -1, the default: every game num_bots
    drawn = np.asarray(reset(keys, env.default_params.replace(fewest_bots=1))[1].playing).sum(axis=1) - 1
    counts = np.bincount(drawn, minlength=4)
    assert counts[0] == 0 and all(150 < c < 250 for c in counts[1:]), counts  # 1, 2 or 3 bots, each a third
    with pytest.raises(ValueError, match="fewest_bots=4 is invalid: must be -1 .* or an integer from 0 to num_bots"):
        env.check_params(env.default_params.replace(fewest_bots=4))
    exactly = env.set_bots(env.default_params.replace(fewest_bots=1), None, 2)  # an evaluation's num_bots=2
    assert int(exactly.fewest_bots) == -1 and int(exactly.num_bots) == 2
    full = env.eval_params(env.default_params.replace(fewest_bots=1, num_bots=2))  # evaluation: the full table
    assert int(full.fewest_bots) == -1 and int(full.num_bots) == 2
    assert int(np.asarray(reset(keys[:50], full)[1].playing).sum(axis=1).min()) == 3
