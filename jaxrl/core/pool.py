"""A pool of frozen snapshots of the learner on device: one parameter pytree with a leading slot axis.

Choosing an opponent is a slot drawn when a game starts; the game keeps that slot, and the slot's
parameters never change while any game plays it. The pool holds `size` active snapshots (the ones
new games draw from) in `size + SPARE` slots: a push makes the oldest active snapshot retire (no new
game draws it; games already playing it go on) and writes into a slot no game plays. When every
spare slot still has a game running, the push waits for the next update. The pool never holds
random weights: a slot is drawn only once a snapshot has been pushed into it, and no game draws
from an empty pool.

Running win rates per slot (how often that snapshot beat the learner) are kept as decayed
counts, so prioritized sampling follows the learner as it improves; a slot's counts restart
when a new snapshot takes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

SAMPLING = ("latest", "uniform", "prioritized")
DECAY = 0.99  # per update: the running win counts' memory (about 100 updates)
SPARE = 2  # slots beyond the active snapshots, for retired ones that games still play


@struct.dataclass
class Pool:
    """The learner's past policy parameters in slots, which are drawn, and how they fared (one seed)."""

    params: Any  # the policy parameters, each leaf (slots, ...)
    active: jax.Array  # (slots,) bool, drawn by new games (at most `size` of them)
    filled: jax.Array  # () int32, snapshots pushed so far
    wins: jax.Array  # (slots,) float32, decayed count of games the snapshot beat the learner (draws count half)
    games: jax.Array  # (slots,) float32, decayed count of games against the snapshot
    pushed_at: jax.Array  # (slots,) int32, the update each slot's snapshot was taken at (-1: empty)
    bot_wins: jax.Array  # (kinds,) float32, the same decayed counts for the scripted kinds (the league's, or
    bot_games: jax.Array  # the env's own bots as one kind)

    @classmethod
    def empty(cls, policy_params: Any, size: int, kinds: int = 1) -> Pool:
        """A pool for `size` active snapshots shaped like `policy_params` (zeros, never drawn before a push),
        beside `kinds` scripted opponents."""
        slots = size + SPARE
        zeros = jax.tree.map(lambda x: jnp.zeros((slots, *jnp.shape(x)), jnp.result_type(x)), policy_params)
        f32, bots = jnp.zeros(slots, jnp.float32), jnp.zeros(kinds, jnp.float32)
        return cls(zeros, jnp.zeros(slots, bool), jnp.int32(0), f32, f32, jnp.full(slots, -1, jnp.int32), bots, bots)

    @property
    def slots(self) -> int:
        return self.wins.shape[-1]

    @property
    def size(self) -> int:
        """Active snapshots at most."""
        return self.slots - SPARE

    def push(self, policy_params: Any, when: jax.Array, update: jax.Array, in_use: jax.Array | None = None) -> Pool:
        """The pool with `policy_params` as its newest active snapshot when `when` holds and a slot is free: not
        active and not played by any game (`in_use`, (slots,) bool); the oldest active one retires once `size`
        are active. Unchanged otherwise."""
        in_use = jnp.zeros(self.slots, bool) if in_use is None else in_use
        free = ~self.active & ~in_use
        when = when & jnp.any(free)
        slot = jnp.argmax(free)  # the first free slot

        def put(pool_leaf: jax.Array, leaf: jax.Array) -> jax.Array:
            old = jax.lax.dynamic_index_in_dim(pool_leaf, slot, keepdims=False)
            return jax.lax.dynamic_update_index_in_dim(pool_leaf, jnp.where(when, leaf, old), slot, axis=0)

        ids = jnp.arange(self.slots)
        age = jnp.where(self.active, self.pushed_at, jnp.iinfo(jnp.int32).max)
        retire = when & (jnp.sum(self.active) >= self.size) & (ids == jnp.argmin(age))
        fresh = when & (ids == slot)
        return self.replace(
            params=jax.tree.map(put, self.params, policy_params),
            active=(self.active & ~retire) | fresh,
            filled=self.filled + when.astype(jnp.int32),
            wins=jnp.where(fresh, 0.0, self.wins),
            games=jnp.where(fresh, 0.0, self.games),
            pushed_at=jnp.where(fresh, update, self.pushed_at),
        )

    def record(self, wins: jax.Array, games: jax.Array) -> Pool:
        """Fold one update's results in: (slots + kinds,) opponent wins and games (the snapshots' slots, then
        the scripted kinds), after decaying the old counts."""
        n = self.slots
        return self.replace(
            wins=self.wins * DECAY + wins[:n],
            games=self.games * DECAY + games[:n],
            bot_wins=self.bot_wins * DECAY + wins[n:],
            bot_games=self.bot_games * DECAY + games[n:],
        )

    def win_rate(self) -> jax.Array:
        """(slots,) each snapshot's running win rate against the learner, with one win in two games as the prior."""
        return (self.wins + 1.0) / (self.games + 2.0)

    def kind_weights(self, sampling: str, power: float) -> jax.Array:
        """(kinds,) how likely each scripted kind is drawn for a new game against the bots: prioritized,
        (its running win rate against the learner) ** power; otherwise every kind alike."""
        if sampling != "prioritized":
            return jnp.ones_like(self.bot_wins)
        return ((self.bot_wins + 1.0) / (self.bot_games + 2.0)) ** power

    def weights(self, sampling: str, power: float) -> jax.Array:
        """(slots,) how likely each slot is drawn for a new game (0 for all but the active; all 0 while the
        pool is empty).

        latest: the newest snapshot only; uniform: every active snapshot alike; prioritized (fictitious
        self-play): win_rate ** power, so snapshots that beat the learner come back more often.
        """
        if sampling == "latest":
            newest = jnp.argmax(jnp.where(self.active, self.pushed_at, -1))
            return ((jnp.arange(self.slots) == newest) & self.active).astype(jnp.float32)
        if sampling == "uniform":
            return self.active.astype(jnp.float32)
        return jnp.where(self.active, self.win_rate() ** power, 0.0)

    @staticmethod
    def draw(u: jax.Array, weights: jax.Array) -> jax.Array:
        """Slots for games starting with uniform draws `u` (any shape): the inverse of the weights' CDF;
        -1 while the pool is empty (those games play the scripted bots)."""
        total = jnp.sum(weights)
        edges = jnp.cumsum(weights) / jnp.where(total > 0, total, 1.0)  # K entries: a tiny cumsum
        slot = jnp.sum(u[..., None] >= edges[:-1], axis=-1).astype(jnp.int32)
        return jnp.where(total > 0, slot, -1)


