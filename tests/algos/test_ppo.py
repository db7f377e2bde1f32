"""PPO: learning checks (CartPole, Snake vs random), seeds as a vmap axis, one trace per chunk, minibatches,
the learning-rate schedule (also past 2^31 optimizer steps)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import build, envs
from jaxrl.algos.ppo import PPO, ObsStats, PPOConfig
from jaxrl.bench import checks
from jaxrl.config.compose import compose_config
from jaxrl.config.environment import make_env
from jaxrl.config.schema import TrainConfig
from jaxrl.core import losses
from tests.helpers import (
    bias_values,
    count_traces,
    env_config,
    with_unit_gradient,
)


# Learning checks: each case's configuration and bars live in jaxrl.bench.checks (draw 0 is the key these
# tests have always used); docs/reliability.md has each bar beside its measured draws.
@pytest.mark.optimized
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_cartpole_learns_within_5e5_steps(precision):
    checks.run_test_draw(f"ppo_cartpole_{precision}")


@pytest.mark.optimized
def test_snake_beats_random_and_seeds_are_independent():
    checks.run_test_draw("ppo_snake")  # the worst of 2 seeds beats random (~0.14 apples) and the seeds differ


def test_one_trace_serves_every_chunk(monkeypatch):
    traces = count_traces(monkeypatch)
    cfg = TrainConfig(
        env=env_config("CartPole-v1"),
        algo=PPOConfig(num_steps=16),
        num_envs=4,
        num_seeds=2,
        total_timesteps=64 * 7,
        num_chunks=3,
    )
    program = build.program(cfg)
    assert (program.num_updates, program.chunk) == (7, 3)  # chunks of 3, 3 and 1 updates
    runner, _ = program.compile()
    sizes = []
    for active in (3, 3, 1):
        runner, stats = program.run_chunk(runner, active)
        sizes.append(stats.episodes.episodes.shape)
    assert traces == [3], traces
    assert sizes == [(2, 3), (2, 3), (2, 1)]
    assert np.asarray(runner.update).tolist() == [7, 7]


# The shipped tuned defaults for the classic-control ids are pinned, 4 seeds each, in tests/algos/test_parity.py.


def test_observation_statistics_match_numpy():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, (n, 2, 5)).astype(np.float32) for n in (7, 64, 1, 300)]
    stats = ObsStats.create((5,))
    for b in batches:
        stats = stats.update(jnp.asarray(b))
    data = np.concatenate([b.reshape(-1, 5) for b in batches])
    np.testing.assert_allclose(stats.mean, data.mean(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(stats.var, data.var(0), rtol=1e-3)
    z = np.asarray(stats.normalize(jnp.asarray(data)))
    np.testing.assert_allclose(z.mean(0), 0, atol=1e-3)
    np.testing.assert_allclose(z.std(0), 1, atol=1e-3)
    assert float(stats.normalize(jnp.full((5,), 1e6)).max()) == 10.0  # clipped


def test_reward_scale_scales_learning_rewards_not_metrics():
    cfg = TrainConfig(
        env=env_config("CartPole-v1"),
        algo=PPOConfig(num_steps=64, reward_scale=0.25),
        num_envs=4,
        total_timesteps=256,
    )
    env, params = envs.make("CartPole-v1")
    ppo = PPO(cfg, env, params)
    runner = ppo.init(jax.random.key(0))
    _, traj, stats, _ = ppo.collect(runner, jax.random.key(1))
    np.testing.assert_allclose(np.asarray(traj.reward), 0.25)  # CartPole pays 1 per step
    assert float(stats.episodes) > 0
    assert float(stats.return_sum) == float(stats.length_sum)  # raw returns: 1 per step


@pytest.mark.parametrize("count", [0, 1, 3, 4, 11, 40])
def test_values_where_is_exact_for_any_number_of_rows(count):
    from jaxrl.algos.common import values_where

    obs = jax.random.normal(jax.random.key(0), (40, 3))
    mask = jnp.zeros(40, bool).at[jax.random.permutation(jax.random.key(1), 40)[:count]].set(True)
    value_fn = lambda o: o.sum(-1) * 2.0 + 1.0
    got = jax.jit(values_where, static_argnums=(0, 3))(value_fn, obs, mask, 4)  # 4 rows per pass: overflow too
    np.testing.assert_allclose(got, jnp.where(mask, value_fn(obs), 0.0), rtol=1e-6)


def test_collect_bootstraps_truncation_from_final_observation():
    # Pendulum truncates every 200 steps and never terminates; its dynamics are deterministic.
    cfg = TrainConfig(env=env_config("Pendulum-v1"), algo=PPOConfig(num_steps=256), num_envs=8, total_timesteps=2048)
    env, params = envs.make("Pendulum-v1")
    ppo = PPO(cfg, env, params)
    runner = ppo.init(jax.random.key(0))
    new_runner, traj, _, _ = jax.jit(ppo.collect)(runner, jax.random.key(1))
    value = jax.jit(lambda o: ppo.network.apply(runner.params, o, method="value"))
    truncated = np.asarray(traj.truncated)
    assert truncated.sum() == 8 and not bool(traj.terminated.any())

    # Reference: replay the rollout keeping each pre-step env state and the next observation.
    def step(r, draws):
        before = r.envs.state
        r, _ = ppo.env_step(r, draws)
        return r, (before, r.envs.obs)

    _, (states, next_obs) = jax.jit(lambda r: jax.lax.scan(step, r, ppo.draws(jax.random.key(1))))(runner)
    next_value = np.asarray(traj.next_value)
    np.testing.assert_allclose(next_value[~truncated], np.asarray(value(next_obs))[~truncated], rtol=1e-5, atol=1e-5)
    for t, e in zip(*np.nonzero(truncated)):
        state = jax.tree.map(lambda x, t=t, e=e: x[t, e], states)
        action = jnp.clip(traj.action[t, e], -2.0, 2.0)
        final_obs = env.step_env(jax.random.key(0), state, action, params)[0]
        np.testing.assert_allclose(next_value[t, e], float(value(final_obs[None])[0]), rtol=1e-5, atol=1e-5)
        assert abs(next_value[t, e] - float(value(next_obs[t, e][None])[0])) > 1e-4  # not the reset obs
    np.testing.assert_allclose(np.asarray(new_runner.envs.obs), np.asarray(next_obs[-1]), rtol=1e-5, atol=1e-6)


def test_every_transition_is_in_exactly_one_minibatch_per_epoch():
    # 4 envs x 8 steps = 32 transitions, 3 epochs of 4 minibatches of 8. Each minibatch the loss sees is
    # recorded; the rollout is collected again from the same keys to compare.
    cfg = TrainConfig(
        env=env_config("CartPole-v1"),
        algo=PPOConfig(num_steps=8, update_epochs=3, num_minibatches=4),
        num_envs=4,
        total_timesteps=32 * 4,
    )
    ppo = PPO(cfg, *envs.make("CartPole-v1"))
    seen = []
    step = ppo.minibatch_step

    def recording(carry, minibatch, obs_stats=None):
        batch, advantages = minibatch[0], minibatch[1]
        record = lambda *x: seen.append(tuple(np.asarray(a) for a in x))
        jax.debug.callback(record, batch.obs, batch.action, batch.log_prob, advantages, ordered=True)
        return step(carry, minibatch, obs_stats)

    ppo.minibatch_step = recording
    runner = ppo.init(jax.random.key(0))
    jax.block_until_ready(jax.jit(ppo.update)(runner))
    key, rollout_key, _ = jax.random.split(runner.key, 3)  # as `update` splits it
    _, traj, _, _ = jax.jit(ppo.collect)(runner.replace(key=key), rollout_key)
    advantages, _ = losses.compute_gae(
        traj.reward, traj.value, traj.next_value, traj.terminated, traj.truncated, 0.99, 0.95
    )
    obs_all, actions, log_probs, advs = (
        np.asarray(x).reshape(32, -1) for x in (traj.obs, traj.action, traj.log_prob, advantages)
    )
    gaps = np.abs(obs_all[:, None] - obs_all[None]).max(axis=-1) + np.eye(32)
    assert gaps.min() > 1e-3  # distinct observations name the transitions

    def which(o):  # the transition an observation is: `update` and `collect` are two programs, rounded apart
        distance = np.abs(obs_all - o).max(axis=1)
        assert distance.min() <= 1e-5
        return int(np.argmin(distance))

    assert len(seen) == 3 * 4 and all(mb[0].shape == (8, 4) for mb in seen)
    orders = []
    for epoch in range(3):
        minibatches = seen[4 * epoch : 4 * epoch + 4]
        obs = np.concatenate([mb[0] for mb in minibatches])
        order = [which(o) for o in obs]
        assert sorted(order) == list(range(32)), epoch  # each transition once
        travelled = (np.concatenate([mb[j] for mb in minibatches]) for j in (1, 2, 3))
        for i, a, lp, adv in zip(order, *travelled, strict=True):
            # its action, log-prob and advantage travel with it
            assert a == actions[i][0] and lp == pytest.approx(float(log_probs[i][0]), abs=1e-6)
            assert adv == pytest.approx(float(advs[i][0]), rel=1e-5, abs=1e-6)
        orders.append(order)
    assert orders[0] != orders[1] != orders[2]  # a new shuffle every epoch


@pytest.mark.parametrize("anneal", [True, False])
def test_learning_rate_falls_linearly_to_zero_over_the_runs_optimizer_steps(anneal):
    # 5 updates of 2 epochs x 2 minibatches: 20 optimizer steps, annealed at 1, 19/20, ..., 1/20 and 0 after.
    # With a unit gradient Adam moves every parameter by the learning rate (over 1 + 1e-5).
    cfg = TrainConfig(
        env=env_config("CartPole-v1"),
        algo=PPOConfig(num_steps=16, update_epochs=2, num_minibatches=2, lr=1.0, anneal_lr=anneal, max_grad_norm=1e9),
        num_envs=4,
        total_timesteps=64 * 5,
    )
    ppo = with_unit_gradient(PPO(cfg, *envs.make("CartPole-v1")))
    assert ppo.num_updates == 5
    update = jax.jit(ppo.update)
    runner = ppo.init(jax.random.key(0))
    rate = lambda count: max(0.0, 1 - count / 20) if anneal else 1.0
    for u in range(6):  # the run, then one update past it
        before = bias_values(runner.params)
        runner, _ = update(runner)
        want = sum(rate(4 * u + j) for j in range(4)) / (1 + 1e-5)
        np.testing.assert_allclose(
            before - bias_values(runner.params), want, rtol=1e-5, atol=1e-6, err_msg=f"update {u}"
        )


def test_learning_rate_stays_right_past_2_to_the_31_optimizer_steps():
    # 4 envs x 12 steps = 48 env steps per update: 1e11 env steps per seed are 2,083,333,333 updates, near
    # 2^31, and 8.3e9 optimizer steps (4 per update), past optax's int32 step count (which refused the
    # schedule). The rate is float32 arithmetic: right to 1e-6 of lr.
    cfg = TrainConfig(
        env=env_config("CartPole-v1"),
        algo=PPOConfig(num_steps=12, update_epochs=2, num_minibatches=2, lr=1.0, max_grad_norm=1e9),
        num_envs=4,
        total_timesteps=1e11,
    )
    ppo = with_unit_gradient(PPO(cfg, *envs.make("CartPole-v1")))
    n = ppo.num_updates
    assert n == 2_083_333_333
    update = jax.jit(ppo.update)
    fresh = ppo.init(jax.random.key(0))
    for u in (n // 2, n - 1, n):  # halfway, the last update, one past the run's end (0)
        runner, _ = update(fresh.replace(update=jnp.int32(u)))
        want = sum(max(0.0, 1 - (4 * u + j) / (4 * n)) for j in range(4)) / (1 + 1e-5)
        moves = bias_values(fresh.params) - bias_values(runner.params)
        np.testing.assert_allclose(moves, want, rtol=1e-5, atol=4e-6, err_msg=f"update {u}")
        assert int(runner.update) == u + 1


def test_binary_observations_are_stored_bit_packed_in_the_rollout():
    """Snake's (10, 10, 3) 0/1 board is stored as 38 bytes per transition and the learner reads back
    exactly the observations the policy acted on."""
    cfg, _ = compose_config(["env=snake", "num_envs=8", "algo.num_steps=16", "progress=false"])
    env, params = make_env(cfg)
    ppo = PPO(cfg, env, params)
    assert ppo.obs_codec.binary and ppo.obs_codec.stored_bytes == 38
    (block,) = ppo.memory()
    assert block.nbytes == 8 * 16 * (38 + 4 + 24 + 2)
    runner = ppo.init(jax.random.key(0))
    _, traj, _, _ = jax.jit(ppo.collect)(runner, jax.random.key(1))
    assert traj.obs.shape == (16, 8, 38) and traj.obs.dtype == jnp.uint8
    first = ppo.obs_codec.decode(traj.obs[0])
    assert first.dtype == runner.envs.obs.dtype
    np.testing.assert_array_equal(np.asarray(first), np.asarray(runner.envs.obs))  # what step 0 acted on
    assert int(ppo.obs_codec.decode(traj.obs).sum()) > 0
    # CartPole's float observations are stored as they are.
    cart, cart_params = envs.make("CartPole-v1")
    assert not PPO(TrainConfig(env=env_config("CartPole-v1"), algo=PPOConfig()), cart, cart_params).obs_codec.binary
