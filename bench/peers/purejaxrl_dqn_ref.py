"""A reference DQN in PureJaxRL's shape, step for step, to benchmark jaxrl's DQN against.

Credit: PureJaxRL, Chris Lu et al., https://github.com/luchris429/purejaxrl (Apache-2.0), whose
`purejaxrl/dqn.py` is itself a port of CleanRL's `dqn_jax.py`; and flashbax, InstaDeep
(Apache-2.0), whose flat buffer PureJaxRL stores its transitions in. This module was re-written
here after those files (names, layout, typing and docstrings are ours; none of their code is
copied), to reproduce the same computation: one pure `make_train(config) -> train(key)`, jitted as
a whole, whose outer `lax.scan` runs one step of NUM_ENVS envs per iteration: an epsilon-greedy
action from the Q-network (epsilon falls linearly from EPSILON_START to EPSILON_FINISH over
EPSILON_ANNEAL_TIME env steps), one `vmap(env.step)`, the transition `(obs, action, reward, done)`
added to a flat circular replay buffer, then under `lax.cond` one adam step on a uniformly sampled
batch of BUFFER_BATCH_SIZE once the buffer can be sampled, more than LEARNING_STARTS env steps are
done and the env-step count is a multiple of TRAINING_INTERVAL, and under a second `lax.cond` the
target network moved by `optax.incremental_update(TAU)` whenever the env-step count is a multiple
of TARGET_UPDATE_INTERVAL. The TD target is PureJaxRL's: `reward + (1 - done) * GAMMA * max_a
Q_target(next_obs, a)` (no double-Q), regressed by a mean squared error. The network is
PureJaxRL's: Dense 120, relu, Dense 84, relu, Dense num_actions, flax's default init. The config
is PureJaxRL's dict, same keys, its CartPole-v1 defaults. As in PureJaxRL, `train` returns
per-step metrics (env steps so far, gradient steps so far, loss, mean logged return).

The replay buffer is flashbax's `make_flat_buffer(max_length=BUFFER_SIZE,
min_length=BUFFER_BATCH_SIZE, sample_batch_size=BUFFER_BATCH_SIZE, add_batch_size=NUM_ENVS)` in
the same shape: one row of BUFFER_SIZE // NUM_ENVS slots per env, written at one shared cursor
that wraps around; sampleable once the cursor passed BUFFER_BATCH_SIZE // NUM_ENVS + 1 (at least
2) or the rows are full; a sample draws a start slot uniformly among those whose successor is also
valid data (`next_obs` is the obs stored in the next slot of the same env's row) and, with its own
key, an env row uniformly, with flashbax's key splits.

Checked against PureJaxRL's own dqn.py patched for gymnax 1.0 (six-value step, `jax.tree.map`,
no wandb) with flashbax 0.1.3 (2-core CPU, jax 0.10.2, seed 3): the parameters, the target
parameters, every step's loss and logged return are bitwise equal after a full run at the
CartPole defaults, and after 2e4-step runs at 7 envs (LR_LINEAR_DECAY on) and at 64 envs; the
steps/s are the same within noise.

Differences from PureJaxRL's code:
- gymnax 1.0's `step` returns six values `(obs, state, reward, terminated, truncated, info)`;
  PureJaxRL's expected five. As PureJaxRL-on-gymnax-1.0 does, the buffer stores
  `done = terminated | truncated` and the TD target cuts on it: truncation is NOT bootstrapped (a
  time-limit end is treated as a terminal), which is the reference's behaviour and kept on purpose.
- PureJaxRL's dqn.py wraps with gymnax's own `LogWrapper`; this uses `EpisodeLog` from
  `bench/peers/purejaxrl_ref.py` (PureJaxRL's wrapper): the logged returns are the same, its `info`
  carries `timestep` where gymnax's carries `returned_episode_valid`; neither is read here.
- no flashbax (not installed here): the circular buffer above is written in its place, with the
  same layout, the same index arithmetic and key use, the same length-1 index-vector scatter on
  add and the same row/slot gather on sample, so the compiled program does the same work.
- the metrics also keep each env's `returned_episode` and `returned_episode_returns` per step (two
  (NUM_ENVS,) arrays a step, beside PureJaxRL's mean return), so `final_return` can average the
  episodes that ended; no wandb callback; `make_train` does not write NUM_UPDATES back into the
  caller's config.

Kept on purpose, as PureJaxRL has them:
- after the envs are reset from the seed's key, `train` carries on from a fixed `PRNGKey(0)`
  (PureJaxRL's "dummy rng" line overwrites its key): the network init and every exploration and
  sampling key are the same for all seeds; only the initial env states differ by seed.
- the training and target intervals test the env-step count, which grows by NUM_ENVS a step, so a
  gradient step comes every lcm(NUM_ENVS, TRAINING_INTERVAL) env steps and a target copy every
  lcm(NUM_ENVS, TARGET_UPDATE_INTERVAL): at 10 envs one per 10 and per 500, at 64 envs one per 320
  and per 8000 (`schedule(config)` gives them). The buffer holds BUFFER_SIZE // NUM_ENVS * NUM_ENVS
  transitions (9984 at 64 envs).
- LR_LINEAR_DECAY scales LR by `1 - gradient steps / (TOTAL_TIMESTEPS // NUM_ENVS)`, a count of
  vector steps, not of gradient steps: the LR ends near 0 only when a gradient step comes every
  vector step (at 64 envs and the defaults it ends at 80% of LR).

    python -m bench.peers.purejaxrl_dqn_ref [--env CartPole-v1] [--seed 0] [KEY=VALUE ...]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax.struct import dataclass
from flax.training.train_state import TrainState

from jaxrl.bench.peers.purejaxrl_ref import cli_args, compile_and_run_seeds, config_for, final_return, make_env

Config = dict[str, Any]

# PureJaxRL's CartPole-v1 DQN settings (its dqn.py main(), less seeds and wandb).
PUREJAXRL_DQN_CARTPOLE: Config = {
    "NUM_ENVS": 10,
    "BUFFER_SIZE": 10000,
    "BUFFER_BATCH_SIZE": 128,
    "TOTAL_TIMESTEPS": 5e5,
    "EPSILON_START": 1.0,
    "EPSILON_FINISH": 0.05,
    "EPSILON_ANNEAL_TIME": 25e4,
    "TARGET_UPDATE_INTERVAL": 500,
    "LR": 2.5e-4,
    "LEARNING_STARTS": 10000,
    "TRAINING_INTERVAL": 10,
    "LR_LINEAR_DECAY": False,
    "GAMMA": 0.99,
    "TAU": 1.0,
    "ENV_NAME": "CartPole-v1",
}


# --- network ---------------------------------------------------------------------------------


class QNetwork(nn.Module):
    """Q-values from an observation: Dense 120, relu, Dense 84, relu, Dense num_actions."""

    num_actions: int

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        """Q-values, (..., num_actions)."""
        h = nn.relu(nn.Dense(120)(obs))
        h = nn.relu(nn.Dense(84)(h))
        return nn.Dense(self.num_actions)(h)


class DQNTrainState(TrainState):
    """Online parameters and adam state, plus the target parameters and the two counters."""

    target_params: Any
    timesteps: jax.Array  # () int32, env steps taken (all envs)
    n_updates: jax.Array  # () int32, gradient steps taken


# --- replay ----------------------------------------------------------------------------------


@dataclass
class Transition:
    """What one env step stores: the obs acted on, the action, its reward and done."""

    obs: jax.Array  # (..., obs_size) float32
    action: jax.Array  # (...,) int32
    reward: jax.Array  # (...,) float32
    done: jax.Array  # (...,) bool, terminated | truncated


@dataclass
class ReplayState:
    """A flat circular buffer: one row of slots per env, all rows written at one cursor."""

    data: Transition  # every leaf (num_envs, slots, ...)
    cursor: jax.Array  # () int32, the slot the next add writes
    full: jax.Array  # () bool, the cursor has wrapped at least once


def replay_sizes(config: Config) -> tuple[int, int]:
    """(slots per env row, slots the cursor must pass before sampling), flashbax's flat-buffer sizes."""
    size, batch, num_envs = config["BUFFER_SIZE"], config["BUFFER_BATCH_SIZE"], config["NUM_ENVS"]
    slots = size // num_envs
    if slots < 2:
        raise ValueError(f"BUFFER_SIZE // NUM_ENVS must be at least 2; got {size} // {num_envs} = {slots}")
    if batch > size:
        raise ValueError(f"BUFFER_BATCH_SIZE must be at most BUFFER_SIZE ({size}); got {batch}")
    min_slots = max(batch // num_envs + 1, 2)  # a sample is a pair of consecutive slots
    if min_slots > slots:
        raise ValueError(f"BUFFER_BATCH_SIZE // NUM_ENVS + 1 = {min_slots} exceeds the {slots} slots per env")
    return slots, min_slots


def replay_init(example: Transition, num_envs: int, slots: int) -> ReplayState:
    """An empty buffer shaped after one env's transition."""
    data = jax.tree.map(lambda x: jnp.zeros((num_envs, slots, *x.shape), x.dtype), example)
    return ReplayState(data=data, cursor=jnp.zeros((), jnp.int32), full=jnp.zeros((), bool))


def replay_add(state: ReplayState, batch: Transition) -> ReplayState:
    """Write one transition per env (leaves (num_envs, ...)) at the cursor and advance it."""
    slots = state.data.obs.shape[1]
    same = jax.tree.map(lambda buf, x: buf.dtype == x.dtype and buf.shape[2:] == x.shape[1:], state.data, batch)
    assert all(jax.tree.leaves(same)), f"a transition unlike the buffer's: {batch} vs {state.data}"
    # A length-1 index vector, as flashbax writes a sequence of one: the same scatter.
    where = (jnp.arange(1) + state.cursor) % slots
    data = jax.tree.map(lambda buf, x: buf.at[:, where].set(x[:, None]), state.data, batch)
    cursor = state.cursor + 1
    return ReplayState(data=data, cursor=cursor % slots, full=state.full | (cursor >= slots))


def replay_ready(state: ReplayState, min_slots: int) -> jax.Array:
    """Whether the buffer holds enough to sample."""
    return state.full | (state.cursor >= min_slots)


def replay_sample(state: ReplayState, key: jax.Array, batch_size: int) -> tuple[Transition, Transition]:
    """`batch_size` uniform draws of a transition and the one after it in the same env's row."""
    num_envs, slots = state.data.obs.shape[:2]
    end = jnp.where(state.full, slots, state.cursor)  # slots of valid data, oldest first from `oldest`
    oldest = jnp.where(state.full, state.cursor, 0)
    last_start = end - 2  # the pair (start, start + 1) must both be valid
    num_starts = jnp.where(last_start >= 0, last_start + 1, 0)
    key, start_key = jax.random.split(key)
    key, row_key = jax.random.split(key)
    del key
    start = (oldest + jax.random.randint(start_key, (batch_size,), 0, num_starts)) % slots
    rows = jax.random.randint(row_key, (batch_size,), 0, num_envs)
    pair = (start[:, None] + jnp.arange(2)) % slots  # (batch, 2)
    picked = jax.tree.map(lambda x: x[rows[:, None], pair], state.data)  # leaves (batch, 2, ...)
    return jax.tree.map(lambda x: x[:, 0], picked), jax.tree.map(lambda x: x[:, 1], picked)


# --- acting and learning ---------------------------------------------------------------------


def epsilon(config: Config, timesteps: jax.Array) -> jax.Array:
    """PureJaxRL's linear exploration schedule, floored at EPSILON_FINISH."""
    start, finish = config["EPSILON_START"], config["EPSILON_FINISH"]
    return jnp.clip((finish - start) / config["EPSILON_ANNEAL_TIME"] * timesteps + start, min=finish)


def epsilon_greedy(key: jax.Array, q_values: jax.Array, eps: jax.Array) -> jax.Array:
    """Per env: a uniform random action with probability eps, else the argmax of the Q-values."""
    action_key, coin_key = jax.random.split(key)
    greedy = jnp.argmax(q_values, axis=-1)
    explore = jax.random.uniform(coin_key, greedy.shape) < eps
    random = jax.random.randint(action_key, greedy.shape, 0, q_values.shape[-1])
    return jnp.where(explore, random, greedy)


def td_loss(
    network: QNetwork, params: Any, target_params: Any, first: Transition, second: Transition, gamma: float
) -> jax.Array:
    """Mean squared TD error against reward + (1 - done) * gamma * max_a Q_target(next obs, a)."""
    next_q = jnp.max(network.apply(target_params, second.obs), axis=-1)  # (batch,)
    target = first.reward + (1 - first.done) * gamma * next_q
    q = network.apply(params, first.obs)  # (batch, num_actions)
    chosen = jnp.take_along_axis(q, first.action[:, None], axis=-1).squeeze(-1)
    return jnp.mean(jnp.square(chosen - target))


def schedule(config: Config) -> dict[str, int]:
    """Env steps per gradient step and per target update once learning runs (PureJaxRL's modulo tests)."""
    n = config["NUM_ENVS"]
    return {
        "env_steps_per_gradient_step": math.lcm(n, int(config["TRAINING_INTERVAL"])),
        "env_steps_per_target_update": math.lcm(n, int(config["TARGET_UPDATE_INTERVAL"])),
    }


# --- training --------------------------------------------------------------------------------


def make_train(config: Config) -> Callable[[jax.Array], dict[str, Any]]:
    """PureJaxRL's DQN as one pure function of a PRNG key (jit it whole)."""
    c = dict(config)
    num_envs = c["NUM_ENVS"]
    num_updates = int(c["TOTAL_TIMESTEPS"] // num_envs)  # env-step iterations of the scan
    slots, min_slots = replay_sizes(c)
    env, env_params = make_env(c["ENV_NAME"])
    network = QNetwork(env.action_space(env_params).n)
    obs_shape = env.observation_space(env_params).shape

    def lr_schedule(count: jax.Array) -> jax.Array:
        return c["LR"] * (1.0 - count / num_updates)  # count: optax's gradient steps

    tx = optax.adam(learning_rate=lr_schedule if c["LR_LINEAR_DECAY"] else c["LR"])

    def one_transition(key: jax.Array) -> Transition:
        obs, state = env.reset(key, env_params)
        action = env.action_space(env_params).sample(key)
        _, _, reward, terminated, truncated, _ = env.step(key, state, action, env_params)
        return Transition(obs, action, reward, terminated | truncated)

    example = jax.eval_shape(one_transition, jax.random.PRNGKey(0))  # shapes and dtypes only

    def learn(state: DQNTrainState, replay: ReplayState, key: jax.Array) -> tuple[DQNTrainState, jax.Array]:
        """One adam step on a sampled batch."""
        first, second = replay_sample(replay, key, c["BUFFER_BATCH_SIZE"])
        loss, grads = jax.value_and_grad(td_loss, argnums=1)(
            network, state.params, state.target_params, first, second, c["GAMMA"]
        )
        state = state.apply_gradients(grads=grads)
        return state.replace(n_updates=state.n_updates + 1), loss

    def update_step(carry: tuple, _: None) -> tuple[tuple, dict[str, jax.Array]]:
        """Act in every env, store the transitions, maybe learn, maybe move the target."""
        state, replay, env_state, obs, key = carry
        key, act_key, step_key = jax.random.split(key, 3)
        action = epsilon_greedy(act_key, network.apply(state.params, obs), epsilon(c, state.timesteps))
        next_obs, env_state, reward, terminated, truncated, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(step_key, num_envs), env_state, action, env_params
        )
        done = jnp.logical_or(terminated, truncated)
        state = state.replace(timesteps=state.timesteps + num_envs)
        replay = replay_add(replay, Transition(obs, action, reward, done))

        key, learn_key = jax.random.split(key)
        learn_now = (
            replay_ready(replay, min_slots)
            & (state.timesteps > c["LEARNING_STARTS"])
            & (state.timesteps % c["TRAINING_INTERVAL"] == 0)
        )
        state, loss = jax.lax.cond(
            learn_now, lambda s, k: learn(s, replay, k), lambda s, k: (s, jnp.array(0.0)), state, learn_key
        )
        state = jax.lax.cond(
            state.timesteps % c["TARGET_UPDATE_INTERVAL"] == 0,
            lambda s: s.replace(target_params=optax.incremental_update(s.params, s.target_params, c["TAU"])),
            lambda s: s,
            state,
        )
        metrics = {
            "timesteps": state.timesteps,
            "updates": state.n_updates,
            "loss": loss,
            "returns": info["returned_episode_returns"].mean(),
            "returned_episode": info["returned_episode"],  # (num_envs,)
            "returned_episode_returns": info["returned_episode_returns"],  # (num_envs,)
        }
        return (state, replay, env_state, next_obs, key), metrics

    def train(key: jax.Array) -> dict[str, Any]:
        """Train from `key`; returns the final runner state and every step's metrics."""
        key, reset_key = jax.random.split(key)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, num_envs), env_params)
        replay = replay_init(example, num_envs, slots)
        # PureJaxRL's dummy key: from here on the seed's key is dropped (see the module docstring).
        key = jax.random.PRNGKey(0)
        key, init_key = jax.random.split(key)
        params = network.init(init_key, jnp.zeros(obs_shape))
        state = DQNTrainState.create(
            apply_fn=network.apply,
            params=params,
            target_params=jax.tree.map(jnp.copy, params),
            tx=tx,
            timesteps=jnp.zeros((), jnp.int32),
            n_updates=jnp.zeros((), jnp.int32),
        )
        key, runner_key = jax.random.split(key)
        runner, metrics = jax.lax.scan(update_step, (state, replay, env_state, obs, runner_key), None, num_updates)
        return {"runner_state": runner, "metrics": metrics}

    return train