def grouped_apply(
    fn: Callable[[Any, Any, jax.Array], tuple[Any, jax.Array]],
    pool_params: Any,
    index: jax.Array,
    obs: jax.Array,
    carry: Any,
) -> tuple[Any, jax.Array]:
    """`fn(params, carry, obs) -> (carry, out)` for every world with the pool slot `index[w]`'s parameters.

    `obs` and `carry` are (worlds, rows, ...) (rows: a world's opponent seats); returns the carry and
    `out` likewise. A slot outside the pool (-1) gets slot 0's output, which the caller discards.

    Gathering a parameter copy per world would move the whole network per world and step; running
    every slot over every world costs K passes. Instead the worlds are sorted by slot and cut into
    blocks of `block` worlds; a block that spans several slots is run once per slot (segments), so
    there are at most `worlds / block + K - 1` segments, each one batched matmul with its slot's
    parameters. Blocks of worlds / 2K beat smaller ones (more matmuls) and larger ones (more padded rows;
    figures: docs/arena.md, "Self-play: a pool of past policies").
    """
    worlds = index.shape[0]
    size = jax.tree.leaves(pool_params)[0].shape[0]
    block = max(1, min(worlds, worlds // (2 * size)))
    blocks = -(-worlds // block)
    segments = blocks + size - 1
    slot = jnp.clip(index, 0, size - 1)
    order = jnp.argsort(slot, stable=True)
    ranked = slot[order]
    position = jnp.arange(worlds)
    starts = (position % block == 0) | (ranked != jnp.roll(ranked, 1))
    segment = jnp.cumsum(starts) - 1  # each sorted world's segment
    first = jnp.nonzero(starts, size=segments, fill_value=worlds)[0]  # each segment's first sorted world
    rows = jnp.minimum(first[:, None] + jnp.arange(block)[None, :], worlds - 1)  # (segments, block)
    taken = order[rows]  # the worlds each segment reads (a few past its end are read and discarded)
    params = jax.tree.map(lambda x: x[ranked[jnp.minimum(first, worlds - 1)]], pool_params)
    seats = obs.shape[1]
    flat = lambda x: x.reshape((segments, block * seats, *x.shape[3:]))
    seg_carry = None if carry is None else jax.tree.map(lambda c: flat(c[taken]), carry)
    out_carry, out = jax.vmap(fn)(params, seg_carry, flat(obs[taken]))
    # Back to worlds: sorted world p reads its segment's row p - first; then the sort is undone.
    pick = lambda x: x.reshape((segments, block, seats, *x.shape[2:]))[segment, position - first[segment]]
    unsort = jnp.argsort(order)
    out = jax.tree.map(lambda x: pick(x)[unsort], out)
    if carry is not None:
        out_carry = jax.tree.map(lambda c: pick(c)[unsort], out_carry)
    return out_carry, out
