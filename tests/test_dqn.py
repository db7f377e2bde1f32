"""DQN: replay buffer (add, wrap-around, dtype, bit-packing), n-step and double-DQN targets, learning, one trace."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments import spaces

import envs
from jaxrl.algos.dqn import DQN, DQNConfig, q_targets
from jaxrl.cli_config import compose_config
from jaxrl.config import TrainConfig
from jaxrl.driver import Program
from jaxrl.eval import play
from jaxrl.loop import make_train
from jaxrl.replay import ReplayBuffer
from tests.conftest import count_traces, env_config, train_run
from tests.test_ppo import final_mean, random_snake_score


def float_buffer(rows=4, num_envs=2):
    return ReplayBuffer(rows * num_envs, num_envs, (3,), jnp.float32, binary=False)


def add_step(buf, state, t, reward=None, terminated=(False, False), truncated=(False, False)):
    """Vector step number t: env e sees obs 10t+e, reaches 10t+e+0.5, acts e, earns reward[e] (default t)."""
    e = jnp.arange(buf.num_envs, dtype=jnp.float32)
    obs = jnp.repeat((10.0 * t + e)[:, None], 3, axis=1)
    reward = jnp.full(buf.num_envs, float(t)) if reward is None else jnp.asarray(reward, jnp.float32)
    return buf.add(state, obs, e.astype(jnp.int32), reward, obs + 0.5, jnp.array(terminated), jnp.array(truncated))


def test_buffer_wraps_around_and_samples_only_filled_rows():
    buf = float_buffer(rows=4)
    state = buf.init()
    for t in range(3):
        state = add_step(buf, state, t)
    batch = buf.sample(state, jax.random.key(0), 512, 1, 0.9)
    seen = set(np.asarray(batch.obs[:, 0]).tolist())
    assert seen == {0.0, 1.0, 10.0, 11.0, 20.0, 21.0}  # 3 filled rows x 2 envs, nothing unwritten
    for t in range(3, 7):  # 7 steps into 4 rows: rows hold steps 3..6
        state = add_step(buf, state, t)
    assert int(state.written) == 7 and int(buf.filled(state)) == 4
    batch = buf.sample(state, jax.random.key(1), 512, 1, 0.9)
    assert set(np.asarray(batch.obs[:, 0]).tolist()) == {10.0 * t + e for t in range(3, 7) for e in (0, 1)}
    np.testing.assert_array_equal(batch.action, batch.obs[:, 0] % 10)  # each field from the same slot
    np.testing.assert_allclose(batch.next_obs, batch.obs + 0.5)
    np.testing.assert_allclose(batch.reward, np.floor(batch.obs[:, 0] / 10))


def test_n_step_window_is_written_and_does_not_cross_the_write_head():
    buf = float_buffer(rows=4)
    state = buf.init()
    for t in range(6):  # rows hold steps 2..5
        state = add_step(buf, state, t)
    batch = buf.sample(state, jax.random.key(2), 1024, 3, 0.5)
    starts = set(np.floor(np.asarray(batch.obs[:, 0]) / 10).astype(int).tolist())
    assert starts == {2, 3}  # a 3-step window from step 4 or 5 would need unwritten steps


def test_n_step_targets_against_hand_computed_numbers():
    gamma = 0.5
    buf = float_buffer(rows=6)
    state = buf.init()
    # env 0: rewards 1, 2, 4 then truncation at step 3 (reward 8); env 1: termination at step 1.
    steps = [
        ((1.0, 1.0), (False, False), (False, False)),
        ((2.0, 10.0), (False, True), (False, False)),
        ((4.0, 3.0), (False, False), (False, False)),
        ((8.0, 5.0), (False, False), (True, False)),
        ((16.0, 7.0), (False, False), (False, False)),
    ]
    for t, (reward, term, trunc) in enumerate(steps):
        state = add_step(buf, state, t, reward, term, trunc)

    def window(t, e, n):
        batch = buf.sample(state, jax.random.key(0), 4096, n, gamma)
        pick = np.nonzero(np.asarray(batch.obs[:, 0]) == 10 * t + e)[0][0]
        return float(batch.reward[pick]), float(batch.discount[pick]), float(batch.next_obs[pick, 0])

    # One-step: plain transitions; termination zeroes the bootstrap, truncation keeps it.
    assert window(0, 0, 1) == (1.0, 0.5, 0.5)
    assert window(1, 1, 1) == (10.0, 0.0, 11.5)
    assert window(3, 0, 1) == (8.0, 0.5, 30.5)
    # Three-step from step 0, env 0: 1 + 0.5*2 + 0.25*4, bootstrap gamma^3 from step 2's next obs.
    assert window(0, 0, 3) == (3.0, 0.125, 20.5)
    # From step 2, env 0: the window stops at the truncation (step 3) and bootstraps from its final obs.
    assert window(2, 0, 3) == (4.0 + 0.5 * 8.0, 0.25, 30.5)
    # From step 0, env 1: cut by termination at step 1, no bootstrap.
    assert window(0, 1, 3) == (1.0 + 0.5 * 10.0, 0.0, 11.5)


def test_binary_observations_are_bit_packed_and_restored():
    env, params = envs.make("snake", size=10)
    space = env.observation_space(params)
    buf = ReplayBuffer.for_space(1000, 4, space)
    assert buf.binary and buf.stored_shape == (38,) and buf.stored_dtype == jnp.uint8
    obs, _ = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.key(0), 4), params)
    state = buf.add(buf.init(), obs, jnp.zeros(4, jnp.int32), jnp.zeros(4), obs, jnp.zeros(4, bool), jnp.zeros(4, bool))
    assert state.obs.dtype == jnp.uint8 and state.obs.shape == (250, 4, 38)
    batch = buf.sample(state, jax.random.key(1), 64, 1, 0.99)
    assert batch.obs.dtype == obs.dtype and batch.obs.shape == (64, 10, 10, 3)
    stored = {tuple(np.asarray(o).ravel()) for o in obs}
    assert {tuple(np.asarray(o).ravel()) for o in batch.obs} <= stored
    # 1M Snake 10x10 transitions, both observations included, fit in 400 MB.
    assert ReplayBuffer.for_space(1_000_000, 256, space).nbytes() < 400e6
    # Non-binary spaces keep their dtype.
    box = spaces.Box(-1.0, 1.0, (4,), jnp.float32)
    assert not ReplayBuffer.for_space(100, 4, box).binary


def test_double_and_vanilla_targets_against_hand_computed_numbers():
    q_next_target = jnp.array([[1.0, 5.0, 3.0], [2.0, 0.0, -1.0]])
    q_next_online = jnp.array([[0.0, 0.0, 9.0], [0.0, 4.0, 1.0]])  # online prefers actions 2 and 1
    reward = jnp.array([1.0, -1.0])
    discount = jnp.array([0.5, 0.0])
    np.testing.assert_allclose(q_targets(q_next_target, q_next_online, reward, discount, True), [1 + 0.5 * 3, -1])
    np.testing.assert_allclose(q_targets(q_next_target, q_next_online, reward, discount, False), [1 + 0.5 * 5, -1])


def test_dqn_on_snake_beats_random():
    algo = DQNConfig(
        buffer_size=50_000,
        batch_size=256,
        learning_starts=5_000,
        train_freq=128,
        target_update_interval=4_000,
        lr=5e-4,
        epsilon_end=0.05,
        epsilon_decay=0.3,
        n_step=3,
        hidden=[64, 64],
    )
    cfg = TrainConfig(env=env_config("snake", size=6), algo=algo, num_envs=128, total_timesteps=6e5)
    env, params = envs.make("snake", size=6)
    _, stats = train_run(DQN(cfg, env, params), jax.random.key(0))
    trained = final_mean(stats, "score_sum")
    random_score = random_snake_score(env, params)
    assert trained > 2 * random_score + 0.5, (trained, random_score)


@pytest.mark.slow
def test_dqn_cartpole_with_purejaxrl_settings_reaches_475():
    cfg, _ = compose_config(["env=CartPole-v1", "algo=dqn"])
    assert (cfg.num_envs, cfg.algo.buffer_size, cfg.algo.batch_size, cfg.algo.train_freq) == (10, 10_000, 128, 10)
    env, params = envs.make("CartPole-v1")
    dqn = DQN(cfg, env, params)
    assert dqn.num_updates * dqn.steps_per_update <= 5e5
    seeds = jax.random.split(jax.random.key(1), 2)
    runners, _ = jax.jit(jax.vmap(make_train(dqn)))(seeds)
    greedy = jax.vmap(lambda p, k: play(env, params, dqn.policy(greedy=True), p, k, 20))
    returns = np.asarray(jax.jit(greedy)(runners.params, seeds)["return"])
    assert returns.mean(axis=1).min() >= 475, returns.mean(axis=1)  # every seed, 20 greedy episodes each


def test_one_trace_serves_every_dqn_chunk(monkeypatch):
    traces = count_traces(monkeypatch)
    algo = DQNConfig(buffer_size=64, batch_size=8, learning_starts=16, train_freq=8, target_update_interval=16)
    cfg = TrainConfig(
        env=env_config("CartPole-v1"), algo=algo, num_envs=4, num_seeds=2, total_timesteps=8 * 7, num_chunks=3
    )
    env, params = envs.make("CartPole-v1")
    program = Program(cfg, env, params)
    assert (program.num_updates, program.chunk, program.steps_per_update) == (7, 3, 8)
    runner, _ = program.compile()
    for active in (3, 3, 1):
        runner, _ = program.run_chunk(runner, active)
    assert traces == [3], traces
    assert np.asarray(runner.update).tolist() == [7, 7]
    assert np.asarray(runner.replay.written).tolist() == [14, 14]  # 2 vector steps per update
    assert not np.allclose(*np.asarray(jax.tree.leaves(runner.params)[0]))  # two seeds, two agents


@pytest.mark.parametrize("token", [-5, 0, 7])
def test_materialize_returns_its_input(token):
    from jaxrl.replay import materialize

    tree = {"obs": jnp.arange(12, dtype=jnp.uint8).reshape(3, 4), "x": jnp.linspace(-1.0, 1.0, 5)}
    out = jax.jit(materialize)(tree, jnp.int32(token))
    jax.tree.map(np.testing.assert_array_equal, out, tree)
