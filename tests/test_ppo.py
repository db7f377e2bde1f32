"""PPO: learning checks (CartPole, Snake vs random), seeds as a vmap axis, one trace per chunk."""

import jax
import jax.numpy as jnp
import numpy as np

import envs
from jaxrl.config import EnvConfig, PPOConfig, SnakeEnvConfig, TrainConfig
from jaxrl.ppo import make_train
from jaxrl.train import Trainer


def final_mean(stats, key="return_sum", tail=0.1):
    n = stats["episodes"].shape[-1]
    last = slice(n - max(1, int(n * tail)), n)
    return float(np.sum(stats[key][..., last]) / np.sum(stats["episodes"][..., last]))


def test_cartpole_reaches_475_within_5e5_steps():
    cfg = TrainConfig(env=EnvConfig(name="CartPole-v1"), algo=PPOConfig(), num_envs=4, total_timesteps=5e5)
    env, params = envs.make("CartPole-v1")
    ppo = make_train(cfg, env, params)
    _, stats = jax.jit(ppo.train)(jax.random.key(0))
    assert ppo.num_updates * ppo.batch_size <= 5e5
    assert final_mean(stats) >= 475


def random_snake_score(env, params, n=512, steps=400):
    def body(state, key):
        act_key, step_key = jax.random.split(key)
        a = jax.random.randint(act_key, (n,), 0, 4)
        _, state, _, term, trunc, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(step_key, n), state, a, params
        )
        done = term | trunc
        return state, (jnp.where(done, info["score"], 0).sum(), done.sum())

    _, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.key(9), n), params)
    _, (score, count) = jax.lax.scan(body, state, jax.random.split(jax.random.key(10), steps))
    return float(score.sum() / count.sum())


def test_snake_beats_random_and_seeds_are_independent():
    algo = PPOConfig(num_steps=32, update_epochs=2, lr=5e-4, hidden=[64, 64], activation="relu")
    cfg = TrainConfig(env=SnakeEnvConfig(size=6), algo=algo, num_envs=256, num_seeds=2, total_timesteps=6e5)
    env, params = envs.make("snake", size=6)
    ppo = make_train(cfg, env, params)
    keys = jax.random.split(jax.random.key(0), 2)
    _, stats = jax.jit(jax.vmap(ppo.train))(keys)
    random_score = random_snake_score(env, params)
    trained = [final_mean({k: v[s] for k, v in stats.items()}, "score_sum") for s in range(2)]
    assert min(trained) > 2 * random_score + 0.5, (trained, random_score)
    assert trained[0] != trained[1]  # two seeds, two different agents


def test_one_trace_serves_every_chunk(monkeypatch):
    from jaxrl import ppo as ppo_module

    traces = []
    original = ppo_module.PPO.run_chunk

    def counting(self, runner, num_active, length):
        traces.append(length)
        return original(self, runner, num_active, length)

    monkeypatch.setattr(ppo_module.PPO, "run_chunk", counting)
    cfg = TrainConfig(
        env=EnvConfig(name="CartPole-v1"), algo=PPOConfig(num_steps=16), num_envs=4, num_seeds=2,
        total_timesteps=64 * 7, num_chunks=3,
    )
    env, params = envs.make("CartPole-v1")
    trainer = Trainer(cfg, env, params)
    assert (trainer.num_updates, trainer.chunk) == (7, 3)  # chunks of 3, 3 and 1 updates
    runner, _ = trainer.compile()
    sizes = []
    for active in (3, 3, 1):
        runner, stats = trainer.run_chunk(runner, active)
        sizes.append(stats["episodes"].shape)
    assert traces == [3], traces
    assert sizes == [(2, 3), (2, 3), (2, 1)]
    assert np.asarray(runner.update).tolist() == [7, 7]
