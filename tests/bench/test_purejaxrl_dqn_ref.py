import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.bench.peers.purejaxrl_dqn_ref import (
    PUREJAXRL_DQN_CARTPOLE,
    QNetwork,
    Transition,
    epsilon,
    make_train,
    replay_add,
    replay_init,
    replay_ready,
    replay_sample,
    run_reference,
    schedule,
)


def test_a_short_run_gives_finite_figures():
    r = run_reference("CartPole-v1", 0, TOTAL_TIMESTEPS=2e4, LEARNING_STARTS=1000)
    assert set(r) == {"sps", "compile_s", "final_return", "seconds", "gradient_steps"}
    assert all(math.isfinite(v) and v > 0 for v in r.values()), r
    assert r["gradient_steps"] == (20_000 - 1000) // 10  # one per vector step of 10 envs past 1000 steps


def test_an_odd_env_count_learns_on_purejaxrls_modulo_schedule():
    # 7 envs: env steps are multiples of 7, so a gradient step comes every lcm(7, 10) = 70 of them.
    config = {**PUREJAXRL_DQN_CARTPOLE, "NUM_ENVS": 7, "TOTAL_TIMESTEPS": 2e4, "LEARNING_STARTS": 1000}
    out = jax.jit(make_train(config))(jax.random.PRNGKey(0))
    state = out["runner_state"][0]
    steps = 7 * np.arange(1, 20_000 // 7 + 1)
    expected = int(((steps > 1000) & (steps % 10 == 0)).sum())  # the buffer is sampleable long before
    assert int(state.n_updates) == expected == 271
    assert schedule(config) == {"env_steps_per_gradient_step": 70, "env_steps_per_target_update": 3500}
    assert np.isfinite(np.asarray(out["metrics"]["loss"])).all()
    # The network starts from PureJaxRL's fixed dummy key, whatever the seed.
    init = QNetwork(2).init(jax.random.split(jax.random.PRNGKey(0))[1], jnp.zeros(4))
    moved = jax.tree.map(lambda a, b: float(jnp.abs(a - b).max()), state.params, init)
    assert min(jax.tree.leaves(moved)) > 0, moved


def test_epsilon_falls_linearly_to_its_floor():
    eps = [float(epsilon(PUREJAXRL_DQN_CARTPOLE, jnp.int32(t))) for t in (0, 125_000, 250_000, 400_000)]
    np.testing.assert_allclose(eps, [1.0, 0.525, 0.05, 0.05], rtol=1e-6)


def test_the_replay_samples_consecutive_pairs_of_one_row_and_never_across_the_cursor():
    example = Transition(jnp.zeros(1), jnp.int32(0), jnp.float32(0), jnp.bool_(False))
    replay = replay_init(example, num_envs=2, slots=4)
    for t in range(7):  # slots hold steps 4, 5, 6, 3 after the wrap; the cursor is at slot 3
        batch = Transition(
            jnp.array([[t], [100 + t]], jnp.float32), jnp.zeros(2, jnp.int32), jnp.zeros(2), jnp.zeros(2, bool)
        )
        replay = replay_add(replay, batch)
        assert bool(replay_ready(replay, 2)) == (t >= 1)
    assert (int(replay.cursor), bool(replay.full)) == (3, True)
    first, second = replay_sample(replay, jax.random.PRNGKey(1), 1000)
    a, b = np.asarray(first.obs[:, 0]), np.asarray(second.obs[:, 0])
    np.testing.assert_array_equal(b, a + 1)  # the next step of the same env
    assert set(a % 100) == {3, 4, 5}  # every valid start; 6 (its successor is the oldest, 3) never
    assert set(a // 100) == {0, 1}  # both rows


def test_a_buffer_too_small_for_the_env_count_is_one_line():
    with pytest.raises(ValueError, match="BUFFER_SIZE // NUM_ENVS must be at least 2; got 10000 // 6000"):
        run_reference("CartPole-v1", 0, NUM_ENVS=6000)
    with pytest.raises(KeyError, match="NUM_ENV'"):
        run_reference("CartPole-v1", 0, NUM_ENV=8)
