"""A reference continuous-action PPO in PureJaxRL's shape, to benchmark jaxrl's Gaussian PPO against.

Credit: PureJaxRL, Chris Lu et al., https://github.com/luchris429/purejaxrl (Apache-2.0). This module
was re-written here after PureJaxRL's `purejaxrl/ppo_continuous_action.py` and
`purejaxrl/wrappers.py` (names, layout, typing and docstrings are ours; none of its code is
copied), to reproduce the same computation. The training loop is `bench/peers/purejaxrl_ref.py`'s
`make_ppo` (PureJaxRL's ppo.py and ppo_continuous_action.py share it: rollout scan, GAE, epochs of
shuffled minibatches, clipped policy and value losses, `clip_by_global_norm` + adam(eps=1e-5));
what differs is kept here:
- the env stack, innermost first: PureJaxRL's LogWrapper (`EpisodeLog`, so the logged returns are
  the env's own), ClipAction to [-1, 1], VecEnv, then with NORMALIZE_ENV a running mean/variance
  normalisation of observations and a division of rewards by the running standard deviation of
  the discounted return (NormalizeVecObservation, NormalizeVecReward; both updated every step
  from the whole batch of envs, counts starting at 1e-4);
- the network: separate actor and critic MLPs, 256-256, tanh (or relu), orthogonal init (sqrt 2;
  0.01 on the mean head, 1.0 on the value head), zero biases, and a state-independent `log_std`
  parameter starting at 0;
- the policy: a diagonal Gaussian (distrax's `MultivariateNormalDiag(mean, exp(log_std))`),
  sampled as mean + std * normal, log-probability and entropy summed over the action dimensions.

The config is PureJaxRL's dict with its defaults for this script (LR 3e-4, 2048 envs x 10 steps,
4 epochs x 32 minibatches, gamma 0.99, GAE lambda 0.95, clip 0.2, no entropy bonus, VF 0.5, grad
norm 0.5, tanh, no LR annealing, NORMALIZE_ENV on); only ENV_NAME and TOTAL_TIMESTEPS differ:
PureJaxRL's script runs a brax env for 5e7 steps, this one a gymnax classic-control id for 5e5.

Differences from PureJaxRL's code:
- the env is a gymnax one (PureJaxRL's script wraps brax); gymnax 1.0's `step` returns six values
  and, as in `bench/peers/purejaxrl_ref.py`, the rollout stores `done = terminated | truncated`: truncation
  is NOT bootstrapped, the reference's behaviour, kept on purpose. The reward normaliser resets
  its running return on the same `done`.
- no distrax: the Gaussian is written out with distrax's maths (the same draw for the same key).
- the normalisers' statistics are float32 arrays from the start (PureJaxRL starts some as Python
  floats that the scan promotes to float32).

Kept on purpose, as PureJaxRL has them:
- ClipAction clips to [-1, 1] whatever the action space (PureJaxRL's own wrapper carries a TODO to
  use the space's bounds): on Pendulum-v1, whose torque range is [-2, 2], the reference can apply
  at most half the torque. MountainCarContinuous-v0's range is [-1, 1] already.
- with 2048 envs, a budget of 5e5 steps is 24 updates and 244 steps per env: every env sees one
  Pendulum episode (200 steps), or a part of one MountainCarContinuous episode (up to 999), so
  `final_return` reads the episodes that ended latest (see `bench.peers.purejaxrl_ref.final_return`).

    python -m bench.peers.purejaxrl_ppo_continuous_ref [--env Pendulum-v1] [--seed 0] [KEY=VALUE ...]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import flax.linen as nn
import gymnax
import jax
import jax.numpy as jnp
import numpy as np
from flax.struct import dataclass

from jaxrl.bench.peers.purejaxrl_ref import (
    EpisodeLog,
    Policy,
    VecEnv,
    Wrapper,
    cli_args,
    compile_and_run_seeds,
    config_for,
    dense,
    make_ppo,
    ppo_figures,
)

Config = dict[str, Any]

# PureJaxRL's ppo_continuous_action.py settings (its __main__ block), on a gymnax id at the classic-control budget.
PUREJAXRL_CONTINUOUS: Config = {
    "LR": 3e-4,
    "NUM_ENVS": 2048,
    "NUM_STEPS": 10,
    "TOTAL_TIMESTEPS": 5e5,
    "UPDATE_EPOCHS": 4,
    "NUM_MINIBATCHES": 32,
    "GAMMA": 0.99,
    "GAE_LAMBDA": 0.95,
    "CLIP_EPS": 0.2,
    "ENT_COEF": 0.0,
    "VF_COEF": 0.5,
    "MAX_GRAD_NORM": 0.5,
    "ACTIVATION": "tanh",
    "ENV_NAME": "Pendulum-v1",
    "ANNEAL_LR": False,
    "NORMALIZE_ENV": True,
}


# --- wrappers --------------------------------------------------------------------------------


class ClipAction(Wrapper):
    """Actions clipped to [low, high] before the env sees them (PureJaxRL's ClipAction, default [-1, 1])."""

    def __init__(self, env: Any, low: float = -1.0, high: float = 1.0) -> None:
        super().__init__(env)
        self.low, self.high = low, high

    def step(self, key: jax.Array, state: Any, action: jax.Array, params: Any = None) -> tuple:
        """Step with the clipped action; six values, as gymnax 1.0."""
        return self._env.step(key, state, jnp.clip(action, self.low, self.high), params)


@dataclass
class RunningMoments:
    """Running mean and variance of a batch statistic (Chan's parallel update), as PureJaxRL's normalisers keep them."""

    mean: jax.Array
    var: jax.Array
    count: jax.Array  # () float32, samples folded in (starts at 1e-4)

    @classmethod
    def create(cls, shape: tuple[int, ...]) -> RunningMoments:
        return cls(jnp.zeros(shape, jnp.float32), jnp.ones(shape, jnp.float32), jnp.float32(1e-4))

    def update(self, batch: jax.Array) -> RunningMoments:
        """Fold in a batch (leading axis: the envs)."""
        n = batch.shape[0]
        delta = batch.mean(axis=0) - self.mean
        total = self.count + n
        m2 = self.var * self.count + batch.var(axis=0) * n + jnp.square(delta) * self.count * n / total
        return RunningMoments(self.mean + delta * n / total, m2 / total, total)


@dataclass
class NormalizeObsState:
    inner: Any
    obs: RunningMoments  # (obs_size,) statistics


class NormalizeObs(Wrapper):
    """Observations of a vector env standardised by their running mean and variance over all envs
    (PureJaxRL's NormalizeVecObservation); the statistics take in every reset and step batch."""

    def _normalize(self, obs: jax.Array, moments: RunningMoments) -> jax.Array:
        return (obs - moments.mean) / jnp.sqrt(moments.var + 1e-8)

    def reset(self, keys: jax.Array, params: Any = None) -> tuple[jax.Array, NormalizeObsState]:
        """Reset every env; the statistics start from the first observations."""
        obs, inner = self._env.reset(keys, params)
        moments = RunningMoments.create(obs.shape[1:]).update(obs)
        return self._normalize(obs, moments), NormalizeObsState(inner, moments)

    def step(self, keys: jax.Array, state: NormalizeObsState, action: jax.Array, params: Any = None) -> tuple:
        """Step every env; six values, the observations standardised after the statistics take them in."""
        obs, inner, reward, terminated, truncated, info = self._env.step(keys, state.inner, action, params)
        moments = state.obs.update(obs)
        return self._normalize(obs, moments), NormalizeObsState(inner, moments), reward, terminated, truncated, info


@dataclass
class NormalizeRewardState:
    inner: Any
    returns: RunningMoments  # () statistics of the discounted return
    discounted: jax.Array  # (num_envs,) float32, each env's discounted return so far


class NormalizeReward(Wrapper):
    """Rewards of a vector env divided by the running standard deviation of the discounted return
    (PureJaxRL's NormalizeVecReward; the mean is not subtracted)."""

    def __init__(self, env: Any, gamma: float) -> None:
        super().__init__(env)
        self.gamma = gamma

    def reset(self, keys: jax.Array, params: Any = None) -> tuple[jax.Array, NormalizeRewardState]:
        """Reset every env; discounted returns at 0."""
        obs, inner = self._env.reset(keys, params)
        return obs, NormalizeRewardState(inner, RunningMoments.create(()), jnp.zeros(keys.shape[0], jnp.float32))

    def step(self, keys: jax.Array, state: NormalizeRewardState, action: jax.Array, params: Any = None) -> tuple:
        """Step every env; six values, the reward scaled (the logged episode returns stay raw)."""
        obs, inner, reward, terminated, truncated, info = self._env.step(keys, state.inner, action, params)
        done = jnp.logical_or(terminated, truncated)
        discounted = state.discounted * self.gamma * (1 - done) + reward
        moments = state.returns.update(discounted)
        scaled = reward / jnp.sqrt(moments.var + 1e-8)
        return obs, NormalizeRewardState(inner, moments, discounted), scaled, terminated, truncated, info


def make_env(config: Config) -> tuple[Any, Any]:
    """The gymnax env in PureJaxRL's continuous stack (a vector env of NUM_ENVS); and its default params."""
    env, params = gymnax.make(config["ENV_NAME"])
    env = VecEnv(ClipAction(EpisodeLog(env)))
    if config["NORMALIZE_ENV"]:
        env = NormalizeReward(NormalizeObs(env), config["GAMMA"])
    return env, params


# --- network and policy ----------------------------------------------------------------------


class GaussianActorCritic(nn.Module):
    """Separate actor and critic MLPs, 256-256: returns ((action mean, log std), value)."""

    action_dim: int
    activation: str = "tanh"

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[tuple[jax.Array, jax.Array], jax.Array]:
        """The Gaussian's mean and log std per observation (log std state-independent) and a scalar value."""
        act = nn.relu if self.activation == "relu" else nn.tanh
        # Created in PureJaxRL's order (actor layers, log_std, critic layers), so flax names match.
        h = obs
        for _ in range(2):
            h = act(dense(256, np.sqrt(2))(h))
        mean = dense(self.action_dim, 0.01)(h)
        log_std = self.param("log_std", nn.initializers.zeros, (self.action_dim,))
        h = obs
        for _ in range(2):
            h = act(dense(256, np.sqrt(2))(h))
        value = dense(1, 1.0)(h)
        return (mean, jnp.broadcast_to(log_std, mean.shape)), jnp.squeeze(value, axis=-1)


def gaussian_log_prob(head: tuple[jax.Array, jax.Array], action: jax.Array) -> jax.Array:
    """log N(action; mean, exp(log_std)), summed over the action dimensions."""
    mean, log_std = head
    z = (action - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * jnp.square(z) - log_std - 0.5 * jnp.log(2 * jnp.pi), axis=-1)


def gaussian_sample(key: jax.Array, head: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
    """An action mean + std * normal and its log-probability (as `MultivariateNormalDiag.sample` then `log_prob`)."""
    mean, log_std = head
    action = mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape)
    return action, gaussian_log_prob(head, action)


def gaussian_evaluate(head: tuple[jax.Array, jax.Array], action: jax.Array) -> tuple[jax.Array, jax.Array]:
    """log pi(action) and the Gaussian's entropy, sum over dimensions of log std + (1 + log 2 pi) / 2."""
    entropy = jnp.sum(head[1] + 0.5 * (1.0 + jnp.log(2 * jnp.pi)), axis=-1)
    return gaussian_log_prob(head, action), entropy


GAUSSIAN = Policy(sample=gaussian_sample, evaluate=gaussian_evaluate)


# --- training --------------------------------------------------------------------------------


def make_train(config: Config) -> Callable[[jax.Array], dict[str, Any]]:
    """PureJaxRL's continuous-action PPO as one pure function of a PRNG key (jit it whole)."""
    env, env_params = make_env(config)
    space = env.action_space(env_params)
    assert len(space.shape) == 1, f"{config['ENV_NAME']} needs a Box action space of one axis; it has {space}"
    network = GaussianActorCritic(space.shape[0], activation=config["ACTIVATION"])
    return make_ppo(config, env, env_params, network, GAUSSIAN)


def run_reference(env_name: str, seed: int, **overrides: Any) -> dict[str, float]:
    """Compile and run the reference once on `env_name`: steps/s, compile seconds, final return, run seconds."""
    return run_references(env_name, [seed], **overrides)[0]


def run_references(env_name: str, seeds: Sequence[int], **overrides: Any) -> list[dict[str, float]]:
    """`run_reference`'s figures for each seed, the program compiled once (compile seconds are that one compile)."""
    config = config_for(PUREJAXRL_CONTINUOUS, env_name, overrides)
    return [ppo_figures(config, *run) for run in compile_and_run_seeds(make_train, config, seeds)]


def main() -> None:
    """Run the reference once and print its figures."""
    env, seed, overrides = cli_args("TOTAL_TIMESTEPS=1e5", default_env="Pendulum-v1")
    r = run_reference(env, seed, **overrides)
    print(
        f"PureJaxRL-shaped continuous PPO on {env}: {r['sps']:,.0f} steps/s ({r['seconds']:.1f}s), "
        f"compile {r['compile_s']:.1f}s, final return {r['final_return']:.1f}"
    )


if __name__ == "__main__":
    main()
