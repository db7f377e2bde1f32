"""Self-play: the pool on device, opponents fixed per game, their recurrent state, sampling, resume and bad input."""

import signal

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import build
from jaxrl.config.compose import compose_config
from jaxrl.core.pool import Pool, grouped_apply
from tests.run.test_checkpoint import assert_same_state, steps, train

SMALL = ["env=arena", "opponents=selfplay", "num_envs=16", "algo.num_steps=8", "total_timesteps=1e5", "progress=false"]


def small(*overrides: str) -> list[str]:
    """SMALL with `overrides` (an `env=` among them replaces the arena)."""
    other_env = any(o.startswith("env=") for o in overrides)
    return [*(s for s in SMALL if not (other_env and s.startswith("env="))), *overrides]


def program(*overrides: str):
    cfg, _ = compose_config(small(*overrides))
    return build.program(cfg)


def leaves_equal(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


def test_the_pool_holds_only_snapshots_taken_after_start_never_the_initial_weights():
    prog = program("selfplay.start=2", "selfplay.snapshot_every=2", "selfplay.pool_size=2")
    algo = prog.algo
    update = jax.jit(algo.update)
    runner = jax.jit(algo.init)(jax.random.key(0))
    initial = algo.policy_params(runner)
    assert int(runner.envs.state.pool.filled) == 0 and np.all(np.asarray(runner.envs.state.slot) == -1)
    taken = {}
    for u in range(1, 8):
        runner, _ = update(runner)
        pool = runner.envs.state.pool
        taken[u] = algo.policy_params(runner)
        pushes = 0 if u < 2 else (u - 2) // 2 + 1  # after updates 2, 4, 6
        assert int(pool.filled) == pushes, u
        assert int(np.sum(pool.active)) == min(pushes, 2)
        for slot in np.flatnonzero(np.asarray(pool.pushed_at) >= 0):
            when = int(pool.pushed_at[slot])
            assert when >= 2 and when % 2 == 0
            snapshot = jax.tree.map(lambda x, s=slot: x[s], pool.params)
            assert leaves_equal(snapshot, taken[when])  # exactly the learner's policy at that update
            assert not leaves_equal(snapshot, initial)
        if pushes == 0:
            assert np.all(np.asarray(runner.envs.state.slot) == -1)  # no game draws from an empty pool
    pool = runner.envs.state.pool
    assert sorted(np.asarray(pool.pushed_at)[np.asarray(pool.active)].tolist()) == [
        4,
        6,
    ]  # 2 retired: no new game draws it


def filled_pool(algo, runner, size: int) -> Pool:
    """A pool of `size` distinct snapshots (the learner's parameters, scaled)."""
    pool = runner.envs.state.pool
    params = algo.policy_params(runner)
    for i in range(size):
        scaled = jax.tree.map(
            lambda x, i=i: x * (1.0 + 0.5 * i) if jnp.issubdtype(x.dtype, jnp.floating) else x, params
        )
        pool = pool.push(scaled, jnp.bool_(True), jnp.int32(i + 1))
    return pool


def play(prog, steps_: int, push_every: int = 0, seed: int = 0):
    """Step a self-play batch with random learner actions; every `push_every` steps a new snapshot joins the
    pool (an update boundary). Returns per step (slot before, done, slot after, carry after) and the vector."""
    algo = prog.algo
    vec = algo.algo.vec
    runner = jax.jit(algo.init)(jax.random.key(seed))
    pool = filled_pool(algo, runner, 2)
    params = runner.envs.params
    key = jax.random.key(seed + 1)
    _, state = vec.reset(key, params, pool)
    step = jax.jit(lambda k, s, a, p: vec.step(k, s.replace(pool=p), a, params))
    trace = []
    for t in range(steps_):
        key, k_act, k_env = jax.random.split(key, 3)
        if push_every and t and t % push_every == 0:
            in_use = np.isin(np.arange(pool.slots), np.asarray(state.slot))
            params_t = jax.tree.map(lambda x, t=t: x * (1.0 + 0.01 * t), algo.policy_params(runner))
            pool = pool.push(params_t, jnp.bool_(True), jnp.int32(100 + t), jnp.asarray(in_use))
        action = jax.random.randint(k_act, (vec.num_envs,), 0, 3)
        before = np.asarray(state.slot)
        _, state, _, _, _, info = step(vec.step_keys(k_env, 1)[0], state, action, pool)
        trace.append((before, np.asarray(info["world_done"]), np.asarray(state.slot), state.carry, pool))
    return trace, vec


def test_an_opponent_is_fixed_for_its_whole_game_across_updates():
    prog = program("selfplay.sampling=latest", "selfplay.bot_share=0.25", "selfplay.pool_size=1")
    trace, vec = play(prog, 120, push_every=15)
    spanned = 0
    weights = lambda pool: np.asarray(jax.tree.leaves(pool.params)[0])  # (slots, ...) one leaf per slot
    for t, (before, done, after, _, pool) in enumerate(trace):
        kept = ~done
        np.testing.assert_array_equal(after[kept], before[kept])  # mid-game: the slot never changes
        if t:
            playing = np.unique(before[kept & (before >= 0)])
            old, new = weights(trace[t - 1][4]), weights(pool)
            for slot in playing:  # nor do the parameters of any slot a game plays
                np.testing.assert_array_equal(new[slot], old[slot])
        newest = int(np.argmax(np.where(np.asarray(pool.active), np.asarray(pool.pushed_at), -1)))
        selfplay_worlds = np.arange(vec.num_envs) >= vec.bot_worlds
        assert np.all(after[done & selfplay_worlds] == newest)  # latest: a new game takes the newest
        assert np.all(after[: vec.bot_worlds] == -1)  # the bots' worlds never play the pool
        if t and t % 15 == 0:
            spanned += int(np.sum(kept & selfplay_worlds & (before != newest)))
    assert spanned > 0  # some games really ran on across a push with their old opponent


def test_recurrent_opponents_carry_their_own_state_and_start_each_game_fresh():
    prog = program("algo.network=gru", "algo.rnn_hidden=8", "selfplay.bot_share=0")
    trace, vec = play(prog, 60)
    fresh = jax.tree.map(np.asarray, vec._carry(vec.num_envs))
    ended = ongoing = 0
    for before, done, _, carry, _ in trace:
        carry = np.asarray(jax.tree.leaves(carry)[0])
        zero = np.asarray(jax.tree.leaves(fresh)[0])
        assert np.array_equal(carry[done], zero[done])  # the game ended: the next one starts from scratch
        moving = ~done & (before >= 0)
        assert np.all(np.abs(carry[moving]).reshape(int(moving.sum()), -1).max(axis=1) > 0)
        ended += int(done.sum())
        ongoing += int(moving.sum())
    assert ended > 0 and ongoing > 0


def test_grouped_apply_gives_each_world_its_own_slots_output():
    k = 5
    params = {"w": jnp.arange(k * 3 * 2, dtype=jnp.float32).reshape(k, 3, 2)}
    obs = jax.random.normal(jax.random.key(0), (37, 2, 3))
    index = jax.random.randint(jax.random.key(1), (37,), 0, k)
    fn = lambda p, carry, x: (carry, x @ p["w"])
    _, out = grouped_apply(fn, params, index, obs, None)
    want = jnp.einsum("wsi,wio->wso", obs, params["w"][index])
    np.testing.assert_allclose(np.asarray(out), np.asarray(want), rtol=1e-5)


def test_prioritized_sampling_prefers_the_snapshots_that_beat_the_learner():
    params = {"w": jnp.zeros(2)}
    pool = Pool.empty(params, 4)  # 4 active snapshots in 6 slots
    u = jax.random.uniform(jax.random.key(0), (40_000,))
    assert np.all(np.asarray(pool.draw(u, pool.weights("prioritized", 2.0))) == -1)  # empty: nobody drawn
    for i in range(3):
        pool = pool.push(params, jnp.bool_(True), jnp.int32(i + 1))
    z = [0.0, 0.0, 0.0]
    pool = pool.replace(wins=jnp.array([88.0, 8.0, 49.0, *z]), games=jnp.array([98.0, 98.0, 98.0, *z]))
    rate = np.asarray(pool.win_rate())
    np.testing.assert_allclose(rate[:3], [0.89, 0.09, 0.5])
    draws = lambda sampling: np.bincount(np.asarray(pool.draw(u, pool.weights(sampling, 2.0))), minlength=6) / u.size
    share = draws("prioritized")
    want = np.append(rate[:3] ** 2, z)
    np.testing.assert_allclose(share, want / want.sum(), atol=0.01)  # slots 3-5 hold nothing: never drawn
    assert share[0] > share[2] > share[1]
    np.testing.assert_allclose(draws("uniform"), [1 / 3, 1 / 3, 1 / 3, *z], atol=0.01)
    assert set(np.asarray(pool.draw(u, pool.weights("latest", 2.0))).tolist()) == {2}
    counted = pool.record(jnp.array([1.0, 0, *z, 0]), jnp.array([1.0, 1, *z, 0]))
    np.testing.assert_allclose(np.asarray(counted.wins)[:2], [88 * 0.99 + 1, 8 * 0.99], rtol=1e-6)
    pushed = pool.push(params, jnp.bool_(True), jnp.int32(9))  # slot 3 filled: counts start from nothing
    assert float(pushed.games[3]) == 0 and int(pushed.pushed_at[3]) == 9 and float(pushed.games[0]) == 98


def test_a_league_game_plays_the_kind_it_drew_and_prefers_the_kinds_that_beat_the_learner():
    league = ["greedy", "space", "random_safe"]
    prog = program(f"selfplay.league=[{','.join(league)}]", "selfplay.bot_share=0.5", "selfplay.pool_size=2")
    algo = prog.algo
    vec = algo.algo.vec
    runner = jax.jit(algo.init)(jax.random.key(0))
    pool = filled_pool(algo, runner, 2)
    assert pool.bot_wins.shape == (3,)
    params, key = runner.envs.params, jax.random.key(1)
    _, state = vec.reset(key, params, pool)
    step = jax.jit(lambda k, s: vec.step(k, s, jnp.zeros(vec.num_envs, jnp.int32), params))
    kinds = {k: jax.jit(jax.vmap(lambda key, s, k=k: vec.env.bot_actions(key, s, k))) for k in league}
    seen = set()
    for t in range(60):
        keys = vec.step_keys(jax.random.fold_in(key, t), 1)[0]
        slot, env, heading = np.asarray(state.slot), state.env, np.asarray(state.env.heading)
        assert np.all(slot[: vec.bot_worlds] < 0) and np.all(slot[vec.bot_worlds :] >= 0)
        _, state, _, _, _, info = step(keys, state)
        moved = np.asarray(env.alive) & np.asarray(state.env.alive) & ~np.asarray(info["world_done"])[:, None]
        for k, kind in enumerate(league):
            mine = slot == -1 - k
            seen |= {kind} if mine.any() else set()
            want = (heading + np.asarray(kinds[kind](keys, env)) - 1) % 4  # the kind's moves at a table
            bots = moved & mine[:, None] & (np.arange(vec.env.num_snakes) >= vec.env.num_agents)[None, :]
            np.testing.assert_array_equal(np.asarray(state.env.heading)[bots], want[bots])
    assert seen == set(league)
    # The bots' games are counted per kind, and prioritized draws follow each kind's win rate.
    games = np.asarray(state.games).sum(axis=0)
    assert games.shape == (pool.slots + 3,) and games[pool.slots :].sum() > 0
    pool = pool.replace(bot_wins=jnp.array([88.0, 8.0, 49.0]), bot_games=jnp.array([98.0, 98.0, 98.0]))
    u = jax.random.uniform(jax.random.key(0), (40_000,))
    share = np.bincount(np.asarray(pool.draw(u, pool.kind_weights("prioritized", 2.0))), minlength=3) / u.size
    want = np.array([0.89, 0.09, 0.5]) ** 2
    np.testing.assert_allclose(share, want / want.sum(), atol=0.01)
    np.testing.assert_allclose(np.asarray(pool.kind_weights("uniform", 2.0)), 1.0)
    counted = pool.record(jnp.zeros(pool.slots + 3).at[-1].set(1.0), jnp.ones(pool.slots + 3))
    np.testing.assert_allclose(np.asarray(counted.bot_wins), [88 * 0.99, 8 * 0.99, 49 * 0.99 + 1], rtol=1e-6)


def test_a_push_never_overwrites_a_snapshot_a_game_still_plays():
    params = {"w": jnp.zeros(2)}
    snap = lambda v: {"w": jnp.full(2, float(v))}
    pool = Pool.empty(params, 1)  # one active snapshot, two spare slots
    in_use = lambda *slots: jnp.isin(jnp.arange(pool.slots), jnp.array(slots, jnp.int32))
    pool = pool.push(snap(1), jnp.bool_(True), jnp.int32(1))
    assert np.asarray(pool.active).tolist() == [True, False, False]
    pool = pool.push(snap(2), jnp.bool_(True), jnp.int32(2), in_use(0))  # slot 0 retires, its games go on
    assert np.asarray(pool.active).tolist() == [False, True, False] and float(pool.params["w"][0, 0]) == 1
    pool = pool.push(snap(3), jnp.bool_(True), jnp.int32(3), in_use(0, 1))
    assert np.asarray(pool.active).tolist() == [False, False, True] and float(pool.params["w"][0, 0]) == 1
    held = pool.push(snap(4), jnp.bool_(True), jnp.int32(4), in_use(0, 1, 2))  # nothing free: the push waits
    assert int(held.filled) == int(pool.filled) and np.array_equal(
        np.asarray(held.params["w"]), np.asarray(pool.params["w"])
    )
    freed = pool.push(snap(4), jnp.bool_(True), jnp.int32(4), in_use(1, 2))  # slot 0's games ended
    assert np.asarray(freed.active).tolist() == [True, False, False] and float(freed.params["w"][0, 0]) == 4


def test_selfplay_trains_the_grid_against_its_own_collectors():
    prog = program(
        "env=grid", "env.num_bots=2", "env.max_steps_in_episode=16", "selfplay.snapshot_every=1", "selfplay.bot_share=0"
    )
    runner = jax.jit(prog.algo.init)(jax.random.key(0))
    update = jax.jit(prog.algo.update)
    played = 0
    for _ in range(12):
        runner, stats = update(runner)
        played += float(stats.learner["pool_games"])
    assert int(runner.envs.state.pool.filled) == 12 and played > 0  # a push after every update, 8 kept
    assert np.all(np.asarray(runner.envs.state.slot) >= 0)  # every world now plays the pool


@pytest.mark.parametrize(
    "settings",
    [("algo=dqn", "algo.learning_starts=256", "algo.batch_size=32"), ("algo=pqn",), ("num_seeds=2",)],
    ids=["dqn", "pqn", "two-seeds"],
)
def test_selfplay_runs_with_every_learner_and_several_seeds(settings, tmp_path):
    """DQN and PQN opponents act greedily on their Q-values; two seeds are a vmap, where the conds that skip
    the bots' scripts and the pool's pass become selects."""
    overrides = small(*settings, "selfplay.snapshot_every=1", "total_timesteps=2048", "num_chunks=1")
    if "algo=dqn" in settings:  # DQN has no rollout length
        overrides = [o for o in overrides if not o.startswith("algo.num_steps")]
    cfg, _ = compose_config(overrides)
    prog = build.program(cfg)
    runner, _ = prog.compile()
    runner, stats = prog.run_chunk(runner, prog.chunk)
    pool = runner.envs.state.pool
    assert np.all(np.asarray(pool.filled) >= 2) and np.all(np.isfinite(np.asarray(stats.learner["pool_games"])))
    assert np.asarray(runner.envs.state.slot).max() >= 0  # games against the pool were played


@pytest.mark.slow  # three CLI runs (about 40 s); tests/run/test_checkpoint.py covers resume in the default tier
def test_resume_in_the_middle_of_selfplay_is_bit_identical(tmp_path):
    settings = [
        *SMALL[:-1],
        "selfplay.snapshot_every=1",
        "selfplay.pool_size=3",
        "total_timesteps=1536",
        "num_chunks=6",
        "checkpoint.every_steps=1",
    ]
    ref, run = tmp_path / "ref", tmp_path / "killed"
    train(*settings, f"run_dir={ref}")
    killed = train(*settings, f"run_dir={run}", kill_after=3, check=False)
    assert killed.returncode == -signal.SIGKILL
    assert steps(run)[-1] < steps(ref)[-1]
    train(f"resume={run}")
    assert_same_state(run, ref)


def test_a_frozen_agent_in_the_league_plays_its_own_moves_on_its_own_view():
    from jaxrl.config.environment import make_env
    from jaxrl.trained.frozen import frozen_policy
    from jaxrl.trained.shelf import ShelfAgent

    agent = "pretrained:arena-selfplay-v2"  # a 7x7 view of 8 channels; the learner here sees 11x11 with the tails
    league = (f"selfplay.league=[greedy,{agent}]", "selfplay.bot_share=0.5", "selfplay.pool_size=2")
    prog = program(*league, "env.view=11", "env.tails=true")
    algo, vec = prog.algo, prog.algo.algo.vec
    runner = jax.jit(algo.init)(jax.random.key(0))
    params, key = runner.envs.params, jax.random.key(3)
    _, state = vec.reset(key, params, filled_pool(algo, runner, 2))
    step = jax.jit(lambda k, s: vec.step(k, s, jnp.zeros(vec.num_envs, jnp.int32), params))
    own = make_env(ShelfAgent(agent).config)[0]  # the agent's own arena: its view, the same board and seats
    assert own.view == 7 != vec.env.view and own.num_snakes == vec.env.num_snakes and not own.tails and vec.env.tails
    act = frozen_policy(agent, "arena", own.observation_space().shape)
    seats = tuple(range(own.num_agents, own.num_snakes))
    moves = jax.jit(jax.vmap(lambda s: act(own.views(s, seats), jax.random.key(0))))
    played = 0
    for t in range(80):
        keys = vec.step_keys(jax.random.fold_in(key, t), 1)[0]
        slot, env, heading = np.asarray(state.slot), state.env, np.asarray(state.env.heading)
        _, state, _, _, _, info = step(keys, state)
        mine = (slot == -2)[:, None] & (np.arange(own.num_snakes) >= own.num_agents)[None, :]
        bots = mine & np.asarray(env.alive) & np.asarray(state.env.alive) & ~np.asarray(info["world_done"])[:, None]
        want = np.zeros_like(heading)
        want[:, own.num_agents :] = (heading[:, own.num_agents :] + np.asarray(moves(env)) - 1) % 4
        np.testing.assert_array_equal(np.asarray(state.env.heading)[bots], want[bots])
        played += int(bots.sum())
    assert played > 50


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["selfplay.pool_size=0"], "selfplay.pool_size=0 is invalid: must be an integer from 1 to 1024"),
        pytest.param(
            ["selfplay.sampling=best"],
            "selfplay.sampling=best is invalid: allowed latest, uniform, prioritized",
            marks=pytest.mark.slow,
        ),
        pytest.param(["selfplay.bot_share=1"], "selfplay.bot_share=1", marks=pytest.mark.slow),
        pytest.param(
            ["opponents=friends"], "opponents=friends is invalid: allowed bots, selfplay", marks=pytest.mark.slow
        ),
        (["env=snake"], "opponents=selfplay needs an env with opponents"),
        pytest.param(
            ["selfplay.league=[greedy,smart]"],
            "selfplay.league: 'smart' is not a bot of env=arena: allowed greedy, space, lookahead, random_safe",
            marks=pytest.mark.slow,
        ),
        pytest.param(["selfplay.league=[space]", "selfplay.bot_share=0"], "raise bot_share", marks=pytest.mark.slow),
        pytest.param(
            ["selfplay.league=[greedy,pretrained:nobody]"],
            "pretrained:nobody is not on the shelf",
            marks=pytest.mark.slow,
        ),
        (
            ["selfplay.league=[greedy,/no/such/run]"],
            "selfplay.league: /no/such/run is not a jaxrl run directory (nor a scripted kind, nor pretrained:NAME)",
        ),
        pytest.param(
            ["selfplay.league=[greedy,pretrained:grid-v1]"],
            "selfplay.league: pretrained:grid-v1 trained on env=grid; a bot policy must come from a run of env=arena",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            ["env=grid", "env.num_bots=1", "selfplay.league=[random]"],
            "selfplay.league needs an env whose opponents play a kind per game (the arena), not grid",
            marks=pytest.mark.slow,
        ),
        pytest.param(["env=grid"], "opponents=selfplay needs opponent seats", marks=pytest.mark.slow),
    ],
)
def test_bad_selfplay_settings_are_one_line(args, message, tmp_path):
    proc = train(*small(*args), f"run_dir={tmp_path / 'run'}", check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and message in lines[0], proc.stderr
    assert not (tmp_path / "run").exists()
