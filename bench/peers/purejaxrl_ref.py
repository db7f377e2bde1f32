"""A reference PPO in PureJaxRL's shape, step for step, to benchmark jaxrl against.

Credit: PureJaxRL, Chris Lu et al., https://github.com/luchris429/purejaxrl (Apache-2.0). This module
was re-written here after PureJaxRL's `purejaxrl/ppo.py` and `purejaxrl/wrappers.py` (names,
layout, typing and docstrings are ours; none of its code is copied), to reproduce the same
computation: one pure `make_train(config) -> train(key)`, jitted as a whole, whose outer
`lax.scan` runs the updates; each update is a `lax.scan` rollout of `vmap(env.step)`, GAE as a
reverse `lax.scan` (unroll=16), then `lax.scan` over epochs of a shuffle into minibatches and a
`lax.scan` of clipped-PPO gradient steps (clipped value loss, per-minibatch advantage
normalisation, entropy bonus) through a flax `TrainState` with
`optax.chain(clip_by_global_norm, adam(eps=1e-5))` and PureJaxRL's linear LR schedule. The network
is PureJaxRL's: separate actor and critic MLPs (64-64, tanh or relu), orthogonal init (sqrt 2;
0.01 on the policy head, 1.0 on the value head), zero biases. The config is PureJaxRL's dict,
same keys. As in PureJaxRL, `train` returns every rollout step's `info` as its metrics, gymnax's
`final_observation` included (a stacked copy of every observation: memory, not speed).

Checked against PureJaxRL's own ppo.py patched for gymnax 1.0 (2-core CPU, jax 0.10.2): for the
same seed, the parameters after a full run at PureJaxRL's CartPole settings are bitwise equal on
CartPole-v1 and Breakout-MinAtar, and the compiled programs have the same fusions.

The training loop is `make_ppo`, which `bench/peers/purejaxrl_ppo_continuous_ref.py` (PureJaxRL's
ppo_continuous_action.py, the same loop) shares; `make_train` gives it the vector env, the
network and the categorical policy. Splitting it out left the parameters after a run bitwise
equal to before (CartPole-v1, and Acrobot-v1 without LR annealing).
`final_return` is the figure the references report (and `bench --only parity` compares): the
training-time mean return of the episodes that ended in the last 10% of the run.

Differences from PureJaxRL's code:
- gymnax 1.0's `step` returns six values `(obs, state, reward, terminated, truncated, info)`;
  PureJaxRL's expected five. As PureJaxRL-on-gymnax-1.0 does, the rollout stores
  `done = terminated | truncated` and GAE cuts on it: truncation is NOT bootstrapped (a time-limit
  end is treated as a terminal), which is the reference's behaviour and kept on purpose.
- no distrax: the categorical policy is `log_softmax` + `jax.random.categorical`, with the same
  maths as `distrax.Categorical` (sampled from the normalised logits, log-prob as a one-hot sum,
  entropy as -sum p log p) and its guards (invalid logits, out-of-range actions), so the compiled
  program does the same work per step.
- no `DEBUG` printing callback, and `make_train` does not write NUM_UPDATES/MINIBATCH_SIZE back
  into the caller's config.

    python -m bench.peers.purejaxrl_ref [--env CartPole-v1] [--seed 0] [KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import ast
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import flax.linen as nn
import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax.struct import dataclass
from flax.training.train_state import TrainState
from gymnax.environments import spaces

Config = dict[str, Any]

# PureJaxRL's CartPole-v1 PPO settings (its ppo.py __main__ block).
PUREJAXRL_CARTPOLE: Config = {
    "LR": 2.5e-4,
    "NUM_ENVS": 4,
    "NUM_STEPS": 128,
    "TOTAL_TIMESTEPS": 5e5,
    "UPDATE_EPOCHS": 4,
    "NUM_MINIBATCHES": 4,
    "GAMMA": 0.99,
    "GAE_LAMBDA": 0.95,
    "CLIP_EPS": 0.2,
    "ENT_COEF": 0.01,
    "VF_COEF": 0.5,
    "MAX_GRAD_NORM": 0.5,
    "ACTIVATION": "tanh",
    "ENV_NAME": "CartPole-v1",
    "ANNEAL_LR": True,
}


# --- wrappers --------------------------------------------------------------------------------


class Wrapper:
    """Forwards every attribute it does not define to the wrapped gymnax env."""

    def __init__(self, env: Any) -> None:
        self._env = env

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)


class FlatObs(Wrapper):
    """Observations flattened to one axis (PureJaxRL's FlattenObservationWrapper); six-value step kept."""

    def observation_space(self, params: Any) -> spaces.Box:
        """The wrapped Box space with its shape flattened."""
        inner = self._env.observation_space(params)
        assert isinstance(inner, spaces.Box), "only Box observation spaces can be flattened"
        return spaces.Box(low=inner.low, high=inner.high, shape=(int(np.prod(inner.shape)),), dtype=inner.dtype)

    def reset(self, key: jax.Array, params: Any = None) -> tuple[jax.Array, Any]:
        """Reset, observation flattened."""
        obs, state = self._env.reset(key, params)
        return jnp.reshape(obs, (-1,)), state

    def step(self, key: jax.Array, state: Any, action: jax.Array, params: Any = None) -> tuple:
        """Step (auto-resetting, six values), observation flattened."""
        obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
        return jnp.reshape(obs, (-1,)), state, reward, terminated, truncated, info


@dataclass
class EpisodeLogState:
    """The wrapped env's state plus the running and last-finished episode's return and length."""

    inner: Any
    running_return: jax.Array
    running_length: jax.Array
    last_return: jax.Array
    last_length: jax.Array
    timestep: jax.Array


class EpisodeLog(Wrapper):
    """Episode figures in `info`, the way PureJaxRL's LogWrapper reports them.

    `info` gains `returned_episode_returns`/`_lengths` (the last finished episode's, held until
    the next one ends), `returned_episode` (this step ended one) and `timestep` (steps so far).
    An episode ends on terminated | truncated.
    """

    def reset(self, key: jax.Array, params: Any = None) -> tuple[jax.Array, EpisodeLogState]:
        """Reset, counters at zero."""
        obs, inner = self._env.reset(key, params)
        # PureJaxRL starts these as Python 0s that scan promotes; the promoted dtypes are these.
        zero_f, zero_i = jnp.zeros((), jnp.float32), jnp.zeros((), jnp.int32)
        return obs, EpisodeLogState(inner, zero_f, zero_i, zero_f, zero_i, zero_i)

    def step(self, key: jax.Array, state: EpisodeLogState, action: jax.Array, params: Any = None) -> tuple:
        """Step the wrapped env and update the episode counters; six values, as gymnax 1.0."""
        obs, inner, reward, terminated, truncated, info = self._env.step(key, state.inner, action, params)
        done = jnp.logical_or(terminated, truncated)
        ret = state.running_return + reward
        length = state.running_length + 1
        state = EpisodeLogState(
            inner=inner,
            running_return=ret * (1 - done),
            running_length=length * (1 - done),
            last_return=state.last_return * (1 - done) + ret * done,
            last_length=state.last_length * (1 - done) + length * done,
            timestep=state.timestep + 1,
        )
        info = {
            **info,
            "returned_episode_returns": state.last_return,
            "returned_episode_lengths": state.last_length,
            "timestep": state.timestep,
            "returned_episode": done,
        }
        return obs, state, reward, terminated, truncated, info


# --- network ---------------------------------------------------------------------------------


def dense(width: int, scale: float) -> nn.Dense:
    """A Dense layer with orthogonal(scale) kernel and zero bias (PureJaxRL's init)."""
    return nn.Dense(width, kernel_init=nn.initializers.orthogonal(scale), bias_init=nn.initializers.constant(0.0))


class ActorCritic(nn.Module):
    """Separate actor and critic MLPs, 64-64: returns (policy logits, value)."""

    num_actions: int
    activation: str = "tanh"

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Logits over actions and a scalar value per observation."""
        act = nn.relu if self.activation == "relu" else nn.tanh
        # Actor layers are created before critic layers, so flax names them Dense_0..Dense_5 in
        # PureJaxRL's order and the same init key gives the same initial weights.
        h = obs
        for _ in range(2):
            h = act(dense(64, np.sqrt(2))(h))
        logits = dense(self.num_actions, 0.01)(h)
        h = obs
        for _ in range(2):
            h = act(dense(64, np.sqrt(2))(h))
        value = dense(1, 1.0)(h)
        return logits, jnp.squeeze(value, axis=-1)


def sample_action(key: jax.Array, logits: jax.Array) -> tuple[jax.Array, jax.Array]:
    """An action drawn from softmax(logits) and its log-probability (-1 where the logits are not finite)."""
    log_probs = jax.nn.log_softmax(logits)
    # Drawn from the normalised logits, as distrax does (same draw for the same key).
    action = jax.random.categorical(key, log_probs)
    # distrax's validity guard. It never fires in training, but it is work PureJaxRL's rollout does
    # every step, and with 4 envs per step such small ops are a measurable part of the step time.
    probs = jax.nn.softmax(log_probs)
    valid = jnp.logical_and(jnp.all(jnp.isfinite(probs), axis=-1), jnp.all(probs >= 0, axis=-1))
    action = jnp.where(valid, action, -1)
    return action, log_prob_of(log_probs, action)


def log_prob_of(log_probs: jax.Array, action: jax.Array) -> jax.Array:
    """log pi(action) from normalised log-probabilities (-inf for an action outside the range)."""
    num_actions = log_probs.shape[-1]
    # A one-hot sum rather than a gather, as distrax computes it (its gradient is no scatter); zero
    # where the one-hot is zero, so a -inf log-prob of an action not taken gives 0, not NaN.
    one_hot = jax.nn.one_hot(action, num_actions, dtype=log_probs.dtype)
    picked = jnp.sum(jnp.where(one_hot == 0, 0.0, log_probs * one_hot), axis=-1)
    # distrax's domain guard, kept for the same reason as the validity guard in sample_action.
    return jnp.where(jnp.logical_or(action < 0, action > num_actions - 1), -jnp.inf, picked)


def entropy_of(log_probs: jax.Array) -> jax.Array:
    """Entropy of a categorical from normalised log-probabilities."""
    probs = jnp.exp(log_probs)
    # 0 * log 0 counts as 0 (distrax's mul_exp), so a vanished action gives no NaN.
    return -jnp.sum(jnp.where(probs == 0, 0.0, log_probs) * probs, axis=-1)


# --- training --------------------------------------------------------------------------------


class Policy(NamedTuple):
    """A policy head's distribution, used the way PureJaxRL uses its distrax object."""

    sample: Callable[[jax.Array, Any], tuple[jax.Array, jax.Array]]  # (key, head) -> (action, log-prob)
    evaluate: Callable[[Any, jax.Array], tuple[jax.Array, jax.Array]]  # (head, action) -> (log-prob, entropy)


def categorical_evaluate(logits: jax.Array, action: jax.Array) -> tuple[jax.Array, jax.Array]:
    """log pi(action) and the entropy of distrax.Categorical(logits), as PureJaxRL's loss computes them."""
    log_probs = jax.nn.log_softmax(logits)
    return log_prob_of(log_probs, action), entropy_of(jax.nn.log_softmax(log_probs))  # distrax re-normalises


CATEGORICAL = Policy(sample=sample_action, evaluate=categorical_evaluate)


class VecEnv(Wrapper):
    """NUM_ENVS copies of the wrapped env as one (PureJaxRL's VecEnv): a key, state and action per env."""

    def reset(self, keys: jax.Array, params: Any = None) -> tuple[jax.Array, Any]:
        """Reset every env, one key each."""
        return jax.vmap(self._env.reset, in_axes=(0, None))(keys, params)

    def step(self, keys: jax.Array, state: Any, action: jax.Array, params: Any = None) -> tuple:
        """Step every env, one key each; six values, each with a leading env axis."""
        return jax.vmap(self._env.step, in_axes=(0, 0, 0, None))(keys, state, action, params)


class Step(NamedTuple):
    """One rollout step of NUM_ENVS envs, as the update reads it."""

    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    done: jax.Array  # terminated | truncated: GAE cuts here, no bootstrap on truncation
    info: dict[str, jax.Array]


def make_env(env_name: str) -> tuple[EpisodeLog, Any]:
    """The gymnax env, observation flattened, episode figures logged; and its default params."""
    env, params = gymnax.make(env_name)
    return EpisodeLog(FlatObs(env)), params


def make_train(config: Config) -> Callable[[jax.Array], dict[str, Any]]:
    """PureJaxRL's PPO (`ppo.py`) as one pure function of a PRNG key (jit it whole)."""
    env, env_params = make_env(config["ENV_NAME"])
    network = ActorCritic(env.action_space(env_params).n, activation=config["ACTIVATION"])
    return make_ppo(config, VecEnv(env), env_params, network, CATEGORICAL)


def make_ppo(config: Config, env: Any, env_params: Any, network: nn.Module, policy: Policy) -> Callable:
    """PureJaxRL's PPO training loop, shared by `ppo.py` and `ppo_continuous_action.py`: `env` steps
    all NUM_ENVS envs at once (six values, `info` with the episode figures), `network` gives
    (policy head, value), `policy` turns the head into actions."""
    c = dict(config)
    num_updates = int(c["TOTAL_TIMESTEPS"] // c["NUM_STEPS"] // c["NUM_ENVS"])
    batch_size = c["NUM_STEPS"] * c["NUM_ENVS"]
    assert batch_size % c["NUM_MINIBATCHES"] == 0, "NUM_STEPS * NUM_ENVS must split into NUM_MINIBATCHES"
    gamma, lam, clip_eps = c["GAMMA"], c["GAE_LAMBDA"], c["CLIP_EPS"]

    def lr_schedule(count: jax.Array) -> jax.Array:
        # optax counts gradient steps; the LR falls linearly per update, PureJaxRL's formula.
        grad_steps_per_update = c["NUM_MINIBATCHES"] * c["UPDATE_EPOCHS"]
        return c["LR"] * (1.0 - (count // grad_steps_per_update) / num_updates)

    learning_rate = lr_schedule if c["ANNEAL_LR"] else c["LR"]
    tx = optax.chain(optax.clip_by_global_norm(c["MAX_GRAD_NORM"]), optax.adam(learning_rate, eps=1e-5))

    def train(key: jax.Array) -> dict[str, Any]:
        """Train from `key`; returns the final runner state and every step's info (the metrics)."""
        # The key is split in PureJaxRL's order (init, reset, runner), so a seed means the same there.
        key, init_key = jax.random.split(key)
        params = network.init(init_key, jnp.zeros(env.observation_space(env_params).shape))
        state = TrainState.create(apply_fn=network.apply, params=params, tx=tx)
        key, reset_key = jax.random.split(key)
        obs, env_state = env.reset(jax.random.split(reset_key, c["NUM_ENVS"]), env_params)

        def env_step(carry: tuple, _: None) -> tuple[tuple, Step]:
            state, env_state, obs, key = carry
            key, act_key = jax.random.split(key)
            head, value = network.apply(state.params, obs)
            action, log_prob = policy.sample(act_key, head)
            key, step_key = jax.random.split(key)
            next_obs, env_state, reward, terminated, truncated, info = env.step(
                jax.random.split(step_key, c["NUM_ENVS"]), env_state, action, env_params
            )
            done = jnp.logical_or(terminated, truncated)
            return (state, env_state, next_obs, key), Step(obs, action, log_prob, value, reward, done, info)

        def gae(traj: Step, last_value: jax.Array) -> tuple[jax.Array, jax.Array]:
            """Advantages and value targets, backwards over the rollout."""

            def back(carry: tuple[jax.Array, jax.Array], step: Step) -> tuple[tuple[jax.Array, jax.Array], jax.Array]:
                adv, next_value = carry
                not_done = 1 - step.done
                delta = step.reward + gamma * next_value * not_done - step.value
                adv = delta + gamma * lam * not_done * adv
                return (adv, step.value), adv

            _, advantages = jax.lax.scan(back, (jnp.zeros_like(last_value), last_value), traj, reverse=True, unroll=16)
            return advantages, advantages + traj.value

        def loss_fn(params: Any, mb: Step, adv: jax.Array, targets: jax.Array) -> tuple[jax.Array, tuple]:
            """Clipped PPO loss on one minibatch: actor + VF_COEF * value - ENT_COEF * entropy."""
            head, value = network.apply(params, mb.obs)
            log_prob, entropy = policy.evaluate(head, mb.action)

            value_clipped = mb.value + jnp.clip(value - mb.value, -clip_eps, clip_eps)
            value_loss = 0.5 * jnp.maximum(jnp.square(value - targets), jnp.square(value_clipped - targets)).mean()

            ratio = jnp.exp(log_prob - mb.log_prob)
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)  # normalised per minibatch
            actor_loss = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv).mean()
            entropy = entropy.mean()

            total = actor_loss + c["VF_COEF"] * value_loss - c["ENT_COEF"] * entropy
            return total, (value_loss, actor_loss, entropy)

        def minibatch_step(state: TrainState, mb: tuple) -> tuple[TrainState, tuple]:
            (total, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params, *mb)
            return state.apply_gradients(grads=grads), (total, aux)

        def update(carry: tuple, _: None) -> tuple[tuple, dict[str, jax.Array]]:
            state, env_state, obs, key = carry
            (state, env_state, obs, key), traj = jax.lax.scan(
                env_step, (state, env_state, obs, key), None, c["NUM_STEPS"]
            )
            _, last_value = network.apply(state.params, obs)
            advantages, targets = gae(traj, last_value)

            def epoch(carry: tuple, _: None) -> tuple[tuple, tuple]:
                state, traj, advantages, targets, key = carry
                key, perm_key = jax.random.split(key)
                perm = jax.random.permutation(perm_key, batch_size)
                # (steps, envs, ...) -> (batch, ...) -> shuffled -> (minibatches, minibatch, ...)
                flat = jax.tree.map(lambda x: x.reshape((batch_size,) + x.shape[2:]), (traj, advantages, targets))
                shuffled = jax.tree.map(lambda x: jnp.take(x, perm, axis=0), flat)
                minibatches = jax.tree.map(lambda x: x.reshape((c["NUM_MINIBATCHES"], -1) + x.shape[1:]), shuffled)
                state, losses = jax.lax.scan(minibatch_step, state, minibatches)
                return (state, traj, advantages, targets, key), losses

            # The rollout is carried through the epochs (not closed over), as PureJaxRL does.
            (state, _, _, _, key), _ = jax.lax.scan(
                epoch, (state, traj, advantages, targets, key), None, c["UPDATE_EPOCHS"]
            )
            return (state, env_state, obs, key), traj.info

        key, runner_key = jax.random.split(key)
        runner, metrics = jax.lax.scan(update, (state, env_state, obs, runner_key), None, num_updates)
        return {"runner_state": runner, "metrics": metrics}

    return train


def final_return(metrics: dict[str, jax.Array]) -> float:
    """Mean return of the episodes that ended in the last 10% of iterations (PPO's updates, DQN's vector
    steps). When none ended there, the span is widened back to the last iteration that ended one, as
    jaxrl's `summary.json` widens its span (long episodes, few iterations); NaN if none ever ended."""
    ended = np.asarray(metrics["returned_episode"])
    n = ended.shape[0]
    start = int(n * 0.9)
    ended_per_iteration = ended.reshape(n, -1).any(axis=1)
    if not ended_per_iteration[start:].any():
        if not ended_per_iteration.any():
            return float("nan")
        start = int(np.flatnonzero(ended_per_iteration)[-1])
    returns = np.asarray(metrics["returned_episode_returns"][start:])
    return float((returns * ended[start:]).sum() / ended[start:].sum())


def run_reference(env_name: str, seed: int, **overrides: Any) -> dict[str, float]:
    """Compile and run the reference once on `env_name`: steps/s, compile seconds, final return, run seconds."""
    return run_references(env_name, [seed], **overrides)[0]


def run_references(env_name: str, seeds: Sequence[int], **overrides: Any) -> list[dict[str, float]]:
    """`run_reference`'s figures for each seed, the program compiled once (compile seconds are that one compile)."""
    config = config_for(PUREJAXRL_CARTPOLE, env_name, overrides)
    return [ppo_figures(config, *run) for run in compile_and_run_seeds(make_train, config, seeds)]


def config_for(defaults: Config, env_name: str, overrides: dict[str, Any]) -> Config:
    """A reference's config: its PureJaxRL defaults, the env and overrides (KeyError naming unknown keys)."""
    unknown = set(overrides) - set(defaults)
    if unknown:
        raise KeyError(f"unknown PureJaxRL config keys: {sorted(unknown)}; known: {sorted(defaults)}")
    return {**defaults, "ENV_NAME": env_name, **overrides}


def ppo_figures(config: Config, out: dict[str, Any], compile_s: float, seconds: float) -> dict[str, float]:
    """Steps/s, compile seconds, final return and run seconds of one PPO reference run."""
    steps = (
        int(config["TOTAL_TIMESTEPS"] // config["NUM_STEPS"] // config["NUM_ENVS"])
        * config["NUM_STEPS"]
        * config["NUM_ENVS"]
    )
    return {
        "sps": steps / seconds,  # the steps taken (whole updates), not the nominal budget
        "compile_s": compile_s,
        "final_return": final_return(out["metrics"]),
        "seconds": seconds,
    }


def compile_and_run(make: Callable[[Config], Callable], config: Config, seed: int) -> tuple[Any, float, float]:
    """`make(config)`'s train function compiled and run once from PRNGKey(seed), as PureJaxRL runs it:
    (its output, compile seconds, run seconds)."""
    return next(compile_and_run_seeds(make, config, [seed]))


def compile_and_run_seeds(
    make: Callable[[Config], Callable], config: Config, seeds: Sequence[int]
) -> Iterator[tuple[Any, float, float]]:
    """`make(config)`'s train function compiled once, then run from PRNGKey(seed) for each seed in turn
    (one seed a run, as PureJaxRL runs it): (output, compile seconds, run seconds) per seed."""
    keys = [jax.random.PRNGKey(seed) for seed in seeds]
    t0 = time.perf_counter()
    compiled = jax.jit(make(config)).lower(keys[0]).compile()
    compile_s = time.perf_counter() - t0
    for key in keys:
        t0 = time.perf_counter()
        out = jax.block_until_ready(compiled(key))
        yield out, compile_s, time.perf_counter() - t0


def cli_args(example: str, default_env: str = "CartPole-v1") -> tuple[str, int, Config]:
    """--env, --seed and KEY=VALUE config overrides from the command line of a reference."""
    parser = argparse.ArgumentParser(description="Run a PureJaxRL-shaped reference once and print its figures")
    parser.add_argument("--env", default=default_env, help="gymnax env id (its action space the reference's kind)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("overrides", nargs="*", help=f"PureJaxRL config overrides, KEY=VALUE (e.g. {example})")
    args = parser.parse_args()
    overrides = {}
    for item in args.overrides:
        k, _, v = item.partition("=")
        try:
            overrides[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            overrides[k] = v  # a bare string, e.g. ACTIVATION=relu
    return args.env, args.seed, overrides


def main() -> None:
    """Run the reference once and print its figures."""
    env, seed, overrides = cli_args("TOTAL_TIMESTEPS=1e5")
    r = run_reference(env, seed, **overrides)
    print(
        f"PureJaxRL-shaped PPO on {env}: {r['sps']:,.0f} steps/s ({r['seconds']:.1f}s), "
        f"compile {r['compile_s']:.1f}s, final return {r['final_return']:.1f}"
    )


if __name__ == "__main__":
    main()
