"""`env=arena_open env.rules=pufferlib`: PufferLib Snake's rules, checked step by step against a reference
written from those rules over body lists, on random worlds; the hand-built cases; many worlds at once."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import envs
from jaxrl.envs.arena_puffer import CORPSE, EMPTY, FOOD, OPPOSITE, SPAWN_ROUNDS, WALL, PufferArena

STEP = {0: (-1, 0), 1: (1, 0), 2: (0, -1), 3: (0, 1)}


def colour(k: int) -> int:
    return 9 if k == 0 else 4 + k % 4


def make(**settings):
    return envs.make("arena_open", rules="pufferlib", **settings)


def reference_step(env: PufferArena, grid, bodies, heading, actions, key, params):
    """One step of the rules on body lists (tail first, flat cells), the draws taken from the env's
    `spawn_draws`. Returns (grid, bodies, heading, rewards, deaths)."""
    n, w = env.num_snakes, env.width
    grid, bodies, heading = grid.copy(), [list(b) for b in bodies], list(heading)
    targets, tiles = {}, {}
    for k in range(n):
        if not bodies[k]:
            continue
        a = int(actions[k])
        if len(bodies[k]) >= 2 and a == OPPOSITE[heading[k]]:
            a = heading[k]
        dr, dc = STEP[a]
        targets[k] = (bodies[k][-1] + dr * w + dc, a)
        tiles[k] = int(grid[targets[k][0]])
    claimed = {}
    for k in sorted(targets):
        if tiles[k] < WALL:
            claimed.setdefault(targets[k][0], k)
    wins = {k for k in targets if tiles[k] < WALL and claimed[targets[k][0]] == k}
    dies = [k for k in targets if k not in wins]
    rewards = np.zeros(n, np.float32)
    for k in wins:
        rewards[k] = {EMPTY: 0.0, FOOD: params.reward_food, CORPSE: params.reward_corpse}[tiles[k]]
    for k in dies:
        rewards[k] = params.reward_death
    grows = {k for k in wins if tiles[k] != EMPTY and len(bodies[k]) < env.max_length - 1}
    for k in wins - grows:
        grid[bodies[k].pop(0)] = EMPTY
    for k in wins:
        cell, a = targets[k]
        bodies[k].append(cell)
        grid[cell] = colour(k)
        heading[k] = a
    for k in dies:
        for i, cell in enumerate(bodies[k]):
            grid[cell] = CORPSE if i % 2 == 1 else EMPTY
        bodies[k] = []
    wanting = [k for k in range(n) if not bodies[k]] + [n + k for k in sorted(wins) if tiles[k] == FOOD]
    for r in range(SPAWN_ROUNDS):
        if not wanting:
            break
        cells = np.asarray(env.spawn_draws(key, r))
        still = []
        for slot in wanting:
            cell = int(cells[slot])
            if grid[cell] in (EMPTY, CORPSE):
                grid[cell] = colour(slot) if slot < n else FOOD
                if slot < n:
                    bodies[slot] = [cell]
            else:
                still.append(slot)
        wanting = still
    return grid, bodies, heading, rewards, len(dies)


def flat_bodies(env, state):
    return [[r * env.width + c for r, c in body] for body in env.bodies(state)]


@pytest.mark.parametrize(
    ("settings", "seed"),
    [
        ({"width": 24, "height": 18, "num_snakes": 24, "num_food": 30, "view": 5}, 0),
        ({"width": 20, "height": 16, "num_snakes": 16, "num_food": 40, "view": 3, "max_length": 6}, 1),
        ({"width": 40, "height": 30, "num_snakes": 64, "num_food": 100, "view": 7}, 2),
    ],
)
def test_random_worlds_follow_the_rules_of_a_body_list_reference(settings, seed):
    env, params = make(**settings)
    step = jax.jit(env.step)
    _, state = env.reset(jax.random.key(seed), params)
    grid, bodies, heading = np.asarray(state.grid), flat_bodies(env, state), list(np.asarray(state.heading))
    rng = np.random.default_rng(seed)
    deaths = 0
    for t in range(120):
        actions = rng.integers(0, 4, env.num_snakes)
        key = jax.random.key(1000 * seed + t)
        grid, bodies, heading, rewards, died = reference_step(env, grid, bodies, heading, actions, key, params)
        obs, state, reward, terminated, _, _ = step(key, state, jnp.asarray(actions, jnp.int32), params)
        np.testing.assert_array_equal(np.asarray(state.grid), grid, err_msg=f"board, step {t}")
        assert flat_bodies(env, state) == bodies, f"bodies, step {t}"
        np.testing.assert_array_equal(np.asarray(reward), rewards, err_msg=f"rewards, step {t}")
        assert not bool(terminated)
        deaths += died
        # The observation is the board's codes around each head, as it lies.
        board = grid.reshape(env.height, env.width)
        for k in (0, env.num_snakes - 1):
            r, c = divmod(bodies[k][-1], env.width)
            h = env.half
            np.testing.assert_array_equal(np.asarray(obs[k]), board[r - h : r + h + 1, c - h : c + h + 1])
        assert (grid == FOOD).sum() == env.num_food
    assert deaths > 0 and (grid == CORPSE).any()  # the worlds exercised deaths and corpses


def test_the_neck_rule_a_fight_goes_to_the_lowest_number_and_corpses_on_every_second_cell():
    env, params = make(width=16, height=12, num_snakes=3, num_food=0, view=3)
    _, state = env.reset(jax.random.key(0), params)
    w, m = env.width, env.max_length
    grid = np.asarray(env._walls).copy()
    # Snake 0 heads right along row 3 (tail at col 2, head at col 5); snakes 1 and 2 both step into (6, 8).
    body0 = [3 * w + c for c in (2, 3, 4, 5)]
    body1, body2 = [6 * w + 7], [6 * w + 9]
    ring = np.zeros(3 * m, np.int32)
    for k, body in enumerate((body0, body1, body2)):
        ring[k * m : k * m + len(body)] = body
        for cell in body:
            grid[cell] = colour(k)
    state = state.replace(
        grid=jnp.asarray(grid),
        ring=jnp.asarray(ring),
        ptr=jnp.asarray([3, 0, 0], jnp.int32),
        head=jnp.asarray([body0[-1], body1[0], body2[0]], jnp.int32),
        length=jnp.asarray([4, 1, 1], jnp.int32),
        heading=jnp.asarray([3, 0, 0], jnp.int32),
    )
    # 2 (left) for snake 0 is its neck: it goes on right. Snake 1 right, snake 2 left: both into (6, 8).
    _, after, reward, _, _, _ = env.step(jax.random.key(1), state, jnp.asarray([2, 3, 2], jnp.int32), params)
    assert env.bodies(after)[0] == [(3, 3), (3, 4), (3, 5), (3, 6)]
    assert env.bodies(after)[1] == [(6, 8)] and list(np.asarray(reward)) == [0.0, 0.0, -1.0]
    # Snake 0 turns up twice and then down into its own body: it dies, leaving corpses at its body's
    # second and fourth cells from the tail.
    for a in (0, 2):
        _, after, *_ = env.step(jax.random.key(2), after, jnp.asarray([a, 0, 0], jnp.int32), params)
    assert env.bodies(after)[0] == [(3, 5), (3, 6), (2, 6), (2, 5)]
    body = [r * w + c for r, c in env.bodies(after)[0]]
    _, dead, reward, *_ = env.step(jax.random.key(3), after, jnp.asarray([1, 0, 0], jnp.int32), params)
    g = np.asarray(dead.grid)
    assert float(reward[0]) == params.reward_death
    # Down from (2, 5) is (3, 5), its own tail, which does not move out of the way.
    assert [int(g[c]) for c in body] == [EMPTY, CORPSE, EMPTY, CORPSE]


def test_long_bodies_that_wrap_their_ring_die_into_corpses_on_every_second_cell():
    """Two snakes die on one step, each longer than a pass of the write-back (`BLOCK` cells) and lying across
    the end of its ring: every cell of both bodies is written back, corpses on the odd ones from the tail."""
    env, params = make(width=48, height=40, num_snakes=2, num_food=0, view=3, max_length=200)
    _, state = env.reset(jax.random.key(0), params)
    w, m = env.width, env.max_length
    # Snake k winds over three rows (1-3 or 20-22) from the left end of the first,
    # head last at the right end of the third.
    bodies = []
    for k, rows in enumerate((range(1, 4), range(20, 23))):
        body = []
        for i, r in enumerate(rows):
            cols = range(1, w - 1) if i % 2 == 0 else range(w - 2, 0, -1)
            body += [r * w + c for c in cols]
        bodies.append(body)  # 3 rows of 46: 138 cells, over two passes and a part
    grid = np.asarray(env._walls).copy()
    ring, ptr = np.zeros(2 * m, np.int32), []
    for k, body in enumerate(bodies):
        start = m - 60  # the tail 60 slots before the ring's end: the body wraps round it
        for i, cell in enumerate(body):
            ring[k * m + (start + i) % m] = cell
            grid[cell] = colour(k)
        ptr.append((start + len(body) - 1) % m)
    state = state.replace(
        grid=jnp.asarray(grid),
        ring=jnp.asarray(ring),
        ptr=jnp.asarray(ptr, jnp.int32),
        head=jnp.asarray([b[-1] for b in bodies], jnp.int32),
        length=jnp.asarray([len(b) for b in bodies], jnp.int32),
        heading=jnp.asarray([3, 3], jnp.int32),
    )
    assert [[r * w + c for r, c in b] for b in env.bodies(state)] == bodies
    # Both heads are at the right end of their third row, heading right: one more step right is the wall.
    _, dead, reward, *_ = env.step(jax.random.key(1), state, jnp.asarray([3, 3], jnp.int32), params)
    assert list(np.asarray(reward)) == [params.reward_death] * 2
    g = np.asarray(dead.grid)
    born = set(np.asarray(dead.head).tolist())
    for body in bodies:
        want = [CORPSE if i % 2 == 1 else EMPTY for i in range(len(body))]
        got = [int(g[c]) for c in body]
        assert [x for x, c in zip(got, body, strict=True) if c not in born] == [
            x for x, c in zip(want, body, strict=True) if c not in born
        ]


def test_many_worlds_at_once_step_as_each_world_alone():
    env, params = make(width=24, height=18, num_snakes=12, num_food=20, view=5)
    keys = jax.random.split(jax.random.key(5), 3)
    _, states = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    actions = jax.random.randint(jax.random.key(6), (3, 12), 0, 4)
    step_keys = jax.random.split(jax.random.key(7), 3)
    for _ in range(30):
        obs, after, reward, *_ = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))(
            step_keys, states, actions, params
        )
        for i in range(3):
            one = jax.tree.map(lambda x, i=i: x[i], states)
            o, a, r, *_ = env.step(step_keys[i], one, actions[i], params)
            np.testing.assert_array_equal(np.asarray(a.grid), np.asarray(after.grid[i]))
            np.testing.assert_array_equal(np.asarray(o), np.asarray(obs[i]))
            np.testing.assert_array_equal(np.asarray(r), np.asarray(reward[i]))
        states = after
        actions = (actions + 1) % 4
    # vmap over seeds of vmap over worlds: the same worlds.
    nested = jax.vmap(jax.vmap(env.step, in_axes=(0, 0, 0, None)), in_axes=(0, 0, 0, None))
    twice = jax.tree.map(lambda x: jnp.stack([x, x]), (step_keys, states, actions))
    _, both, *_ = nested(*twice, params)
    _, flat, *_ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(step_keys, states, actions, params)
    np.testing.assert_array_equal(np.asarray(both.grid[1]), np.asarray(flat.grid))


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"rules": "chess"}, "arena_open rules must be one of battlesnake, pufferlib, got 'chess'"),
        ({"max_length": 50}, "arena_open max_length is a setting of rules=pufferlib"),
        ({"rules": "pufferlib", "max_length": 1}, "arena_open max_length must be an integer from 2"),
    ],
)
def test_bad_rules_settings_are_refused_in_one_line(settings, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        envs.make("arena_open", width=32, height=24, num_snakes=8, num_food=8, **settings)


def test_rings_past_int32_indexes_are_refused_in_one_line():
    with pytest.raises(ValueError, match=r"num_snakes x max_length must be below 2\*\*31 .*got 40000 x 65536"):
        envs.make(
            "arena_open",
            width=1024,
            height=1024,
            num_snakes=40000,
            num_food=0,
            view=3,
            rules="pufferlib",
            max_length=65536,
        )


def test_ppo_trains_on_it_with_the_cell_codes_one_hot_in_the_network(tmp_path):
    import csv

    import jaxrl
    from jaxrl.cli.train import main

    args = ["env=arena_open", "env.rules=pufferlib", "env.width=20", "env.height=16", "env.num_snakes=8"]
    args += ["env.num_food=8", "env.view=5", "env.max_steps_in_episode=16", "num_envs=2", "algo.num_steps=16"]
    args += ["algo.num_minibatches=2", "algo.hidden=[16]", "total_timesteps=1024", f"run_dir={tmp_path / 'run'}"]
    assert main([*args, "progress=false"]) == 0
    with open(tmp_path / "run" / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert int(rows[-1]["env_steps"]) == 1024 and float(rows[-1]["episodes"]) == 16
    params = jaxrl.load(tmp_path / "run").policy.params
    kernels = [x for path, x in jax.tree_util.tree_leaves_with_path(params) if "kernel" in jax.tree_util.keystr(path)]
    assert any(k.shape[0] == 5 * 5 * 10 for k in kernels)  # 25 cells, each one of 10 codes, one-hot in the torso