def run_reference(env_name: str, seed: int, **overrides: Any) -> dict[str, float]:
    """Compile and run the reference once on `env_name`: steps/s, compile s, final return, run s, gradient steps."""
    return run_references(env_name, [seed], **overrides)[0]


def run_references(env_name: str, seeds: Sequence[int], **overrides: Any) -> list[dict[str, float]]:
    """`run_reference`'s figures for each seed, the program compiled once (compile seconds are that one compile)."""
    config = config_for(PUREJAXRL_DQN_CARTPOLE, env_name, overrides)
    steps = int(config["TOTAL_TIMESTEPS"] // config["NUM_ENVS"]) * config["NUM_ENVS"]
    return [
        {
            "sps": steps / seconds,  # the steps taken (whole vector steps), not the nominal budget
            "compile_s": compile_s,
            "final_return": final_return(out["metrics"]),
            "seconds": seconds,
            "gradient_steps": int(out["metrics"]["updates"][-1]),  # changes with NUM_ENVS: see `schedule`
        }
        for out, compile_s, seconds in compile_and_run_seeds(make_train, config, seeds)
    ]


def main() -> None:
    """Run the reference once and print its figures."""
    env, seed, overrides = cli_args("NUM_ENVS=64")
    r = run_reference(env, seed, **overrides)
    print(
        f"PureJaxRL-shaped DQN on {env}: {r['sps']:,.0f} steps/s ({r['seconds']:.1f}s), "
        f"compile {r['compile_s']:.1f}s, final return {r['final_return']:.1f}, "
        f"{r['gradient_steps']:,} gradient steps"
    )


if __name__ == "__main__":
    main()
