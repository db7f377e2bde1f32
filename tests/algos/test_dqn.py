"""DQN: replay buffer (add, wrap-around, dtype, bit-packing), n-step and double-DQN targets, the loss, target
updates, epsilon, learning_starts, the learning-rate schedule, counters past 2^31 env steps, learning, one trace."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments import spaces

from jaxrl import build, envs
from jaxrl.algos.base import interval_crossed
from jaxrl.algos.dqn import DQN, DQNConfig
from jaxrl.bench import checks
from jaxrl.config.schema import TrainConfig
from jaxrl.core import rollout
from jaxrl.core.losses import q_targets
from jaxrl.core.replay import Batch, ReplayBuffer
from tests.helpers import (
    bias_values,
    count_traces,
    env_config,
    with_unit_gradient,
)


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


def test_n_step_window_that_wraps_the_buffer_end_against_hand_computed_numbers():
    gamma = 0.5
    buf = float_buffer(rows=4, num_envs=3)
    state = buf.init()
    # Steps 0..5 into 4 rows: rows 0..3 hold steps 4, 5, 2, 3, so a 3-step window from step 2 reads rows 2, 3, 0
    # and one from step 3 reads rows 3, 0, 1. Rewards are the step number. Env 0 runs on; env 1 terminates at
    # step 4 and env 2 is truncated there (both in row 0, past the wrap).
    for t in range(6):
        state = add_step(buf, state, t, terminated=(False, t == 4, False), truncated=(False, False, t == 4))
    batch = buf.sample(state, jax.random.key(3), 4096, 3, gamma)
    fields = (batch.obs[:, 0], batch.reward, batch.discount, batch.next_obs[:, 0])
    got = {float(o): (float(r), float(d), float(n)) for o, r, d, n in zip(*map(np.asarray, fields), strict=True)}
    assert sorted(got) == [20.0, 21.0, 22.0, 30.0, 31.0, 32.0]  # windows from steps 2 and 3 only
    assert got[20.0] == (2 + 0.5 * 3 + 0.25 * 4, 0.125, 40.5)  # rows 2, 3, 0: bootstrap from step 4's next obs
    assert got[30.0] == (3 + 0.5 * 4 + 0.25 * 5, 0.125, 50.5)  # rows 3, 0, 1
    assert got[21.0] == (2 + 0.5 * 3 + 0.25 * 4, 0.0, 41.5)  # ends by termination in row 0: no bootstrap
    assert got[31.0] == (3 + 0.5 * 4, 0.0, 41.5)
    assert got[22.0] == (2 + 0.5 * 3 + 0.25 * 4, 0.125, 42.5)  # truncated in row 0: bootstrap from its final obs
    assert got[32.0] == (3 + 0.5 * 4, 0.25, 42.5)  # two steps summed: gamma^2


def test_a_step_both_terminated_and_truncated_does_not_bootstrap():
    # Snake dies on the very step its hunger limit runs out: the env reports both flags, and the replay must
    # not bootstrap past that step, whether a window starts on it or runs into it.
    env, params = envs.make("snake", size=5)
    state = env.make_state([(0, 1), (0, 0), (1, 0)], apple=(4, 4), direction=1, hunger=params.hunger_limit - 3)
    buf = ReplayBuffer.for_space(8, 1, env.observation_space(params))
    replay, flags, starts = buf.init(), [], []
    for t, action in enumerate((1, 1, 0, 2, 2)):  # right, right, up (off the board at the limit), then a new episode
        obs = env.get_obs(state)
        _, state, reward, terminated, truncated, info = env.step(jax.random.key(t), state, action, params)
        add = (obs, jnp.int32(action), reward, info["final_observation"], terminated, truncated)
        replay = buf.add(replay, *(jnp.asarray(x)[None] for x in add))
        flags.append((bool(terminated), bool(truncated)))
        starts.append(np.asarray(obs).tobytes())
    assert flags[:3] == [(False, False), (False, False), (True, True)]
    death, step = params.reward_death, params.reward_step
    want = {  # (start step, n): (n-step reward, discount)
        (0, 1): (step, 0.9),
        (1, 1): (step, 0.9),
        (2, 1): (death, 0.0),
        (0, 3): (step + 0.9 * step + 0.81 * death, 0.0),
        (1, 3): (step + 0.9 * death, 0.0),
        (2, 3): (death, 0.0),
    }
    for n in (1, 3):
        batch = buf.sample(replay, jax.random.key(1), 256, n, 0.9)
        got = {}
        for o, r, d in zip(np.asarray(batch.obs), np.asarray(batch.reward), np.asarray(batch.discount), strict=True):
            t = starts.index(o.tobytes())
            got[t] = (float(r), float(d))
        for t in range(3):
            assert got[t] == pytest.approx(want[t, n]), (t, n)


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


def test_the_learner_decodes_packed_next_observations_to_what_the_env_returned():
    # Snake 5x5: 5 x 5 x 3 = 75 bits in 10 bytes (the last one partly padding). Random play writes
    # through the DQN's own buffer as `env_step` does; every sampled (obs, next_obs) pair must be one the env
    # produced: the step's final observation (before any reset), at the end of its n-step window.
    n_step, num_envs, steps = 3, 8, 24
    cfg = TrainConfig(
        env=env_config("snake", size=5), algo=DQNConfig(buffer_size=num_envs * steps, n_step=n_step), num_envs=num_envs
    )
    env, params = envs.make("snake", size=5)
    dqn = DQN(cfg, env, params)
    assert dqn.buffer.binary and dqn.buffer.stored_shape == (10,)

    def play(carry, key):
        envs_, replay = carry
        action_key, step_key = jax.random.split(key)
        action = jax.random.randint(action_key, (num_envs,), 0, 4)
        envs_, step, _, _ = rollout.step(dqn.vec, envs_, action, dqn.vec.step_keys(step_key, 1)[0])
        replay = dqn.buffer.add(replay, step.obs, action, step.reward, step.final_obs, step.terminated, step.truncated)
        return (envs_, replay), (step.obs, step.final_obs, step.terminated | step.truncated)

    runner = dqn.init(jax.random.key(0))
    (_, replay), (obs, final, done) = jax.jit(
        lambda c: jax.lax.scan(play, c, jax.random.split(jax.random.key(1), steps))
    )((runner.envs, runner.replay))
    obs, final, done = np.asarray(obs), np.asarray(final), np.asarray(done)
    pairs, ended = set(), set()
    for t in range(steps - n_step + 1):
        for e in range(num_envs):
            last = t + next((k for k in range(n_step) if done[t + k, e]), n_step - 1)
            pairs.add((obs[t, e].tobytes(), final[last, e].tobytes()))
            if done[last, e]:
                ended.add((obs[t, e].tobytes(), final[last, e].tobytes()))
    batch = jax.jit(lambda r, k: dqn.buffer.sample(r, k, 512, n_step, dqn.algo.gamma))(replay, jax.random.key(2))
    assert batch.next_obs.dtype == jnp.uint8 and batch.next_obs.shape == (512, 5, 5, 3)
    sampled = {
        (o.tobytes(), n.tobytes()) for o, n in zip(np.asarray(batch.obs), np.asarray(batch.next_obs), strict=True)
    }
    assert sampled <= pairs
    assert len(sampled) > 100 and len(sampled & ended) > 10  # windows cut by an episode end among them


def test_double_and_vanilla_targets_against_hand_computed_numbers():
    q_next_target = jnp.array([[1.0, 5.0, 3.0], [2.0, 0.0, -1.0]])
    q_next_online = jnp.array([[0.0, 0.0, 9.0], [0.0, 4.0, 1.0]])  # online prefers actions 2 and 1
    reward = jnp.array([1.0, -1.0])
    discount = jnp.array([0.5, 0.0])
    np.testing.assert_allclose(q_targets(q_next_target, q_next_online, reward, discount, True), [1 + 0.5 * 3, -1])
    np.testing.assert_allclose(q_targets(q_next_target, q_next_online, reward, discount, False), [1 + 0.5 * 5, -1])


def small_dqn(total_timesteps=400, num_envs=4, **settings) -> DQN:
    """CartPole DQN, by default 4 envs and one vector step (4 env steps) per update, learning from the first."""
    algo = DQNConfig(
        **{
            "buffer_size": 256,
            "batch_size": 8,
            "learning_starts": 0,
            "train_freq": num_envs,
            "hidden": [16],
            **settings,
        }
    )
    cfg = TrainConfig(env=env_config("CartPole-v1"), algo=algo, num_envs=num_envs, total_timesteps=total_timesteps)
    return DQN(cfg, *envs.make("CartPole-v1"))


def same(a, b) -> bool:
    """Two pytrees bit for bit."""
    return all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


def test_loss_gathers_the_taken_actions_q_and_applies_huber_against_hand_computed_numbers():
    # No hidden layer: Q(s) = s @ W + b, set by hand. One-hot observations read W's rows.
    dqn = small_dqn(hidden=[])
    e = np.eye(4, dtype=np.float32)
    w, b = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.25], [0.0, 0.0]]), np.array([0.5, -0.5])
    w_target = w.copy()
    w_target[1] = [-1.0, 2.0]
    params = dqn.network.init(jax.random.key(0), jnp.zeros((1, 4)))
    assert jax.tree.map(jnp.shape, params) == {"params": {"Dense_0": {"bias": (2,), "kernel": (4, 2)}}}
    net = lambda w, b: {
        "params": {"Dense_0": {"kernel": jnp.asarray(w, jnp.float32), "bias": jnp.asarray(b, jnp.float32)}}
    }
    online, target = net(w, b), net(w_target, b)
    # Q(e0) = [1.5, 1.5], Q(e1) = [3.5, -1.5], Q(e2) = [1, -0.25]; actions 1, 0, 1 take 1.5, 3.5, -0.25.
    # Sample 0 bootstraps from e1: online argmax 0, where the target net gives -0.5 (its own max is 1.5).
    batch = Batch(
        obs=jnp.asarray(e[:3]),
        action=jnp.array([1, 0, 1]),
        reward=jnp.array([2.0, 1.0, -1.0]),
        discount=jnp.array([0.5, 0.0, 0.0]),
        next_obs=jnp.asarray(e[[1, 0, 0]]),
    )
    loss, stats = dqn.loss(online, target, batch)
    # Errors: 1.5 - (2 - 0.25) = -0.25 (quadratic: 0.03125), 3.5 - 1 = 2.5 (linear beyond delta 1: 2.5 - 0.5),
    # -0.25 + 1 = 0.75 (0.28125).
    assert float(loss) == pytest.approx((0.03125 + 2.0 + 0.28125) / 3, rel=1e-6)
    assert float(stats["q_mean"]) == pytest.approx((1.5 + 3.5 - 0.25) / 3, rel=1e-6)
    # The gradient reaches the taken action's Q only, clipped at delta: bias of action 0 from sample 1 (+1),
    # of action 1 from samples 0 and 2 (-0.25 + 0.75), each over the batch of 3.
    grads = jax.grad(lambda p: dqn.loss(p, target, batch)[0])(online)
    np.testing.assert_allclose(grads["params"]["Dense_0"]["bias"], [1 / 3, 0.5 / 3], rtol=1e-6)
    # Vanilla DQN bootstraps from the target's own max (1.5): error -1.25, linear: 0.75.
    vanilla = small_dqn(hidden=[], double=False)
    assert float(vanilla.loss(online, target, batch)[0]) == pytest.approx((0.75 + 2.0 + 0.28125) / 3, rel=1e-6)
    # huber_delta=2: the 2.5 error is linear from 2 on, 2 * (2.5 - 1); 0.75 stays quadratic.
    wide = small_dqn(hidden=[], huber_delta=2.0)
    assert float(wide.loss(online, target, batch)[0]) == pytest.approx((0.03125 + 3.0 + 0.28125) / 3, rel=1e-6)


@pytest.mark.parametrize("tau", [1.0, 0.25])
def test_target_network_moves_when_an_interval_of_env_steps_is_crossed(tau):
    # 4 env steps per update and an interval of 6: updates 1, 2, 4 and 5 (env steps 4-8, 8-12, 16-20, 20-24)
    # cross 6, 12, 18 and 24; updates 0, 3 and 6 cross none.
    dqn = small_dqn(target_update_interval=6, tau=tau)
    assert dqn.steps_per_update == 4
    update = jax.jit(dqn.update)
    runner = dqn.init(jax.random.key(0))
    moved = []
    for _ in range(7):
        before = runner
        runner, _ = update(runner)
        assert not same(runner.params, before.params)  # learning every update
        moved.append(not same(runner.target_params, before.target_params))
        if moved[-1]:  # hard: a copy; soft: tau of the new online net, 1 - tau of the old target
            expect = jax.tree.map(lambda p, t: tau * p + (1 - tau) * t, runner.params, before.target_params)
            for got, want in zip(jax.tree.leaves(runner.target_params), jax.tree.leaves(expect), strict=True):
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
            assert same(runner.target_params, runner.params) == (tau == 1.0)
    assert moved == [False, True, True, False, True, True, False]


@pytest.mark.parametrize(
    "steps_per_update,interval", [(4, 6), (48, 500), (128, 4000), (1000, 999_983), (3, 2**31 - 1), (6, 6), (4, 3)]
)
def test_interval_crossing_is_exact_for_every_int32_update(steps_per_update, interval):
    rng = np.random.default_rng(0)
    updates = np.concatenate([np.arange(40), rng.integers(0, 2**31 - 1, 400), [2**31 - 2]])
    crossed = jax.jit(jax.vmap(lambda u: interval_crossed(u, steps_per_update, interval)))
    got = np.asarray(crossed(jnp.asarray(updates, jnp.int32)))
    want = [(int(u) + 1) * steps_per_update // interval > int(u) * steps_per_update // interval for u in updates]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("learning_starts,n_step,first", [(12, 1, 2), (13, 1, 3), (0, 3, 2)])
def test_learning_starts_keeps_the_online_network_bit_identical_until_its_env_step(learning_starts, n_step, first):
    # 4 env steps per update: update u has done 4 (u + 1) env steps. Learning starts with the update that
    # reaches learning_starts, and not before one n-step window (n_step vector steps) is written.
    dqn = small_dqn(learning_starts=learning_starts, n_step=n_step, target_update_interval=4)
    update = jax.jit(dqn.update)
    runner = dqn.init(jax.random.key(0))
    initial = runner
    for u in range(first + 2):
        runner, stats = update(runner)
        learned = not same(runner.params, initial.params)
        assert learned == (u >= first), u
        assert same(runner.opt_state, initial.opt_state) == (u < first)
        # The interval (4 env steps) is crossed every update, but the target waits for learning too.
        assert same(runner.target_params, initial.target_params) == (u < first)
        assert np.isnan(float(stats.learner["loss"])) == (u < first)
    assert int(runner.replay.written) == first + 2  # acting and writing went on all along


def test_epsilon_falls_linearly_over_its_fraction_of_the_run():
    dqn = small_dqn(total_timesteps=800, epsilon_start=1.0, epsilon_end=0.1, epsilon_decay=0.5)  # over 400 steps
    for steps, epsilon in {0: 1.0, 100: 0.775, 200: 0.55, 396: 0.109, 400: 0.1, 800: 0.1}.items():
        assert float(dqn.epsilon(jnp.float32(steps))) == pytest.approx(epsilon, rel=1e-6), steps
    # An update acts with the epsilon of the env steps done before it (4 per update).
    update = jax.jit(dqn.update)
    runner = dqn.init(jax.random.key(0))
    for u, epsilon in {0: 1.0, 25: 0.775, 50: 0.55, 99: 0.109, 100: 0.1, 199: 0.1}.items():
        _, stats = update(runner.replace(update=jnp.int32(u)))
        assert float(stats.learner["epsilon"]) == pytest.approx(epsilon, rel=1e-6), u
    # Epsilon 0 is greedy, 1 takes the random draw.
    obs = jax.random.normal(jax.random.key(1), (256, 4))
    draws = dqn.exploration(jax.random.key(2), (256,))
    greedy = np.argmax(np.asarray(dqn.network.apply(runner.params, obs)), axis=-1)
    np.testing.assert_array_equal(dqn.act_with(runner.params, obs, draws, jnp.float32(0.0)), greedy)
    np.testing.assert_array_equal(dqn.act_with(runner.params, obs, draws, jnp.float32(1.0)), draws[1])
    assert (greedy != np.asarray(draws[1])).any()


@pytest.mark.parametrize("anneal", [True, False])
def test_learning_rate_falls_linearly_to_zero_over_the_gradient_steps_taken(anneal):
    # 8 updates of 4 env steps and 2 gradient steps; learning from update 2 (learning_starts=12): 12 gradient
    # steps, annealed at 1, 11/12, ..., 1/12 and then 0. With a unit gradient Adam moves every parameter by
    # the learning rate (over 1 + 1e-8), so the biases (from 0) show the step sizes.
    dqn = small_dqn(
        total_timesteps=32, learning_starts=12, gradient_steps=2, lr=1.0, anneal_lr=anneal, max_grad_norm=1e9
    )
    assert (dqn.num_updates, dqn.gradient_steps, dqn.first_learning_update) == (8, 2, 2)
    with_unit_gradient(dqn)
    update = jax.jit(dqn.update)
    runner = dqn.init(jax.random.key(0))
    moves = []
    for _ in range(9):  # the run, then one update past it
        before = bias_values(runner.params)
        runner, _ = update(runner)
        moves.append(before - bias_values(runner.params))
    rate = lambda count: max(0.0, 1 - count / 12) if anneal else 1.0
    expect = [0.0, 0.0] + [rate(2 * (u - 2)) + rate(2 * (u - 2) + 1) for u in range(2, 9)]
    for u, (got, want) in enumerate(zip(moves, expect, strict=True)):
        np.testing.assert_allclose(got, want / (1 + 1e-8), rtol=1e-5, atol=1e-6, err_msg=f"update {u}")


def test_counters_stay_right_past_2_to_the_31_env_steps():
    # 16 envs x 3 vector steps = 48 env steps per update: 1.03e11 env steps per seed are 2,145,833,333 updates,
    # just below 2^31 - 1; the env steps themselves (update * 48) pass 2^31 after 44.7M updates. Epsilon,
    # the learning gate, the target interval and the replay's write count must hold all the way.
    algo = DQNConfig(
        buffer_size=16 * 8,
        batch_size=8,
        learning_starts=1000,
        train_freq=48,
        target_update_interval=500,
        epsilon_decay=1.0,
        hidden=[16],
    )
    cfg = TrainConfig(env=env_config("CartPole-v1"), algo=algo, num_envs=16, total_timesteps=1.03e11)
    dqn = DQN(cfg, *envs.make("CartPole-v1"))
    assert (dqn.steps_per_update, dqn.num_updates) == (48, 2_145_833_333)
    update = jax.jit(dqn.update)
    fresh = dqn.init(jax.random.key(0))
    crossings = 0
    for start in (dqn.num_updates // 2, dqn.num_updates - 12):
        runner = fresh.replace(update=jnp.int32(start))
        for u in range(start, start + 12):
            before = runner
            runner, stats = update(runner)
            steps = u * 48  # Python ints: exact
            epsilon = 1.0 + min(steps / 1.03e11, 1.0) * (0.05 - 1.0)
            assert float(stats.learner["epsilon"]) == pytest.approx(epsilon, abs=1e-6), u  # float32 figures
            assert np.isfinite(float(stats.learner["loss"])) and not same(runner.params, before.params), u
            crossed = (steps + 48) // 500 > steps // 500
            crossings += crossed
            assert same(runner.target_params, before.target_params) != crossed, u
            assert int(runner.update) == u + 1
    assert 0 < crossings < 24
    assert int(runner.replay.written) < 2 * dqn.buffer.rows  # the write count wraps once the buffer is full
    # The write count of a buffer that has taken 2^31 - 2 vector steps (rows 4: the next row is 2) goes on in order.
    buf = float_buffer(rows=4)
    state = buf.init().replace(written=jnp.int32(2**31 - 2))
    for t in range(6):  # rows 2, 3, 0, 1, 2, 3
        state = add_step(buf, state, t)
    assert 4 <= int(state.written) < 8
    batch = buf.sample(state, jax.random.key(0), 512, 1, 0.9)
    assert set(np.asarray(batch.obs[:, 0]).tolist()) == {10.0 * t + e for t in range(2, 6) for e in (0, 1)}


@pytest.mark.optimized
def test_dqn_on_snake_beats_random():
    checks.run_test_draw("dqn_snake")  # bar and measured draws: docs/reliability.md


# The tuned DQN CartPole default's greedy play is checked on tests/algos/test_parity.py's 4-seed run of it.


def test_one_trace_serves_every_dqn_chunk(monkeypatch):
    traces = count_traces(monkeypatch)
    algo = DQNConfig(buffer_size=64, batch_size=8, learning_starts=16, train_freq=8, target_update_interval=16)
    cfg = TrainConfig(
        env=env_config("CartPole-v1"), algo=algo, num_envs=4, num_seeds=2, total_timesteps=8 * 7, num_chunks=3
    )
    program = build.program(cfg)
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
    from jaxrl.core.replay import materialize

    tree = {"obs": jnp.arange(12, dtype=jnp.uint8).reshape(3, 4), "x": jnp.linspace(-1.0, 1.0, 5)}
    out = jax.jit(materialize)(tree, jnp.int32(token))
    jax.tree.map(np.testing.assert_array_equal, out, tree)
