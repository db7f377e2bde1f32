"""Self-play (`opponents=selfplay`): the bots' seats of the arena or the grid played by the learner's own
past policies, drawn per game from a pool of frozen snapshots on device (`jaxrl.core.pool`).

Three pieces, each in the runner, so checkpoints, exact resume, sweeps and devices work as for any run:
- `SelfPlayVector`, the env batch: the first `bot_share` of the worlds play the env's own bots, or
  with a league (`selfplay.league`: scripted kinds such as the arena's greedy, space and lookahead,
  and frozen agents, `pretrained:NAME` or a run directory, each seeing with its own view) each game
  there draws one kind; in the others every game draws a pool slot when it starts and
  keeps it to its end, and the opponents' recurrent state starts with the game. A game that started
  before the first snapshot plays the bots to its end. Both draws follow `sampling`: prioritized
  (fictitious self-play) brings back the snapshots and kinds that beat the learner most.
- the pool (`Seats.pool`, in the envs' state, replicated over devices): K snapshots, their running win
  rates against the learner;
- `SelfPlay`, the algorithm around the learner's own: after each update it folds the games' results
  into the pool and pushes a snapshot every `snapshot_every` updates from `start` on.

Cost: each step runs the opponents' forward pass over every self-play world's seats, the pool's
slots sorted into segments (`pool.grouped_apply`). The bots' scripts run only in worlds that play
them: with one seed, a `cond` skips them (and the pool's pass while it is empty, and each league kind
no game plays); with several seeds jax turns those conds into selects, and all run.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxrl.core.pool import SPARE, Pool, grouped_apply
from jaxrl.core.stats import all_finite
from jaxrl.core.vector import VectorEnv
from jaxrl.envs.base import hook, offers
from jaxrl.errors import ConfigError

DRAW_SALT = 0x5EED_0101  # the pool slot a new game draws (hashed from the world's step key)
ACT_SALT = 0x5EED_0102  # the opponents' action noise


@struct.dataclass
class Seats:
    """The env states of a self-play batch and who sits in each world's opponent seats, per world."""

    env: Any  # (worlds, ...) the env's states
    slot: jax.Array  # (worlds,) int32, the pool slot this game's opponents play; -1 - k: scripted kind k
    #   (the league's k-th; without a league -1, the env's bots)
    carry: Any  # (worlds, seats, ...) the opponents' recurrent state (None: feed-forward)
    wins: jax.Array  # (worlds, slots + kinds) float32, opponent wins (draws half) per slot since the last
    #   update's fold; the last columns: each scripted kind's wins in the games it played
    games: jax.Array  # (worlds, slots + kinds) float32, games ended per slot (and per kind) since then
    pool: Pool | None = None  # the snapshots (no worlds axis; `SelfPlay` fills it in after the first reset)


def is_agent(kind: str) -> bool:
    """A league member that is a frozen agent (`pretrained:NAME`, a run directory), not a scripted kind."""
    return kind.startswith(("pretrained:", ".", "~")) or "/" in kind  # shelf.PREFIX: trained/ sits above algos/


def label(kind: str) -> str:
    """A league member's name in metrics: the kind, or the agent's name (letters, digits and _)."""
    name = kind.removeprefix("pretrained:").rstrip("/").rsplit("/", 1)[-1] if is_agent(kind) else kind
    return "".join(c if c.isalnum() else "_" for c in name)


def check_env(env: Any, league: tuple[str, ...] = ()) -> None:
    """ConfigError unless `env` has opponent seats self-play can fill, and the bots `league` names (frozen
    agents are loaded by `jaxrl.trained.frozen.league_agents`, before training)."""
    slots = hook(env, "opponent_slots")
    if slots is None:
        raise ConfigError(
            f"opponents=selfplay needs an env with opponents: env=arena or env=grid with env.num_bots >= 1"
            f" (env={getattr(env, 'name', env)} has none)"
        )
    if slots < 1:
        raise ConfigError(
            "opponents=selfplay needs opponent seats: env.num_snakes above env.num_agents (arena),"
            " or env.num_bots >= 1 (grid)"
        )
    if league:
        if not offers(env, "opponent_kind_actions"):
            raise ConfigError(
                f"selfplay.league needs an env whose opponents play a kind per game (the arena), not {env.name}"
            )
        kinds = tuple(hook(env, "bot_kinds"))
        for kind in league:
            if kind not in kinds and not is_agent(kind):
                raise ConfigError(
                    f"selfplay.league: {kind!r} is not a bot of env={env.name}: allowed {', '.join(kinds)},"
                    " pretrained:NAME or a run directory as a path (./NAME)"
                )
        if len({label(kind) for kind in league}) < len(league):
            raise ConfigError(f"selfplay.league={list(league)} names two members alike in metrics: rename a run")
        if getattr(env, "bot_policy", ""):
            raise ConfigError("selfplay.league and env.bot_policy both say who plays the bots' games: set one of them")


