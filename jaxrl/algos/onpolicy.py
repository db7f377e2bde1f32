"""What the on-policy algorithms share (PPO, A2C, PQN): the config of a rollout learned from in epochs of
minibatches, its sizes and checks, and `OnPolicy`, the base that shuffles the rollout and takes the
optimizer steps. An algorithm over it writes its rollout and its `loss`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxrl.algos.base import Allocation, Base
from jaxrl.algos.common import epoch_rates
from jaxrl.config.schema import AlgoConfig, ConfigError, TrainConfig, agents_per_world, env_groups
from jaxrl.config.validate import positive
from jaxrl.core import groups, shuffle
from jaxrl.core.stats import global_norm


@dataclass
class OnPolicyConfig(AlgoConfig):
    """The fields of an algorithm that learns from each rollout in epochs of minibatches, then drops it."""

    num_steps: int = 128  # rollout length per env per update
    update_epochs: int = 4  # passes over each rollout
    num_minibatches: int = 4  # minibatches per epoch (times env.num_agents); must divide num_envs * num_steps
    minibatch_size: Any = None  # transitions per minibatch (replaces num_minibatches): an integer, or auto
    reward_scale: float = 1.0  # rewards are multiplied by this for learning (metrics stay raw)

    def validate(self, cfg: TrainConfig) -> None:
        """ConfigError naming the first rollout setting out of range or not dividing the rollout."""
        for name in ("num_steps", "update_epochs", "num_minibatches", "reward_scale"):
            positive(f"algo.{name}", getattr(self, name))
        self.check_split(cfg, minibatches(cfg))
        batch = cfg.num_envs * self.num_steps
        if cfg.total_timesteps < batch:
            raise ConfigError(
                f"total_timesteps={cfg.total_timesteps:g} is below one update (num_envs * algo.num_steps = {batch})"
            )

    def check_split(self, cfg: TrainConfig, count: int) -> None:
        """ConfigError unless every env group's transitions split into `count` minibatches."""
        streams = cfg.num_envs * agents_per_world(cfg)
        groups.check_split(env_groups(cfg), streams * self.num_steps, count, "transitions")


