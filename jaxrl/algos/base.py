"""What every algorithm builds on: `Base` (the skeleton each one shares), the mixins `EpsilonGreedy` (acting of
the value-based ones) and `TargetNetwork` (a target network moved every interval of env steps, with
`interval_crossed`), registration, and the `Algorithm` protocol (`jaxrl.core.algorithm`), re-exported.

An algorithm is one module in `jaxrl/algos/` that defines its config (an `AlgoConfig` subclass: its own
fields, one doc line each, and `validate(cfg)`), a class implementing `Algorithm` (usually over `Base`),
and calls `register(name, config_cls, factory)`. Every module in `jaxrl.algos` is imported when the
registry is first read (`jaxrl.config.registry`), so a new algorithm needs no edit anywhere else.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxrl.config.registry import ALGORITHMS
from jaxrl.config.schema import TrainConfig, env_groups
from jaxrl.core import vector
from jaxrl.core.algorithm import Algorithm, Allocation, PolicyFn

__all__ = [
    "Algorithm",
    "AlgorithmSpec",
    "Allocation",
    "Base",
    "EpsilonGreedy",
    "PolicyFn",
    "TargetNetwork",
    "algorithms",
    "get",
    "register",
]


class Base:
    """The skeleton every algorithm here shares: its config, env and vector env, env groups, the run's
    length in updates, a feed-forward policy, and the optimizer with gradient clipping.

    A subclass sets `steps_per_update` and `base_optimizer(rate)` (the optimizer after the clip), and builds its
    network, runner, `init` and `update`.
    """

    def __init__(self, cfg: TrainConfig, env: Any, env_params: Any):
        self.cfg, self.algo = cfg, cfg.algo
        self.env, self.env_params = env, env_params
        self.vec = vector.make(env, cfg.num_envs)  # several agents per world are extra streams, one network
        self.groups = env_groups(cfg)  # env groups that shuffle or sample on their own (jaxrl.core.groups)

    @property
    def steps_per_update(self) -> int:
        """Env (world) steps per update per seed."""
        raise NotImplementedError

    @property
    def num_updates(self) -> int:
        """Updates in the run (total_timesteps rounded down to whole updates)."""
        return max(1, int(self.cfg.total_timesteps) // self.steps_per_update)

    def initial_carry(self, batch: int) -> Any:
        """Feed-forward network: no carry."""
        return None

    def policy_params(self, runner: Any) -> Any:
        """What the policy acts with: the network parameters."""
        return runner.params

    def base_optimizer(self, rate: Any) -> optax.GradientTransformation:
        """The optimizer the clipped gradients go to, at learning rate `rate` (a number or a schedule)."""
        raise NotImplementedError

    def optimizer_with(self, lr: float | jax.Array) -> optax.GradientTransformation:
        """Gradient clipping and `base_optimizer` at learning rate `lr`. Annealed, `lr` is traced and passed as a
        constant schedule, so the optimizer state keeps the layout checkpoints were written with."""
        rate = (lambda _: lr) if self.algo.anneal_lr else lr
        return optax.chain(optax.clip_by_global_norm(self.algo.max_grad_norm), self.base_optimizer(rate))


class EpsilonGreedy:
    """Acting of a value-based algorithm from `self.network` (Q-values) and `self.num_actions`: greedy in Q,
    or epsilon-greedy from draws made all at once."""

    network: Any
    num_actions: int
    algo: Any

    def q_values(self, params: Any, obs: jax.Array) -> jax.Array:
        """(batch, num_actions) Q-values of a batch of observations."""
        return self.network.apply(params, obs)

    def exploration(self, key: jax.Array, batch: tuple[int, ...]) -> tuple[jax.Array, jax.Array]:
        """The draws epsilon-greedy acting needs for `batch` actions, made at once: (uniform, random action)."""
        explore_key, random_key = jax.random.split(key)
        return jax.random.uniform(explore_key, batch), jax.random.randint(random_key, batch, 0, self.num_actions)

    def act_with(
        self, params: Any, obs: jax.Array, draws: tuple[jax.Array, jax.Array], epsilon: jax.Array
    ) -> jax.Array:
        """Epsilon-greedy actions from pre-drawn `exploration` draws."""
        explore, random = draws
        return jnp.where(explore < epsilon, random, jnp.argmax(self.q_values(params, obs), axis=-1))

    def policy(self, greedy: bool = True) -> PolicyFn:
        """`(params, carry, obs, key) -> (carry, actions)`: greedy in Q, or epsilon-greedy at the final rate."""
        if greedy:
            return lambda params, carry, obs, key: (carry, jnp.argmax(self.q_values(params, obs), axis=-1))
        epsilon = jnp.float32(self.algo.epsilon_end)
        return lambda params, carry, obs, key: (
            carry,
            self.act_with(params, obs, self.exploration(key, obs.shape[:1]), epsilon),
        )

    sampled_scores = False  # `action_scores` are Q-values: self-play's opponents take their argmax

    def action_scores(self) -> Any:
        """`(params, carry, obs) -> (carry, Q-values)`."""
        return lambda params, carry, obs: (carry, self.q_values(params, obs))

    def readout(self) -> Any:
        """`(params, carry, obs) -> (Q-values, their maximum)`."""

        def read(params: Any, carry: Any, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
            q = self.q_values(params, obs)
            return q, jnp.max(q, axis=-1)

        return read


class TargetNetwork:
    """A target network that follows the online one: moved (copied, or blended by `algo.tau`) at each update
    that crosses a multiple of `algo.target_update_interval` env steps."""

    algo: Any
    steps_per_update: int

    def move_target(self, update: jax.Array, learning: jax.Array, params: Any, target_params: Any) -> Any:
        """The target parameters after update `update` (unmoved while not `learning`)."""
        move = learning & interval_crossed(update, self.steps_per_update, self.algo.target_update_interval)
        tau = self.algo.tau
        return jax.tree.map(lambda p, t: jnp.where(move, tau * p + (1 - tau) * t, t), params, target_params)


def interval_crossed(update: jax.Array, steps_per_update: int, interval: int) -> jax.Array:
    """Whether update `update` crosses a multiple of `interval` env steps: (update + 1) * steps_per_update
    // interval > update * steps_per_update // interval, exact for every int32 `update`.

    The product passes int32 after 2^31 env steps, so the remainder (update * steps_per_update) %
    interval is summed from the bits of update % period instead (crossings repeat every `period`
    updates), each term reduced mod interval on the host.
    """
    if steps_per_update >= interval:
        return jnp.bool_(True)
    period = interval // math.gcd(steps_per_update, interval)
    k = update % period
    rem = jnp.int32(0)
    for bit in range((period - 1).bit_length()):
        term = (steps_per_update << bit) % interval
        add = jnp.where((k >> bit) & 1 == 1, term, 0)
        rem = jnp.where(rem >= interval - add, rem - (interval - add), rem + add)  # (rem + add) % interval
    return rem >= interval - steps_per_update


@dataclasses.dataclass(frozen=True)
class AlgorithmSpec:
    """A registered algorithm: its config schema and how to build it."""

    name: str
    config: type  # dataclass with `name` and `validate(cfg)`; the `algo` config group's schema
    factory: Callable[[Any, Any, Any], Algorithm]  # (TrainConfig, env, env_params) -> Algorithm
    doc: str = ""  # one line for --help


def register(name: str, config: type, factory: Callable[[Any, Any, Any], Algorithm], doc: str = "") -> None:
    """Make `algo=<name>` available to the CLI, the Python API, config checks and the driver."""
    ALGORITHMS.add(name, AlgorithmSpec(name, config, factory, doc))


def algorithms() -> dict[str, AlgorithmSpec]:
    """Every registered algorithm by name (PPO first)."""
    return ALGORITHMS.all()


def get(name: str) -> AlgorithmSpec:
    """The algorithm registered as `name`; KeyError naming the valid ones otherwise."""
    found: AlgorithmSpec = ALGORITHMS.get(name)
    return found