class SelfPlayVector(VectorEnv):
    """`num_envs` worlds of `env`, their opponents' seats played by the pool (see the module doc)."""

    def __init__(
        self,
        env: Any,
        num_envs: int,
        scores: Any,
        sampled: bool,
        initial_carry: Any,
        settings: Any,
        agents: Any = None,
    ):
        """`scores(params, carry, obs) -> (carry, per-action scores)`: the learner's (`Algorithm.action_scores`),
        acted on by argmax, after Gumbel noise when `sampled`. `agents(league) -> {kind: (act, env)}`: the
        league's frozen agents (called when the step is traced; jaxrl.build passes the loader)."""
        super().__init__(env, num_envs)
        self.agents = agents
        self.versus = env.versus()
        self.seats = env.opponent_slots
        self.scores, self.sampled, self.initial_carry = scores, sampled, initial_carry
        self.settings = settings
        self.slots = settings.pool_size + SPARE  # the pool's slots (`Pool.empty`)
        self.league = tuple(settings.league)  # kinds drawn per game: scripts, frozen agents (empty: the env's own bots)
        self.kinds = max(1, len(self.league))
        self.bot_worlds = round(settings.bot_share * num_envs)  # worlds 0 .. bot_worlds-1 play the bots

    def _carry(self, worlds: int) -> Any:
        carry = self.initial_carry(worlds * self.seats)
        return None if carry is None else jax.tree.map(lambda c: c.reshape(worlds, self.seats, *c.shape[1:]), carry)

    def _draw(self, keys: jax.Array, pool: Pool | None) -> jax.Array:
        """(worlds,) the slots of games starting now: a pool slot in the self-play worlds, -1 - k (scripted
        kind k) in the bots' worlds and while the pool is empty."""
        worlds = jnp.arange(keys.shape[0])
        u = jax.vmap(lambda k: self.env.uniform(k, DRAW_SALT, 2))(keys)
        bots = -1
        if self.kinds > 1:
            s = self.settings
            weights = jnp.ones(self.kinds) if pool is None else pool.kind_weights(s.sampling, s.priority_power)
            bots = -1 - Pool.draw(u[:, 1], weights)
        if pool is None:
            return jnp.broadcast_to(jnp.asarray(bots, jnp.int32), worlds.shape)
        slot = pool.draw(u[:, 0], pool.weights(self.settings.sampling, self.settings.priority_power))
        return jnp.where((worlds >= self.bot_worlds) & (slot >= 0), slot, bots).astype(jnp.int32)

    def reset(self, key: jax.Array, params: Any, pool: Pool | None = None) -> tuple[jax.Array, Seats]:
        """Fresh worlds; their games draw from `pool` (None: the bots, and `Seats.pool` stays empty)."""
        keys = jax.random.split(key, self.num_envs)
        obs, state = jax.vmap(self.env.reset, in_axes=(0, None))(keys, params)
        zeros = jnp.zeros((self.num_envs, self.slots + self.kinds), jnp.float32)
        seats = Seats(state, self._draw(keys, pool), self._carry(self.num_envs), zeros, zeros, pool)
        return self._flat(obs), seats

    def step(self, keys: jax.Array, state: Seats, action: jax.Array, params: Any):
        """As `VectorEnv.step`, the opponents drawn from `state.pool`."""
        pool = state.pool
        if pool is None:
            raise ValueError("a self-play batch steps with a pool in its state (SelfPlay.init puts it there)")
        split = self.bot_worlds
        if self.num_agents > 1:
            action = action.reshape((self.num_envs, self.num_agents, *action.shape[1:]))
        part = lambda tree, lo, hi: jax.tree.map(lambda x: x[lo:hi], tree)
        outs, opponents = [], []
        low = 0 if self.league else split  # the first world stepped with every seat's action given
        if low:  # the env's own bots, inside its step
            outs.append(
                jax.vmap(self.env.step, in_axes=(0, 0, 0, None))(
                    keys[:split], part(state.env, 0, split), action[:split], params
                )
            )
        elif split:  # the league's kinds, each game its own
            opponents.append(self._scripted(keys[:split], part(state.env, 0, split), state.slot[:split]))
        envs = part(state.env, split, None)
        slot = state.slot[split:]
        carry = None if state.carry is None else part(state.carry, split, None)
        carry, opp_action = self._opponents(keys[split:], envs, slot, carry, pool)
        opp_action = jnp.concatenate([*opponents, opp_action])
        learner = action[low:].reshape(-1, self.num_agents)
        full = jnp.concatenate([learner, opp_action.astype(learner.dtype)], axis=1)
        outs.append(
            jax.vmap(self.versus.step, in_axes=(0, 0, 0, None))(keys[low:], part(state.env, low, None), full, params)
        )
        obs, env_state, reward, terminated, truncated, info = (
            outs[0] if len(outs) == 1 else jax.tree.map(lambda *xs: jnp.concatenate(xs), *outs)
        )
        done = terminated | truncated
        # Results of the self-play games that ended, then the next games' slots and fresh opponent state.
        ended = done[split:]
        lost = 1.0 - self.env.learner_result(info)  # (worlds,), read where a game ended
        column = jnp.where(state.slot >= 0, state.slot, self.slots - 1 - state.slot)  # kind k: column slots + k
        hot = (column[:, None] == jnp.arange(self.slots + self.kinds)[None, :]) & done[:, None]
        wins = state.wins + jnp.where(hot, lost[:, None], 0.0)
        games = state.games + hot.astype(jnp.float32)
        new_slot = jnp.where(done, self._draw(keys, pool), state.slot)
        if carry is not None:
            fresh = self._carry(self.num_envs - split)
            expand = lambda x: ended.reshape(ended.shape + (1,) * (x.ndim - 1))
            carry = jax.tree.map(lambda c, f: jnp.where(expand(c), f, c), carry, fresh)
            carry = jax.tree.map(lambda old, new: old.at[split:].set(new), state.carry, carry)
        seats = Seats(env_state, new_slot, carry, wins, games, pool)
        info = {**info, "final_observation": self._flat(info["final_observation"]), "world_done": done}
        return (
            self._flat(obs),
            seats,
            self._flat(reward),
            self._per_agent(terminated),
            self._per_agent(truncated),
            info,
        )

    def _opponents(self, keys: jax.Array, envs: Any, slot: jax.Array, carry: Any, pool: Pool) -> tuple[Any, jax.Array]:
        """(carry, (worlds, seats) actions) of the opponents: the pool's slot where a game has one, the
        env's bots where it has none. Each side is computed only when some world needs it (one seed)."""
        worlds = slot.shape[0]
        zeros = jnp.zeros((worlds, self.seats), jnp.int32)

        def pooled() -> tuple[Any, jax.Array]:
            obs = jax.vmap(self.env.opponent_obs)(envs)
            out_carry, scores = grouped_apply(self.scores, pool.params, slot, obs, carry)
            if self.sampled:  # Gumbel-max from the env's key hash: a threefry call per segment cost more than the net
                u = jax.vmap(lambda k: self.env.uniform(k, ACT_SALT, scores[0].size))(keys).reshape(scores.shape)
                scores = scores - jnp.log(-jnp.log(jnp.clip(u, 1e-7, 1.0 - 1e-7)))
            return out_carry, jnp.argmax(scores, axis=-1).astype(jnp.int32)

        out_carry, from_pool = jax.lax.cond(jnp.any(slot >= 0), pooled, lambda: (carry, zeros))
        from_bots = jax.lax.cond(jnp.any(slot < 0), lambda: self._scripted(keys, envs, slot), lambda: zeros)
        return out_carry, jnp.where((slot >= 0)[:, None], from_pool, from_bots)

    def _scripted(self, keys: jax.Array, envs: Any, slot: jax.Array) -> jax.Array:
        """(worlds, seats) the scripted opponents' actions: the env's own bots, or each game's league kind
        (-1 - slot), each kind computed only when some game plays it (a frozen agent on its own views)."""
        if not self.league:
            return jax.vmap(self.env.opponent_actions)(keys, envs).astype(jnp.int32)
        agents = {}
        if any(map(is_agent, self.league)):
            if self.agents is None:
                raise ConfigError("selfplay.league names frozen agents: build the program with jaxrl.build")
            with jax.ensure_compile_time_eval():  # loaded once per process, outside the conds: concrete, not traced
                agents = self.agents(self.league)
        out = jnp.zeros((slot.shape[0], self.seats), jnp.int32)
        for k, kind in enumerate(self.league):
            plays = slot == -1 - k

            def moves(kind=kind):
                if is_agent(kind):
                    act, like = agents[kind]
                    obs = jax.vmap(lambda s: self.env.opponent_obs(s, like))(envs)
                    return act(obs.reshape(-1, *obs.shape[2:]), keys[0]).reshape(out.shape)
                return jax.vmap(lambda key, s: self.env.opponent_kind_actions(key, s, kind))(keys, envs)

            acts = jax.lax.cond(jnp.any(plays), moves, lambda: out)
            out = jnp.where(plays[:, None], acts.astype(jnp.int32), out)
        return out


