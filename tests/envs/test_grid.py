"""Grid world rules on hand-built maps: walls, the border, collecting, regrowth, conflicts, the view, shapes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import envs
from jaxrl.envs.grid import GridWorld

STAY, UP, RIGHT, DOWN, LEFT, COLLECT = range(6)
WALL, RESOURCE, AGENT, SELF = range(4)


def step(env, state, actions, params=None):
    params = params or env.default_params
    obs, state, reward, _, info = jax.jit(env.step_env)(
        jax.random.key(0), state, jnp.asarray(actions, jnp.int32), params
    )
    return obs, state, reward, info


def where(state) -> list[tuple[int, int]]:
    return list(zip(np.asarray(state.row).tolist(), np.asarray(state.col).tolist(), strict=True))


def test_walls_and_the_border_block_moves():
    env = GridWorld(size=4)
    state = env.make_state(["0#..", "....", "....", "...."])
    for action in (RIGHT, UP, LEFT):  # a wall, then off the map twice
        _, state, _, _ = step(env, state, action)
        assert where(state) == [(0, 0)]
    _, state, _, _ = step(env, state, DOWN)
    assert where(state) == [(1, 0)]


def test_collect_takes_the_unit_underfoot_and_it_regrows_after_the_delay():
    env = GridWorld(size=4)
    params = env.default_params.replace(regrow_delay=3)
    state = env.make_state(["0...", "....", "....", "...."], timer={(0, 0): 0})  # standing on a source
    obs, state, reward, info = step(env, state, COLLECT, params)
    assert float(reward) == params.reward_collect and int(state.inventory[0]) == 1 and int(info["score"]) == 1
    assert int(state.timer[0, 0]) == 3 and obs[2, 2, RESOURCE] == 0  # gone from under the agent
    _, state, reward, _ = step(env, state, COLLECT, params)
    assert float(reward) == 0.0  # nothing to collect while it regrows
    for expected in (1, 0):
        _, state, _, _ = step(env, state, STAY, params)
        assert int(state.timer[0, 0]) == expected
    obs, state, reward, _ = step(env, state, COLLECT, params)  # back after 3 steps
    assert float(reward) == 1.0 and int(state.inventory[0]) == 2


def test_collect_on_an_empty_cell_earns_nothing_and_step_reward_applies():
    env = GridWorld(size=4)
    params = env.default_params.replace(reward_step=-0.01)
    state = env.make_state(["0R..", "....", "....", "...."])
    _, state, reward, _ = step(env, state, COLLECT, params)
    assert float(reward) == pytest.approx(-0.01) and int(state.inventory[0]) == 0


def test_two_agents_into_one_cell_the_lower_index_gets_it():
    env = GridWorld(size=4, num_agents=3)
    state = env.make_state(["0.1.", "....", "....", ".2.."])
    _, state, _, _ = step(env, state, [RIGHT, LEFT, UP])
    assert where(state) == [(0, 1), (0, 2), (2, 1)]
    state = env.make_state(["2.1.", "....", "....", ".0.."])  # the contest goes by index, not by position
    _, state, _, _ = step(env, state, [STAY, LEFT, RIGHT])
    assert where(state) == [(3, 1), (0, 1), (0, 0)]  # agent 1 beats agent 2, which started further left
    blocked = env.make_state(["0#1.", "....", "....", ".2.."])  # nobody enters a wall
    _, state, _, _ = step(env, blocked, [RIGHT, LEFT, STAY])
    assert where(state) == [(0, 0), (0, 2), (3, 1)]
    # A failed move claims nothing: agent 0 walking off the east edge (one past the row's last cell,
    # the next row's first cell in row-major numbering) does not block agent 1 entering (1, 0).
    edge = env.make_state(["...0", "....", "1...", ".2.."])
    _, state, _, _ = step(env, edge, [RIGHT, UP, STAY])
    assert where(state) == [(0, 3), (1, 0), (3, 1)]


def test_seven_agents_collect_their_own_units_and_contest_cells_by_index():
    # More than 4 agents: the maps of agents and of units taken are built from a flat bitboard of 16-cell
    # words (`_agent_rows`); on a 7x7 map rows 2 and 3 straddle words 0-1 and 1-2.
    env = GridWorld(size=7, num_agents=7)
    params = env.default_params.replace(regrow_delay=5, reward_step=0.0)
    picture = ["0...1..", ".......", "2.....3", "...4...", ".......", ".5R6...", "......R"]
    # Agents 0, 2 and 4 stand on units; agent 3 on a source still regrowing (2 steps); agent 1 on an empty cell.
    state = env.make_state(picture, timer={(0, 0): 0, (2, 0): 0, (2, 6): 2, (3, 3): 0})
    # Agents 5 and 6 both step into the unit at (5, 2): the lower index gets the cell, 6 stays.
    _, state, reward, info = step(env, state, [COLLECT, COLLECT, COLLECT, COLLECT, COLLECT, RIGHT, LEFT], params)
    assert reward.tolist() == [1, 0, 1, 0, 1, 0, 0]
    assert np.asarray(state.inventory).tolist() == [1, 0, 1, 0, 1, 0, 0] and int(info["score"]) == 3
    assert where(state) == [(0, 0), (0, 4), (2, 0), (2, 6), (3, 3), (5, 2), (5, 3)]
    present, timer = np.asarray(env._unpack(state.present)), np.asarray(state.timer)
    assert sorted(zip(*np.nonzero(present))) == [(5, 2), (6, 6)]  # the three units taken, (2, 6) not back yet
    assert timer[0, 0] == timer[2, 0] == timer[3, 3] == 5 and timer[2, 6] == 1
    # Agent 5 collects the contested unit; agent 6 collects on an empty cell, agent 3's source comes back.
    _, state, reward, info = step(env, state, [STAY] * 5 + [COLLECT, COLLECT], params)
    assert reward.tolist() == [0, 0, 0, 0, 0, 1, 0] and int(info["score"]) == 4
    present = np.asarray(env._unpack(state.present))
    assert sorted(zip(*np.nonzero(present))) == [(2, 6), (6, 6)]
    _, state, reward, _ = step(env, state, [STAY, STAY, STAY, COLLECT, STAY, STAY, STAY], params)
    assert reward.tolist() == [0, 0, 0, 1, 0, 0, 0] and np.asarray(state.inventory).tolist() == [1, 0, 1, 1, 1, 1, 0]


def test_a_cell_held_at_the_start_of_the_step_cannot_be_entered_no_following_no_swaps():
    env = GridWorld(size=4, num_agents=2)
    for picture in (["10..", "....", "....", "...."], ["01..", "....", "....", "...."]):
        state = env.make_state(picture)
        before = where(state)
        _, state, _, _ = step(env, state, [RIGHT, RIGHT])  # the leader moves on, the follower waits a step
        leader = 0 if picture[0][1] == "0" else 1
        after = where(state)
        assert after[leader] == (0, 2) and after[1 - leader] == before[1 - leader]
    swap = env.make_state(["01..", "....", "....", "...."])
    _, state, _, _ = step(env, swap, [RIGHT, LEFT])
    assert where(state) == [(0, 0), (0, 1)]
    into_a_stayer = env.make_state(["01..", "....", "....", "...."])
    _, state, _, _ = step(env, into_a_stayer, [RIGHT, COLLECT])
    assert where(state) == [(0, 0), (0, 1)]


def test_the_view_is_egocentric_with_walls_beyond_the_border():
    env = GridWorld(size=4, num_agents=2, view=5)
    state = env.make_state(["0#R.", "..1.", "....", "#..."])
    obs = np.asarray(jax.jit(env.get_obs)(state))  # (2, 5, 5, 4)
    me = obs[0]  # agent 0 at (0, 0): view rows -2..2, cols -2..2
    assert me[:2, :, WALL].all() and me[:, :2, WALL].all()  # beyond the border
    assert me[2, 3, WALL] == 1 and me[2, 4, RESOURCE] == 1 and me[3, 4, AGENT] == 1  # (0,1) wall, (0,2), (1,2)
    assert me[2, 2, SELF] == 1 and me[..., SELF].sum() == 1 and me[2, 2, AGENT] == 0
    assert me[4, 2, WALL] == 0 and me[2:, 2:, WALL].sum() == 1  # (3,0) is outside this view
    other = obs[1]  # agent 1 at (1, 2)
    assert other[1, 0, AGENT] == 1 and other[1, 0, WALL] == 0 and other[1, 1, WALL] == 1  # agent 0, wall (0, 1)
    assert other[1, 2, RESOURCE] == 1 and other[4, 0, WALL] == 1  # resource (0, 2), wall (3, 0)
    assert other[:, 4, WALL].all()  # column 4 is beyond the border


def reference_obs(env, state) -> np.ndarray:
    """The observation cell by cell from the unpacked maps: (agents, view, view, 4)."""
    walls, present = np.asarray(env._unpack(state.walls)), np.asarray(env._unpack(state.present))
    rows, cols = np.asarray(state.row), np.asarray(state.col)
    obs = np.zeros((env.num_agents, env.view, env.view, 4), np.uint8)
    for k in range(env.num_agents):
        for i in range(env.view):
            for j in range(env.view):
                r, c = rows[k] + i - env.half, cols[k] + j - env.half
                if not (0 <= r < env.size and 0 <= c < env.size):
                    obs[k, i, j, WALL] = 1
                    continue
                obs[k, i, j, WALL] = walls[r, c]
                obs[k, i, j, RESOURCE] = present[r, c]
                obs[k, i, j, AGENT] = any((rows[o], cols[o]) == (r, c) for o in range(env.num_agents) if o != k)
        obs[k, env.half, env.half, SELF] = 1
    return obs


@pytest.mark.parametrize("size,num_agents,view", [(8, 1, 5), (8, 8, 7), (5, 12, 3), (13, 3, 7), (24, 2, 5)])
def test_the_observation_matches_a_cell_by_cell_reference_along_random_play(size, num_agents, view):
    env = GridWorld(size=size, num_agents=num_agents, view=view)
    params = env.default_params.replace(regrow_delay=3, wall_density=0.3, resource_density=0.4)
    _, state = env.reset(jax.random.key(size), params)
    step_fn = jax.jit(env.step)
    rng = np.random.default_rng(0)
    for t in range(12):
        actions = rng.integers(0, 6, num_agents)
        obs, state, _, _, _, _ = step_fn(jax.random.key(t), state, actions if num_agents > 1 else actions[0], params)
        got = np.asarray(obs).reshape(num_agents, view, view, 4)
        np.testing.assert_array_equal(got, reference_obs(env, state))


def test_shapes_single_agent_plain_and_multi_agent_with_a_leading_axis():
    one, params = envs.make("grid", size=6)
    obs, state = one.reset(jax.random.key(0), params)
    assert obs.shape == (5, 5, 4) and obs.dtype == jnp.uint8
    _, _, reward, _, _, _ = one.step(jax.random.key(1), state, 0, params)
    assert reward.shape == ()
    many, params = envs.make("grid", size=6, num_agents=3, view=7)
    obs, state = many.reset(jax.random.key(0), params)
    assert obs.shape == (3, 7, 7, 4) == many.observation_space(params).shape
    _, _, reward, terminated, _, _ = many.step(jax.random.key(1), state, jnp.array([0, 1, 5]), params)
    assert reward.shape == (3,) and terminated.shape == ()
    space = many.action_space(params)
    assert space.shape == (3,) and space.n == 6 and one.action_space(params).shape == ()
    samples = jax.vmap(space.sample)(jax.random.split(jax.random.key(2), 200))
    assert samples.shape == (200, 3) and samples.dtype == jnp.int32 and set(np.unique(samples)) == set(range(6))
    assert (samples[:, 0] != samples[:, 1]).any()  # one draw per agent, not one for the world
    assert bool(space.contains(jnp.array([0, 5, 2]))) and not bool(space.contains(jnp.array([0, 6, 2])))
    with pytest.raises(ValueError, match=r"num_agents=3 takes actions of shape \(3,\), got shape \(\)"):
        many.step(jax.random.key(1), state, 1, params)


def test_reset_draws_walls_and_resources_and_distinct_free_start_cells():
    env, params = envs.make("grid", size=10, num_agents=8)
    keys = jax.random.split(jax.random.key(3), 256)
    _, states = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    walls = np.asarray(jax.vmap(env._unpack)(states.walls))
    sources = np.asarray(jax.vmap(env._unpack)(states.sources))
    rows, cols = np.asarray(states.row), np.asarray(states.col)
    cells = rows * 10 + cols
    assert all(len(set(c)) == 8 for c in cells)  # distinct
    for w, s, r, c in zip(walls, sources, rows, cols, strict=True):
        assert not w[r, c].any() and not (w & s).any()  # agents start on free cells; sources are not walls
    p_wall, p_source = round(32 * params.wall_density) / 32, round(32 * params.resource_density) / 32
    assert walls.mean() == pytest.approx(p_wall, abs=0.01)  # densities are rounded to 1/32
    assert sources.mean() == pytest.approx(p_source * (1 - p_wall), abs=0.01)
    # Cells are independent: neighbours along rows and columns are both walls at the rate p^2.
    assert (walls[:, :, 1:] & walls[:, :, :-1]).mean() == pytest.approx(p_wall**2, abs=0.01)
    assert (walls[:, 1:, :] & walls[:, :-1, :]).mean() == pytest.approx(p_wall**2, abs=0.01)
    assert len({tuple(c) for c in cells}) > 250  # different maps and starts per key


def test_the_next_episode_plays_the_map_drawn_a_row_per_step_during_this_one():
    env, params = envs.make("grid", size=6)
    params = params.replace(max_steps_in_episode=10)
    _, state = env.reset(jax.random.key(0), params)
    first_next = np.asarray(state.next_walls)
    step_fn = jax.jit(env.step)
    for t in range(9):
        _, state, _, _, _, _ = step_fn(jax.random.key(100 + t), state, STAY, params)
        changed = np.asarray(state.next_walls) != first_next
        assert not changed[min(t + 1, 6) :].any()  # rows 0..t redrawn so far, the rest untouched
    _, stepped, _, _, _ = env.step_env(jax.random.key(7), state, STAY, params)  # the last step, before the reset
    drawn_walls, drawn_sources = np.asarray(stepped.next_walls), np.asarray(stepped.next_sources)
    assert (drawn_walls != first_next).any()  # redrawn (six rows of six cells all equal: chance < 1e-3)
    _, state, _, _, truncated, _ = step_fn(jax.random.key(7), state, STAY, params)
    assert bool(truncated) and int(state.time) == 0
    start = np.zeros(6, np.uint32)
    start[int(state.row[0])] = 1 << int(state.col[0])
    np.testing.assert_array_equal(np.asarray(state.walls), drawn_walls & ~start)
    np.testing.assert_array_equal(np.asarray(state.sources), drawn_sources & ~start)


def test_truncates_at_the_step_limit_and_never_terminates():
    env, params = envs.make("grid", size=5)
    params = params.replace(max_steps_in_episode=7)
    _, state = env.reset(jax.random.key(0), params)
    step_fn = jax.jit(env.step)
    for t in range(7):
        _, state, _, terminated, truncated, _ = step_fn(jax.random.key(t), state, RIGHT, params)
        assert not bool(terminated) and bool(truncated) == (t == 6)


def test_check_params_accepts_the_defaults_and_refuses_episodes_shorter_than_the_map():
    for size in (3, 8, 24):
        env = GridWorld(size=size)
        env.check_params(env.default_params)
        env.check_params(env.default_params.replace(max_steps_in_episode=size))
        with pytest.raises(ValueError, match=f"max_steps_in_episode={size - 1} is invalid"):
            env.check_params(env.default_params.replace(max_steps_in_episode=size - 1))
    with pytest.raises(ValueError, match="regrow_delay=2.5 is invalid"):
        env.check_params(env.default_params.replace(regrow_delay=2.5))


@pytest.mark.parametrize(
    "kwargs", [{"size": 2}, {"view": 4}, {"view": 9}, {"num_agents": 0}, {"size": 4, "num_agents": 9}]
)
def test_bad_constructor_arguments_are_refused(kwargs):
    with pytest.raises(ValueError, match="grid"):
        GridWorld(**kwargs)


def test_vector_env_flattens_agents_world_major_and_repeats_world_flags():
    from jaxrl.core.vector import VectorEnv

    env, params = envs.make("grid", size=5, num_agents=3)
    vec = VectorEnv(env, num_envs=2)
    assert vec.streams == 6
    assert vec.observation_space(params).shape == (5, 5, 4) == env.observation_space(params).shape[1:]
    assert vec.action_space(params).shape == () and vec.action_space(params).n == 6
    # World 0: agent 1 stands on a unit. World 1: agents 0 and 2 do, and its episode ends this step.
    worlds = [
        env.make_state(["0.1.2", ".....", ".....", ".....", "....."], timer={(0, 2): 0}),
        env.make_state([".....", ".....", "0.1.2", ".....", "....."], timer={(2, 0): 0, (2, 4): 0}, time=7),
    ]
    state = jax.tree.map(lambda *x: jnp.stack(x), *worlds)
    per_world = jax.vmap(env.get_obs)(state)  # (2, 3, 5, 5, 4)
    params = params.replace(max_steps_in_episode=8, reward_step=0.0)
    # Streams are world-major: world 0's agents 0, 1, 2, then world 1's.
    actions = jnp.array([COLLECT, COLLECT, STAY, COLLECT, STAY, COLLECT])
    obs, state, reward, terminated, truncated, info = vec.step(
        jax.random.split(jax.random.key(1), 2), state, actions, params
    )
    assert reward.tolist() == [0, 1, 0, 1, 0, 1]
    assert truncated.tolist() == [False] * 3 + [True] * 3 and not terminated.any()
    assert info["world_done"].tolist() == [False, True]
    assert obs.shape == info["final_observation"].shape == (6, 5, 5, 4)
    after = jax.vmap(env.get_obs)(state)  # (2, 3, 5, 5, 4), world 1 already reset
    np.testing.assert_array_equal(np.asarray(obs[1]), np.asarray(after[0, 1]))
    np.testing.assert_array_equal(np.asarray(obs[4]), np.asarray(after[1, 1]))
    np.testing.assert_array_equal(np.asarray(info["final_observation"][:3]), np.asarray(obs[:3]))  # world 0 goes on
    # Agent 1 of world 0 took its unit: the centre cell of its view has no resource any more.
    assert per_world[0, 1, 2, 2, RESOURCE] == 1 and obs[1, 2, 2, RESOURCE] == 0


def test_ppo_minibatches_keep_one_agents_size_as_agents_are_added():
    from jaxrl.algos.ppo import minibatches
    from jaxrl.config.compose import compose_config

    one, _ = compose_config(["env=grid"])
    eight, _ = compose_config(["env=grid", "env.num_agents=8"])
    assert minibatches(one) == 4 and minibatches(eight) == 32
    batch = lambda cfg, k: cfg.num_envs * k * cfg.algo.num_steps
    assert batch(one, 1) // minibatches(one) == batch(eight, 8) // minibatches(eight) == 2048


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_several_agents_per_world_train_one_shared_network_and_evaluate(algo, tmp_path, capsys):
    import csv
    import json

    from jaxrl.cli.eval import main as eval_main
    from jaxrl.cli.train import main

    run_dir = tmp_path / "agents"
    args = ["env=grid", "env.num_agents=3", "env.max_steps_in_episode=16", "num_envs=8", f"algo={algo}"]
    args += ["algo.num_steps=16"] if algo == "ppo" else ["algo.learning_starts=128", "algo.buffer_size=768"]
    assert main([*args, "total_timesteps=1024", "num_chunks=2", f"run_dir={run_dir}", "progress=false"]) == 0
    with open(run_dir / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    last = rows[-1]
    assert int(last["env_steps"]) == 1024  # world steps; the learner saw 3 transitions per world step
    # A world's return sums its agents' rewards; the env's own score counts the world's units
    # (one unit of reward per collect, no step reward), so the two must agree.
    assert float(last["score"]) == pytest.approx(float(last["world_return"]), rel=1e-4)
    assert float(last["world_return"]) > 0 and last["episode_return"] != last["world_return"]
    # A chunk is 512 world steps = 64 per world = 4 episodes of 16 steps in each of 8 worlds, x 3 agents.
    assert float(last["episodes"]) == 3 * 8 * 4
    if algo == "dqn":  # learning ran on the agents' transitions: losses are numbers, not the pre-learning NaN
        assert all(float(r["loss"]) == float(r["loss"]) for r in rows)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["final_world_return"] == pytest.approx(3 * summary["final_return"], rel=1e-4)
    assert "per agent" in capsys.readouterr().out
    assert eval_main([f"run_dir={run_dir}", "episodes=4", "render=terminal", "fps=1000"]) == 0
    out = capsys.readouterr().out
    report = json.loads((run_dir / "eval.json").read_text())
    assert report["algo"] == algo and report["episodes_per_seed"] == 4 and report["unfinished"] == 0
    assert report["length"]["max"] == 16 and report["agents_per_world"] == 3
    assert report["return_per_agent"]["mean"] == pytest.approx(report["return"]["mean"] / 3, rel=1e-5)
    assert "world return (3 agents) mean" in out and "step 16/16" in out and out.count("+--------+") >= 32


def test_render_text_draws_the_map_in_make_states_letters():
    env = GridWorld(size=5, num_agents=2)
    picture = ["#....", ".R.0.", "..#..", "1....", "....#"]
    text = env.render_text(env.make_state(picture)).splitlines()
    assert text[0] == text[-1] == "+-----+" and [line[1:-1] for line in text[1:-1]] == picture


def test_play_sums_the_agents_rewards_into_the_world_return():
    from jaxrl.trained.evaluation import play

    env, params = envs.make("grid", size=5, num_agents=2)
    params = params.replace(reward_step=1.0, reward_collect=0.0, max_steps_in_episode=7)
    stay = lambda p, carry, obs, key: (carry, jnp.zeros(obs.shape[0], jnp.int32))
    out = jax.jit(lambda k: play(env, params, stay, None, k, 4))(jax.random.key(0))
    np.testing.assert_allclose(np.asarray(out["return"]), 2 * 7)  # two agents, 7 steps, 1 each


@pytest.mark.optimized
@pytest.mark.slow
def test_ppo_with_the_grid_cnn_beats_random():
    """The tuned grid config's CNN learns to collect (a random policy returns ~0.57); bar and measured
    draws: jaxrl.bench.checks and docs/reliability.md."""
    from jaxrl.bench import checks
    from jaxrl.config.compose import compose_config

    cfg, _ = compose_config(["env=grid", "env.max_steps_in_episode=64", "num_envs=64", "total_timesteps=4e5"])
    assert cfg.algo.network == "cnn"
    checks.run_test_draw("ppo_grid")


@pytest.mark.optimized
def test_dqn_with_the_tuned_grid_config_beats_random():
    """The tuned DQN grid config (MLP Q-network, 3-step targets) learns to collect within 5e5 steps."""
    from jaxrl.bench import checks
    from jaxrl.config.compose import compose_config

    cfg, _ = compose_config(["env=grid", "algo=dqn", "env.max_steps_in_episode=64", "total_timesteps=5e5"])
    assert cfg.num_envs == 64 and cfg.algo.n_step == 3
    checks.run_test_draw("dqn_grid")


def test_gymnax_wrappers_work_with_one_agent_per_world():
    from gymnax.wrappers import FlattenObservationWrapper, LogWrapper

    env, params = envs.make("grid", size=5)
    params = params.replace(max_steps_in_episode=5)
    wrapped = LogWrapper(FlattenObservationWrapper(env))
    obs, state = wrapped.reset(jax.random.key(0), params)
    assert obs.shape == (5 * 5 * 4,)
    step = jax.jit(wrapped.step)
    for t in range(5):
        obs, state, _, _, truncated, info = step(jax.random.key(t), state, STAY, params)
    assert obs.shape == (100,) and bool(truncated) and bool(info["returned_episode"])
    assert int(info["returned_episode_lengths"]) == 5


# -- scripted bots ----------------------------------------------------------------------------------


def test_a_bot_walks_to_the_nearest_visible_unit_and_collects_it():
    env = GridWorld(size=6, num_agents=1, view=5, num_bots=1)
    # The bot (1) sees units at distance 2 (right) and 3 (down-left): it steps right twice, then collects.
    state = env.make_state(["0.....", "......", "..1.R.", "......", "R.....", "......"])
    moves = []
    for _ in range(3):
        _, state, reward, info = step(env, state, [STAY])
        moves.append(where(state)[1])
    assert moves == [(2, 3), (2, 4), (2, 4)]
    assert int(info["bot_score"]) == 1 and int(info["score"]) == 0 and float(reward) == 0.0


def test_a_bot_without_a_unit_in_view_wanders_and_learners_see_it_as_another_agent():
    env = GridWorld(size=7, num_agents=1, view=3, num_bots=1)
    state = env.make_state(["0......", ".1.....", ".......", ".......", ".......", ".......", "......R"])
    obs = env.get_obs(state)
    assert obs[2, 2, AGENT] == 1 and obs[1, 1, SELF] == 1  # the bot at the viewer's lower right
    seen = set()
    for key in range(12):
        _, moved, _, _, _ = jax.jit(env.step_env)(jax.random.key(key), state, jnp.asarray([STAY]), env.default_params)
        seen.add(where(moved)[1])
    assert len(seen) >= 3, "wandering goes more than one way"


def test_bots_compete_for_the_same_units_and_the_split_is_reported():
    env, params = envs.make("grid", size=8, num_agents=2, num_bots=3)

    def play(key):
        _, s = env.reset(key, params)

        def body(s, key):
            _, s, reward, _, _, info = env.step(key, s, jnp.full(2, COLLECT), params)
            return s, (reward, info["score"], info["bot_score"])

        return jax.lax.scan(body, s, jax.random.split(key, 100))[1]

    reward, score, bot_score = jax.jit(jax.vmap(play))(jax.random.split(jax.random.key(0), 16))
    assert reward.shape == (16, 100, 2)
    assert int(np.asarray(score).max()) == 0, "learners that never move collect nothing (they start off sources)"
    assert float(np.asarray(bot_score)[:, -1].mean()) > 3


def test_bad_bot_counts_are_refused():
    with pytest.raises(ValueError, match="grid num_bots must be an integer from 0 to size"):
        GridWorld(size=4, num_agents=2, num_bots=7)