def minibatches(cfg: TrainConfig) -> int:
    """Minibatches per epoch. `num_minibatches` splits one agent's share of the rollout, so with K
    agents per world there are K times as many, each as large as with one agent (an agent's minibatch
    keeps its size however many share a world). `minibatch_size=auto`: the largest divisor of the
    rollout batch that still gives at least that many minibatches; an integer must divide the batch."""
    a = cfg.algo
    agents = agents_per_world(cfg)
    batch = cfg.num_envs * agents * a.num_steps
    where = f"num_envs * algo.num_steps = {cfg.num_envs} * {a.num_steps} = {batch}"
    if agents > 1:
        where = f"num_envs * env.num_agents * algo.num_steps = {cfg.num_envs} * {agents} * {a.num_steps} = {batch}"
    if a.minibatch_size is None:
        world_batch = cfg.num_envs * a.num_steps
        if world_batch % a.num_minibatches:
            raise ConfigError(
                f"algo.num_minibatches={a.num_minibatches} must divide num_envs * algo.num_steps"
                f" = {cfg.num_envs} * {a.num_steps} = {world_batch}"
            )
        return a.num_minibatches * agents
    if isinstance(a.minibatch_size, str) and a.minibatch_size.strip().lower() == "auto":
        cap = max(1, batch // (a.num_minibatches * agents))
        size = max(d for d in range(1, cap + 1) if batch % d == 0)
        return batch // size
    size = a.minibatch_size
    if isinstance(size, str) and size.strip().isdigit():
        size = int(size)
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        raise ConfigError(f"algo.minibatch_size={a.minibatch_size} is invalid: a positive integer or auto")
    if batch % size:
        raise ConfigError(f"algo.minibatch_size={size} must divide {where} (or use algo.minibatch_size=auto)")
    return batch // size


class OnPolicy(Base):
    """A rollout of `num_steps` in every stream per update, learned from in `update_epochs` epochs, each a
    shuffle of it into `num_minibatches` minibatches and one optimizer step per minibatch.

    A subclass gives `loss(params, *context, *minibatch) -> (loss, stats)`, `bytes_per_step()` and the
    rollout, and calls `learn` with what the minibatches cut (a pytree of (num_steps, streams, ...) arrays).
    """

    def __init__(self, cfg: TrainConfig, env: Any, env_params: Any):
        super().__init__(cfg, env, env_params)
        self.num_minibatches = minibatches(cfg)

    @property
    def batch_size(self) -> int:
        """Transitions per update per seed (one per agent per env step)."""
        return self.vec.streams * self.algo.num_steps

    @property
    def num_shuffled(self) -> int:
        """What an epoch shuffles into minibatches: the update's transitions."""
        return self.batch_size

    @property
    def steps_per_update(self) -> int:
        """Env (world) steps per update per seed."""
        return self.cfg.num_envs * self.algo.num_steps

    @property
    def minibatch_size(self) -> int:
        size, rest = divmod(self.batch_size, self.num_minibatches)
        assert rest == 0, f"{self.num_minibatches} minibatches must divide {self.batch_size}"
        return size

    def bytes_per_step(self) -> int:
        """Rollout bytes per transition."""
        raise NotImplementedError

    def memory(self) -> list[Allocation]:
        """The rollout storage of one update."""
        what = f"the rollout ({self.batch_size:,} transitions)"
        return [Allocation(what, self.batch_size * self.bytes_per_step(), "num_envs or algo.num_steps")]

    def learning_rates(self, update: jax.Array) -> jax.Array:
        """(update_epochs, num_minibatches) learning rates of update `update`'s optimizer steps: lr, or,
        annealed, linear from lr at the run's first step to 0 after its last.

        Worked out from the update counter in float32, not by optax from its int32 step count: a run of
        1e11 env steps can take more than 2^31 optimizer steps, where that count stops (and optax
        refuses so long a schedule). Below 2^24 steps it equals optax's linear_schedule bit for bit.
        """
        a = self.algo
        return epoch_rates(a.lr, a.anneal_lr, update, self.num_updates, a.update_epochs, self.num_minibatches)

    def loss(self, params: Any, *args: Any) -> tuple[jax.Array, dict[str, jax.Array]]:
        raise NotImplementedError

    def minibatch_step(self, carry: Any, minibatch: Any, *context: Any) -> tuple[Any, dict[str, jax.Array]]:
        """One optimizer step on a minibatch (its parts, then its learning rate)."""
        params, opt_state = carry
        *parts, lr = minibatch
        grads, stats = jax.grad(self.loss, has_aux=True)(params, *context, *parts)
        updates, opt_state = self.optimizer_with(lr).update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), {**stats, "grad_norm": global_norm(grads)}

    def minibatches(self, data: Any, perm: jax.Array) -> Any:
        """`data` cut into minibatches of transitions, with a leading minibatch axis; `perm` is (env groups,
        transitions one group shuffles), each group shuffling its own streams' data (`jaxrl.core.groups`)."""
        return groups.minibatches(self.group_minibatches, data, perm, self.groups)

    def group_minibatches(self, data: Any, perm: jax.Array) -> Any:
        """`minibatches` of one group's data (all of it with one group), in the order of `perm`."""
        return shuffle.minibatches(data, perm, self.num_minibatches)

    def epoch(self, carry: Any, perm: jax.Array, lrs: jax.Array, data: Any, *context: Any) -> Any:
        """One pass over the rollout in minibatches, in the order of `perm`, at learning rates `lrs`."""
        step = lambda c, minibatch: self.minibatch_step(c, minibatch, *context)
        return jax.lax.scan(step, carry, (*self.minibatches(data, perm), lrs))

    def learn(self, runner: Any, key: jax.Array, data: Any, *context: Any) -> tuple[Any, Any, dict[str, jax.Array]]:
        """(params, optimizer state, per-step loss stats) after `update_epochs` epochs over `data`, each
        shuffled by its own permutation from `key`; `context` goes to every `loss` call before the minibatch."""
        perms = groups.permutations(key, self.num_shuffled, self.algo.update_epochs, self.groups)
        (params, opt_state), stats = jax.lax.scan(
            lambda c, xs: self.epoch(c, *xs, data, *context),
            (runner.params, runner.opt_state),
            (perms, self.learning_rates(runner.update)),
        )
        return params, opt_state, stats


def bootstrap_next(values: jax.Array, last: jax.Array, truncated: jax.Array, truncated_values: jax.Array) -> jax.Array:
    """The value of the observation each step reached: the next step's (its `values` row), `last` after
    the final step, and `truncated_values` where the episode was cut short there (a terminated step's is
    never used)."""
    following = jnp.concatenate([values[1:], last[None]])
    return jnp.where(truncated, truncated_values, following)