class SelfPlayEnv:
    """The env as a self-play learner sees it: the env itself, batched as a `SelfPlayVector`."""

    def __init__(self, env: Any, scores: Any, sampled: bool, initial_carry: Any, settings: Any, agents: Any = None):
        self.base, self.scores, self.sampled, self.initial_carry, self.settings = (
            env,
            scores,
            sampled,
            initial_carry,
            settings,
        )
        self.agents = agents

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)

    def vectorized(self, num_envs: int) -> SelfPlayVector:
        return SelfPlayVector(
            self.base, num_envs, self.scores, self.sampled, self.initial_carry, self.settings, self.agents
        )


class SelfPlay:
    """An algorithm whose envs play a pool of its own past policies (the `Algorithm` protocol, delegating)."""

    def __init__(self, algo: Any, settings: Any):
        self.algo, self.settings = algo, settings
        self.num_updates, self.steps_per_update = algo.num_updates, algo.steps_per_update

    def __getattr__(self, name: str) -> Any:
        return getattr(self.algo, name)

    def init(self, key: jax.Array, env_params: Any = None) -> Any:
        runner = self.algo.init(key, env_params)
        kinds = max(1, len(self.settings.league))
        pool = Pool.empty(self.algo.policy_params(runner), self.settings.pool_size, kinds)
        return runner.replace(envs=runner.envs.replace(state=runner.envs.state.replace(pool=pool)))

    def update(self, runner: Any) -> tuple[Any, Any]:
        runner, stats = self.algo.update(runner)
        finite = stats.finite if stats.finite is not None else all_finite(stats.learner)
        seats = runner.envs.state
        wins, games = jnp.sum(seats.wins, axis=0), jnp.sum(seats.games, axis=0)
        pool = seats.pool.record(wins, games)
        n = pool.slots
        seats = seats.replace(wins=jnp.zeros_like(seats.wins), games=jnp.zeros_like(seats.games), pool=pool)
        runner = runner.replace(envs=runner.envs.replace(state=seats))
        score = lambda won, n: jnp.where(n > 0, 1.0 - won / jnp.maximum(n, 1.0), jnp.nan)  # the learner's
        played = jnp.sum(games[:n])
        against_pool = score(jnp.sum(wins[:n]), played)
        p = jnp.clip(against_pool, 0.01, 0.99)
        learner = {
            **stats.learner,
            "pool_filled": jnp.sum(pool.active).astype(jnp.float32),
            "pool_games": played,
            "pool_score": against_pool,
            "pool_rating": 400.0 * jnp.log10(p / (1.0 - p)),  # Elo points above the snapshots it met
            "bots_games": jnp.sum(games[n:]),
            "bots_score": score(jnp.sum(wins[n:]), jnp.sum(games[n:])),
        }
        for k, kind in enumerate(self.settings.league):  # each league member's games and the learner's score
            learner[f"league_{label(kind)}_games"] = games[n + k]
            learner[f"league_{label(kind)}_score"] = score(wins[n + k], games[n + k])
        return self._push(runner), stats.replace(learner=learner, finite=finite)

    def _push(self, runner: Any) -> Any:
        """The runner with its policy pushed into the pool after update max(start, 1), then every snapshot_every
        (never the initial weights)."""
        s = self.settings
        since = runner.update - max(s.start, 1)
        when = (since >= 0) & (since % s.snapshot_every == 0)
        seats = runner.envs.state
        in_use = jnp.any(seats.slot[:, None] == jnp.arange(seats.pool.slots)[None, :], axis=0)
        pool = seats.pool.push(self.algo.policy_params(runner), when, runner.update, in_use)
        return runner.replace(envs=runner.envs.replace(state=seats.replace(pool=pool)))


def wrap(factory: Any, cfg: Any, env: Any, env_params: Any, agents: Any = None) -> Any:
    """The algorithm `factory(cfg, env, env_params)` builds, playing a pool of itself when cfg.opponents is
    selfplay (the learner's own network, built once on the plain env, acts for the opponents); `agents`: the
    loader of the league's frozen agents (`SelfPlayVector`)."""
    if cfg.opponents != "selfplay":
        return factory(cfg, env, env_params)
    check_env(env, tuple(cfg.selfplay.league))
    plain = factory(cfg, env, env_params)
    settings = cfg.selfplay
    sampled = plain.sampled_scores and not settings.greedy
    sp_env = SelfPlayEnv(env, plain.action_scores(), sampled, plain.initial_carry, settings, agents)
    return SelfPlay(factory(cfg, sp_env, env_params), settings)
