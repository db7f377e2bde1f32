"""Recurrent PPO (`algo.network=gru|lstm`): feed-forward `PPO` with a carried memory and truncated BPTT.

The rollout is cut into sequences of `algo.bptt_horizon` steps per stream; the carry each
sequence started from is stored, and every epoch shuffles whole sequences into minibatches and
runs the network over them in time order (truncated backpropagation through time), resetting the
carry where an episode started. `RecurrentPPO` overrides only what that changes: the network and
its carry, the rollout scan, the minibatches and the loss's network pass.

`algo=ppo` is registered in `jaxrl.algos.ppo`; this module adds `RecurrentPPO` to its `VARIANTS`, the
classes its factory picks by `algo.network`.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.algos.actor_critic import ActorCriticRunner as PPORunner
from jaxrl.algos.actor_critic import Transition
from jaxrl.algos.ppo import PPO, VARIANTS, horizon, sequence_sizes
from jaxrl.config.schema import ConfigError, TrainConfig
from jaxrl.core import groups, networks, shuffle
from jaxrl.core.stats import ObsStats


class RecurrentPPO(PPO):
    """Static pieces of a recurrent PPO run: `PPO`'s, plus the BPTT horizon and the sequence counts."""

    def __init__(self, cfg: TrainConfig, env: Any, env_params: Any):
        super().__init__(cfg, env, env_params)
        self.horizon = horizon(self.algo)
        self.num_sequences, self.num_minibatches = sequence_sizes(cfg)

    def make_network(self, settings: dict[str, Any]) -> nn.Module:
        """The recurrent actor-critic: torso, then the GRU/LSTM cell, then the heads."""
        a = self.algo
        if a.torso == "cnn" and len(self.obs_shape) != 3:
            raise ConfigError(f"algo.torso=cnn needs (H, W, C) observations; {self.env.name} gives {self.obs_shape}")
        return networks.RecurrentActorCritic(cell=a.network, torso=a.torso, rnn_hidden=a.rnn_hidden, **settings)

    @property
    def num_shuffled(self) -> int:
        """What an epoch shuffles into minibatches: whole BPTT sequences."""
        return self.num_sequences

    def bytes_per_step(self) -> int:
        """`PPO`'s, plus the reset flag and each sequence's stored start carry, spread over its steps."""
        carry = self.initial_carry(1)
        return super().bytes_per_step() + 1 + sum(x.size * 4 for x in jax.tree.leaves(carry)) // self.horizon

    def init_params(self, key: jax.Array, obs: jax.Array) -> Any:
        """Fresh network parameters, shaped by a one-step sequence of the first row of `obs` (streams, ...)."""
        return self.network.init(key, self.initial_carry(1), obs[None, :1], jnp.zeros((1, 1), bool))

    # -- acting -----------------------------------------------------------------------------

    def forward(
        self, params: Any, obs_stats: ObsStats | None, carry: Any, obs: jax.Array
    ) -> tuple[Any, Any, jax.Array]:
        """(carry, policy head output, value) for a batch of observations, the cell stepped once from `carry`."""
        return self.network.apply(params, carry, self.prepare(obs_stats, obs), method="step")

    def value(self, params: Any, obs_stats: ObsStats | None, carry: Any, obs: jax.Array) -> jax.Array:
        """The critic's value of a batch of observations, stepped from `carry`."""
        return self.forward(params, obs_stats, carry, obs)[2]

    def initial_carry(self, batch: int) -> Any:
        """Zeros of the recurrent cell's carry for `batch` streams."""
        return networks.initial_carry(self.algo.network, batch, self.algo.rnn_hidden)

    def scan_steps(self, runner: PPORunner, draws: Any) -> tuple[PPORunner, Transition, Any, Any]:
        """(runner, trajectory, per-step episode stats, the carry each sequence started from (pieces,
        streams, ...)): a scan over the BPTT sequences of a scan over their steps."""
        pieces = self.algo.num_steps // self.horizon
        draws = jax.tree.map(lambda x: x.reshape((pieces, self.horizon) + x.shape[1:]), draws)

        def piece(runner: PPORunner, d: Any) -> tuple[PPORunner, Any]:
            start = runner.envs.carry
            runner, out = jax.lax.scan(self.env_step, runner, d)
            return runner, (out, start)

        runner, (out, starts) = jax.lax.scan(piece, runner, draws)
        traj, stats = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), out)
        return runner, traj, stats, starts

    # -- learning --------------------------------------------------------------------------

    def minibatch_pass(
        self, params: Any, obs_stats: ObsStats | None, obs: jax.Array, memory: Any
    ) -> tuple[Any, jax.Array]:
        """(policy head output, value) of a minibatch of sequences, time-major (H, B, ...), run through the
        cell in order; `memory` is (start carries (B, ...), resets (H, B))."""
        starts, resets = memory
        _, pi, value = self.network.apply(params, starts, self.prepare(obs_stats, obs), resets)
        return pi, value

    def learning_data(self, traj: Transition, advantages: jax.Array, targets: jax.Array, starts: Any) -> Any:
        """(trajectory, advantages, targets, (start carries (pieces, streams, ...), resets (num_steps, streams)))."""
        done = traj.terminated | traj.truncated  # the carry restarts after these steps
        resets = jnp.concatenate([jnp.zeros_like(done[:1]), done[:-1]])
        return traj, advantages, targets, (starts, resets)

    def sequences(self, x: jax.Array) -> jax.Array:
        """A rollout array (num_steps, streams, ...) as BPTT sequences, time-major: (bptt_horizon,
        sequences, ...), sequence p * streams + s being steps [p * horizon, (p + 1) * horizon) of stream s."""
        pieces = self.algo.num_steps // self.horizon
        x = jnp.swapaxes(x.reshape((pieces, self.horizon) + x.shape[1:]), 0, 1)
        return x.reshape((self.horizon, -1) + x.shape[3:])

    def minibatches(self, data: Any, perm: jax.Array) -> Any:
        """`learning_data` cut into minibatches of whole BPTT sequences, time order kept inside each: arrays
        (M, horizon, sequences / M, ...), memory (start carries (M, sequences / M, ...), resets (M, horizon,
        sequences / M)); `perm` is (env groups, sequences one group shuffles)."""
        join = (2, 2, 2, (1, 2))  # the sequence axis of each result: after time, except the start carries
        return groups.minibatches(self.group_minibatches, data, perm, self.groups, join)

    def group_minibatches(self, data: Any, perm: jax.Array) -> Any:
        """`minibatches` of one group's data (all of it with one group), in the order of `perm` over its sequences."""
        m = self.num_minibatches

        def split_time(x: jax.Array) -> jax.Array:  # (H, N, ...) -> (M, H, N / M, ...)
            x = x[:, perm]
            return jnp.swapaxes(x.reshape((x.shape[0], m, -1) + x.shape[2:]), 0, 1)

        traj, advantages, targets, (starts, resets) = data
        traj, advantages, targets, resets = jax.tree.map(self.sequences, (traj, advantages, targets, resets))
        starts = shuffle.minibatches(starts, perm, m)  # (pieces, streams, ...): one per sequence
        split = lambda tree: jax.tree.map(split_time, tree)
        return split(traj), split(advantages), split(targets), (starts, split(resets))


VARIANTS.update(dict.fromkeys(networks.RECURRENT, RecurrentPPO))
