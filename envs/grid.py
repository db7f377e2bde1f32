"""A resource-collection grid world (MettaGrid-like) for one or many agents, as a pure JAX gymnax 1.0 env.

Maps are kept as row bitmasks (one uint32 word per map row, bit `c` for column `c`), so moves,
collisions and the egocentric view are a few integer operations per agent; only the regrowth
timers are stored per cell. The observation is built a view row at a time, its four channels in
the byte lanes of one uint32 word, so each cell's four bytes are one shift and one mask.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from jaxrl.envs import controls
from jaxrl.envs.base import Env
from jaxrl.envs.checks import FINITE, INT32_MAX, check, check_int_setting, whole
from jaxrl.envs.kernels import hash32, mix, pick
from jaxrl.envs.spaces import agents_box


def materialize(x: jax.Array) -> jax.Array:
    """x (non-negative integers below 2**31 - 1), computed once into a buffer of its own.

    An identity, but XLA's CPU fusion counts an integer remainder as expensive and so does not
    fuse it into consumers that read an element more than once: they read the buffer instead of
    recomputing x for every element they write. It works per env under vmap, where
    `jaxrl.core.replay.materialize` (a one-trip while loop that stops all fusion) would become a
    batched loop; it does not stop fusion into consumers that read each element once.
    """
    return jax.lax.rem(x, jnp.asarray(2**31 - 1, x.dtype))


# Row and column offsets of the actions: 0 stay, 1 up, 2 right, 3 down, 4 left, 5 collect (no move).
DROW = (0, -1, 0, 1, 0, 0)
DCOL = (0, 0, 1, 0, -1, 0)
COLLECT = 5
CHANNELS = ("wall", "resource", "agent", "self")


@struct.dataclass
class EnvState(environment.EnvState):
    walls: jax.Array  # (size,) uint32, bit c of word r set where cell (r, c) is a wall
    sources: jax.Array  # (size,) uint32, cells where a resource grows
    present: jax.Array  # (size,) uint32, sources holding a unit now
    timer: jax.Array  # (size, size) int16, steps until a collected unit is back (0 where none is pending)
    row: jax.Array  # (agents,) int32
    col: jax.Array  # (agents,) int32
    inventory: jax.Array  # (agents,) int32, units collected this episode
    time: jax.Array  # () int32, steps since the reset
    next_walls: jax.Array  # (size,) uint32, the next episode's walls, redrawn a row per step
    next_sources: jax.Array  # (size,) uint32, the next episode's resource sources


@struct.dataclass
class EnvParams(environment.EnvParams):
    max_steps_in_episode: int = 256  # truncation: steps in one episode
    regrow_delay: int = 20  # steps until a collected resource is back
    reward_collect: float = 1.0  # reward for each unit collected
    reward_step: float = 0.0  # reward for every agent on every step
    wall_density: float = 0.15  # chance that a cell is a wall at reset
    resource_density: float = 0.1  # chance that a free cell is a resource source at reset


class GridWorld(Env):
    """Agents walk a `size x size` map with walls and collect resources that regrow; all agents act at once.

    Map: walls (`wall_density`) and resource sources (`resource_density` of the free cells) are
    drawn at every reset; agents start on distinct free cells. Cells beyond the border are walls.
    Observation: per agent `(view, view, 4)` uint8 (view 3, 5 or 7) centred on the agent, channels: 0 wall (and
        beyond the border), 1 resource present, 2 another agent, 3 self (the centre cell).
        With `num_agents=K > 1` every array gains a leading agent axis: `(K, view, view, 4)`.
    Actions: `Discrete(6)` per agent: 0 stay, 1 up (row-1), 2 right (col+1), 3 down (row+1),
        4 left (col-1), 5 collect the resource on the agent's own cell. With K agents, `(K,)`: one
        action per agent (`action_space` is then `AgentsDiscrete(6, K)`; a scalar is refused).
    Rewards: per agent, `reward_collect` per unit collected plus `reward_step` every step;
        `()` for one agent, `(K,)` for K.
    Conflicts: all agents move at once. A move fails (the agent stays) when its target is a
        wall, off the map, a cell another agent stands on at the start of the step (even one
        that moves away now: no following, no swaps), or a cell a lower-indexed agent also
        moves into (two agents heading for one free cell: the lower index gets it). Agents
        never share a cell, so no two agents can collect one resource.
    Regrowth: a collected source is empty for `regrow_delay` steps (at least 1), then holds a unit again.
    Termination: never. Truncation: `max_steps_in_episode` steps, at least `size` (the next
        episode's map is drawn a row per step during this one; `check_params` refuses fewer).
    Info: `score`, units the world's learning agents collected this episode (summed over them);
        with bots, `bot_score`, what the bots collected.
    Bots (`num_bots`, a constructor setting): scripted collectors that take agent slots after the
        learners (indices num_agents ..) and follow the same rules: each step a bot collects the unit
        underfoot, else steps toward the nearest unit present in its view (along the longer axis of
        the way, ties at random), else wanders at random. Learners see them as "another agent".
    """

    name = "grid"
    num_actions = 6

    START_SALT = 0x5EED_0003  # start cells; reset's maps hash the key with RESET_SALT, steps with STEP_SALT
    BOT_SALT = 0x5EED_0006  # the bots' wandering moves and tie-breaks

    def __init__(self, size: int = 8, num_agents: int = 1, view: int = 5, num_bots: int = 0):
        super().__init__()
        check_int_setting("grid size", size, 3, 24)
        if not isinstance(view, int) or isinstance(view, bool) or view not in (3, 5, 7):
            raise ValueError(f"grid view must be 3, 5 or 7, got {view!r}")
        check_int_setting("grid num_agents", num_agents, 1, size * size // 2, "size^2/2")
        check_int_setting("grid num_bots", num_bots, 0, size * size // 2 - num_agents, "size^2/2 - num_agents")
        self.size, self.num_agents, self.view, self.num_bots = size, num_agents, view, num_bots
        self.num_bodies = num_agents + num_bots  # learners first, then the scripted bots
        self._versus = False  # every body's action given (`versus`)
        self.half = view // 2
        full = (1 << size) - 1
        self._full_row = jnp.uint32(full)
        # Padded rows put map column c at bit c + half; the border bits read as walls.
        border = ((1 << (size + 2 * self.half)) - 1) & ~(full << self.half)
        self._border = jnp.uint32(border)
        self._rows = jnp.arange(size, dtype=jnp.int32)
        self._bits = jnp.arange(size, dtype=jnp.uint32)
        self._view_bits = jnp.arange(view, dtype=jnp.uint32)

    @property
    def default_params(self) -> EnvParams:
        return EnvParams()

    def check_params(self, params: EnvParams) -> None:
        check(
            params,
            (
                "max_steps_in_episode",
                lambda x: whole(x) >= self.size,
                f"an integer from size ({self.size}) to {INT32_MAX}: the next episode's map is drawn a row per step",
            ),
            ("regrow_delay", lambda x: 1 <= whole(x) <= 32767, "an integer from 1 to 32767"),
            (("wall_density", "resource_density"), lambda x: 0 <= float(x) <= 1, "in [0, 1]"),
            (("reward_collect", "reward_step"), *FINITE),
        )

    def observation_space(self, params: EnvParams | None = None) -> spaces.Box:
        return agents_box((self.view, self.view, len(CHANNELS)), self.num_agents)

    # -- helpers ----------------------------------------------------------------------
    # Under vmap, XLA's CPU fusion builds every output element of a kernel from scratch. The step
    # is therefore staged: moves, collects, agent rows and view words are each computed for all
    # agents at once from the previous stage's arrays and `materialize`d, so that no later element
    # recomputes them (unstaged, each of the 800 observation bytes of an 8-agent world redid the moves).

    def _lookup(self, rows: jax.Array, r: jax.Array) -> jax.Array:
        """rows[r] for (size,) row words and any shape of map rows `r` (0 off the map)."""
        inside = (r >= 0) & (r < self.size)
        return jnp.where(inside, rows[jnp.clip(r, 0, self.size - 1)], jnp.uint32(0))

    def _cell(self, rows: jax.Array, r: jax.Array, c: jax.Array) -> jax.Array:
        """Whether bit (r, c) of the (size,) row words is set, elementwise over r and c; False off the map."""
        inside = (c >= 0) & (c < self.size)
        bit = (self._lookup(rows, r) >> jnp.clip(c, 0, self.size - 1).astype(jnp.uint32)) & jnp.uint32(1)
        return inside & (bit == 1)

    def _pack(self, cells: jax.Array) -> jax.Array:
        """(size, size) bool -> (size,) uint32 row words: one OR-reduction over the columns (as one OR
        per column, each a strided read of the cells, the step was slower)."""
        bits = jnp.where(cells, jnp.uint32(1) << self._bits, jnp.uint32(0))
        return jax.lax.reduce(bits, jnp.uint32(0), jax.lax.bitwise_or, (cells.ndim - 1,))

    def _unpack(self, words: jax.Array) -> jax.Array:
        """(size,) uint32 row words -> (size, size) bool."""
        return ((words[:, None] >> self._bits) & jnp.uint32(1)) == 1

    def _agent_rows(self, row: jax.Array, col: jax.Array, which: jax.Array | None = None) -> jax.Array:
        """(size,) uint32 rows with the cells of the agents (those where `which` holds, if given).

        Up to 4 agents: every row looks at every agent. More: a flat bitboard first (cell i at
        bit i % 16 of word i // 16; 16 bits so that `materialize` applies), a few operations per
        agent and word, then each row is cut from its words by fixed shifts: on the 8x8 map the
        per-row form is the faster up to 4 agents and the slower with 8 (figures: docs/grid.md).
        """
        count = row.shape[0]
        if count <= 4:
            rows = jnp.zeros(self.size, jnp.uint32)
            for k in range(count):
                hit = self._rows == row[k]
                if which is not None:
                    hit = hit & which[k]
                rows = rows | jnp.where(hit, jnp.uint32(1) << col[k].astype(jnp.uint32), jnp.uint32(0))
            return materialize(rows)
        cell = (row * self.size + col).astype(jnp.uint32)
        words = []
        for w in range(-(-self.size * self.size // 16)):
            acc = jnp.uint32(0)
            for k in range(count):
                hit = (cell[k] >> 4) == w
                if which is not None:
                    hit = hit & which[k]
                acc = acc | jnp.where(hit, jnp.uint32(1) << (cell[k] & 15), jnp.uint32(0))
            words.append(acc)
        words = materialize(jnp.stack(words))
        # Row r starts at bit r * size of the board; piece j of it comes from word start // 16 + j.
        start = np.arange(self.size) * self.size
        rows = jnp.zeros(self.size, jnp.uint32)
        for j in range(-(-(self.size + 15) // 16) + 1):
            index, done = start // 16 + j, 16 * j - start % 16  # the row's bits before this piece
            use = (done < self.size) & (index < len(words))
            if not use.any():
                continue
            piece = words[np.minimum(index, len(words) - 1)]
            shifted = piece << np.maximum(done, 0).astype(np.uint32) if j else piece >> (start % 16).astype(np.uint32)
            rows = rows | jnp.where(use, shifted, jnp.uint32(0))
        return materialize(rows & self._full_row)

    # -- dynamics ---------------------------------------------------------------------

    def step_env(self, key: jax.Array, state: EnvState, action: jax.Array, params: EnvParams):
        action = jnp.asarray(action, jnp.int32)
        if self._versus:
            if action.shape != (self.num_bodies,):
                raise ValueError(
                    f"a versus grid takes every body's action, shape ({self.num_bodies},), got {action.shape}"
                )
        elif action.shape != (self.num_agents,) and not (self.num_agents == 1 and action.shape == ()):
            want = (
                "a scalar action (or shape (1,))" if self.num_agents == 1 else f"actions of shape ({self.num_agents},)"
            )
            raise ValueError(f"grid with num_agents={self.num_agents} takes {want}, got shape {action.shape}")
        else:
            action = action.reshape(self.num_agents)
            if self.num_bots:
                action = jnp.concatenate([action, self._collectors(key, state)])
        # All agents move at once (see the class docstring for the conflict rule). Cells are
        # numbered row * size + col, so each pairwise check is one comparison.
        to_row, to_col = state.row + pick(DROW, action), state.col + pick(DCOL, action)
        inside = (to_row >= 0) & (to_row < self.size) & (to_col >= 0) & (to_col < self.size)
        moving = (action >= 1) & (action <= 4)
        ok = moving & inside & ~self._cell(state.walls, to_row, to_col)
        now, target = state.row * self.size + state.col, to_row * self.size + to_col
        claim = materialize(jnp.where(ok, target, self.size * self.size))
        index = jnp.arange(self.num_bodies)
        for j in range(self.num_bodies):
            # The cell is held by agent j at the start of the step, or a lower index j claims it.
            ok = ok & (now[j] != target) & ((index <= j) | (claim[j] != target))
        cell = materialize(jnp.where(ok, target, now))
        row, col = cell // self.size, cell % self.size
        # Collect: the unit on the agent's own cell, if present. Agents hold distinct cells.
        gained = materialize(((action == COLLECT) & self._cell(state.present, row, col)).astype(jnp.int32))
        taken = self._agent_rows(row, col, gained == 1)  # (size,) rows of the units taken
        delay = jnp.clip(params.regrow_delay, 1, 32767).astype(jnp.int16)
        back = self._pack(state.timer == 1) & state.sources  # units whose delay ends this step
        timer = jnp.where(self._unpack(taken), delay, jnp.maximum(state.timer - 1, 0).astype(jnp.int16))
        reward = gained[: self.num_agents].astype(jnp.float32) * params.reward_collect + params.reward_step
        # One row of the next episode's map is redrawn per step: drawing the whole map beside every
        # step (auto-reset runs under vmap as a select) cost more than the step itself.
        redraw = (state.time % self.size).reshape(1)
        mixed = mix(key, self.STEP_SALT)
        new_walls = self._draw_rows(mixed, 0, params.wall_density, redraw)
        new_sources = self._draw_rows(mixed, 1, params.resource_density, redraw) & ~new_walls
        is_row = self._rows == redraw
        new_state = state.replace(
            row=row,
            col=col,
            inventory=state.inventory + gained,
            present=(state.present & ~taken) | back,
            timer=timer,
            time=state.time + 1,
            next_walls=jnp.where(is_row, new_walls, state.next_walls),
            next_sources=jnp.where(is_row, new_sources, state.next_sources),
        )
        info = {"score": jnp.sum(new_state.inventory[: self.num_agents])}
        if self.num_bots:
            info["bot_score"] = jnp.sum(new_state.inventory[self.num_agents :])
        reward = reward[0] if self.num_agents == 1 else reward
        return self.get_obs(new_state), new_state, reward, jnp.bool_(False), info

    # -- a person at the play page --------------------------------------------

    def action_names(self) -> tuple[str, ...]:
        return ("stay", "up", "right", "down", "left", "collect")

    def person_action(self, state: EnvState, seat: int, move: str | None) -> int:
        controls.check_move(move)
        if move in controls.DIRECTIONS:
            return 1 + controls.DIRECTIONS.index(move)
        return 5 if move == "collect" else 0

    def result_line(self, info: dict, names: list[str], you: int | None) -> str:
        return f"collected {int(np.asarray(info['score']))}"

    # -- opponents given from outside (jaxrl's self-play: a pool of past policies drives the bots) ----

    @property
    def opponent_slots(self) -> int:
        """The bots' bodies (after the learners')."""
        return self.num_bots

    def versus(self) -> GridWorld:
        """This grid taking every body's action, `(num_agents + num_bots,)`: the bots move as given."""
        made = GridWorld(self.size, self.num_agents, self.view, self.num_bots)
        made._versus = True
        return made

    def opponent_obs(self, state: EnvState, like: Any = None) -> jax.Array:
        """(num_bots, view, view, 4): what each bot sees, as a learner in its place would (its own view only)."""
        if like is not None and like.view != self.view:
            raise ValueError(f"grid opponents see the grid's own view ({self.view}), not {like.view}")
        return self.views(state, self.num_agents, self.num_bodies)

    def opponent_actions(self, key: jax.Array, state: EnvState) -> jax.Array:
        """(num_bots,) the scripted collectors' actions."""
        return self._collectors(key, state)

    @staticmethod
    def learner_result(info: dict) -> jax.Array:
        """An episode's result for the learners: 1 when they collected more than the bots, 0.5 level, else 0."""
        return (0.5 + 0.5 * jnp.sign(info["score"] - info["bot_score"])).astype(jnp.float32)

    def _collectors(self, key: jax.Array, state: EnvState) -> jax.Array:
        """(num_bots,) the scripted collectors' actions: collect the unit underfoot; else step toward the
        nearest unit present in the bot's view (Manhattan distance, ties at random; along the longer
        axis of the way); else wander (a random move)."""
        view, half = self.view, self.half
        row, col = state.row[self.num_agents :], state.col[self.num_agents :]
        window = jnp.uint32((1 << view) - 1)
        lanes = ((state.present << half)[None, :] >> col[:, None].astype(jnp.uint32)) & window  # (bots, size)
        at = row[:, None] + jnp.arange(view)[None, :] - half
        inside = (at >= 0) & (at < self.size)
        words = jnp.where(inside, jnp.take_along_axis(lanes, jnp.clip(at, 0, self.size - 1), axis=1), 0)
        seen = ((words[:, :, None] >> self._view_bits) & jnp.uint32(1)) == 1  # (bots, view, view)
        dr, dc = np.meshgrid(np.arange(view) - half, np.arange(view) - half, indexing="ij")
        u = self.uniform(key, self.BOT_SALT, self.num_bots * (view * view + 1)).reshape(self.num_bots, -1)
        cost = jnp.where(
            seen,
            jnp.asarray(np.abs(dr) + np.abs(dc), jnp.float32)[None] + 0.5 * u[:, :-1].reshape(-1, view, view),
            jnp.inf,
        )
        best = jnp.argmin(cost.reshape(self.num_bots, -1), axis=1)
        found = jnp.isfinite(jnp.min(cost.reshape(self.num_bots, -1), axis=1))
        to_r, to_c = best // view - half, best % view - half
        along_rows = jnp.abs(to_r) >= jnp.abs(to_c)
        toward = jnp.where(along_rows, jnp.where(to_r < 0, 1, 3), jnp.where(to_c > 0, 2, 4))
        wander = 1 + jnp.minimum((u[:, -1] * 4).astype(jnp.int32), 3)
        return jnp.where(found, jnp.where((to_r == 0) & (to_c == 0), COLLECT, toward), wander).astype(jnp.int32)

    def _draw_rows(self, mixed: jax.Array, salt: int, density: jax.Array, rows: jax.Array) -> jax.Array:
        """(len(rows),) uint32 words for those map rows, each cell set with probability `density`
        (rounded to 1/32), independently of every other cell, row, salt and key.

        Bit-sliced: five random words per row are the five bits of a number 0..31 for every
        cell of the row at once, compared with round(32 * density) by a word-wide less-than.
        """
        threshold = jnp.clip(jnp.round(density * 32), 0, 32).astype(jnp.uint32)
        # One full hash per row, then five planes from it by multiply-xorshift steps (cheap, and
        # XLA repeats this for every row it selects from).
        word = hash32(mixed ^ ((rows.astype(jnp.uint32) * jnp.uint32(8) + jnp.uint32(salt)) * jnp.uint32(0x9E3779B9)))
        less = jnp.zeros(rows.shape, jnp.uint32)
        equal = jnp.full(rows.shape, 0xFFFFFFFF, jnp.uint32)
        for bit in range(4, -1, -1):
            t = jnp.where((threshold >> bit) & 1 == 1, jnp.uint32(0xFFFFFFFF), jnp.uint32(0))
            word = word * jnp.uint32(0x2C1B3C6D) + jnp.uint32(0x297A2D39)
            p = word ^ (word >> 16)
            less = less | (equal & ~p & t)
            equal = equal & ~(p ^ t)
        return jnp.where(threshold >= 32, self._full_row, less & self._full_row)

    def _maps(self, mixed: jax.Array, params: EnvParams, salt: int) -> tuple[jax.Array, jax.Array]:
        """A whole map: (walls, sources) rows."""
        walls = self._draw_rows(mixed, salt, params.wall_density, self._rows)
        return walls, self._draw_rows(mixed, salt + 1, params.resource_density, self._rows) & ~walls

    def _start(self, key: jax.Array, walls, sources, next_walls, next_sources) -> EnvState:
        """A new episode on the given map: agents on distinct uniform cells, cleared of walls and sources."""
        n = self.size * self.size
        u = self.uniform(key, self.START_SALT, self.num_bodies)
        starts = jnp.minimum((u * n).astype(jnp.int32), n - 1)
        cells = []
        for k in range(self.num_bodies):  # linear probing past earlier agents' cells: distinct
            cell = starts[k]
            for _ in range(k):
                taken = jnp.any(jnp.stack([cell == other for other in cells]))
                cell = jnp.where(taken, (cell + 1) % n, cell)
            cells.append(cell)
        cell = jnp.stack(cells)
        row, col = cell // self.size, cell % self.size
        start = self._agent_rows(row, col)
        return EnvState(
            walls=walls & ~start,
            sources=sources & ~start,
            present=sources & ~start,
            timer=jnp.zeros((self.size, self.size), jnp.int16),
            row=row,
            col=col,
            inventory=jnp.zeros(self.num_bodies, jnp.int32),
            time=jnp.int32(0),
            next_walls=next_walls,
            next_sources=next_sources,
        )

    def reset_env(self, key: jax.Array, params: EnvParams):
        mixed = mix(key, self.RESET_SALT)
        state = self._start(key, *self._maps(mixed, params, 0), *self._maps(mixed, params, 2))
        return self.get_obs(state), state

    def autoreset_state(self, key: jax.Array, stepped: EnvState, params: EnvParams) -> EnvState:
        """The next episode plays the map drawn during this one (see `step_env`); its own next map starts
        as a copy and is redrawn a row per step."""
        return self._start(key, stepped.next_walls, stepped.next_sources, stepped.next_walls, stepped.next_sources)

    def is_terminal(self, state: EnvState, params: EnvParams) -> jax.Array:
        return jnp.bool_(False)

    def is_truncated(self, state: EnvState, params: EnvParams) -> jax.Array:
        return state.time >= params.max_steps_in_episode

    # -- observation ----------------------------------------------------------------------

    def get_obs(self, state: EnvState, params: EnvParams | None = None, key: jax.Array | None = None) -> jax.Array:
        obs = self.views(state, 0, self.num_agents)
        return obs[0] if self.num_agents == 1 else obs

    def views(self, state: EnvState, first: int, stop: int) -> jax.Array:
        """(stop - first, view, view, 4): the views of bodies first .. stop - 1 (learners, then bots)."""
        view, half = self.view, self.half
        row, col = materialize(state.row), materialize(state.col)
        agents = self._agent_rows(row, col)  # learners and bots alike are "another agent" to a viewer
        row, col = row[first:stop], col[first:stop]  # the viewers
        # 1. Every map row cut to each agent's view columns, the channels in byte lanes: bits j of
        #    lane ch is cell (m, col + j - half) of channel ch. Padded words put column c at bit c + half.
        shift = col[:, None].astype(jnp.uint32)  # (agents, 1)
        window = jnp.uint32((1 << view) - 1)
        lanes = (  # (agents, size); not materialized: the gather below computes only the rows it reads
            ((((state.walls << half) | self._border)[None, :] >> shift) & window)
            | ((((state.present << half)[None, :] >> shift) & window) << 8)
            | ((((agents << half)[None, :] >> shift) & window) << 16)
        )
        # 2. View row i of agent k is map row row[k] + i - half (all wall beyond the map).
        at = row[:, None] + jnp.arange(view)[None, :] - half  # (agents, view)
        inside = (at >= 0) & (at < self.size)
        words = jnp.where(inside, jnp.take_along_axis(lanes, jnp.clip(at, 0, self.size - 1), axis=1), window)
        # The centre cell is the viewer: alone in the self lane, and not "another agent".
        centre = jnp.where(jnp.arange(view) == half, jnp.uint32(1 << half), jnp.uint32(0))  # (view,)
        # 3. Each view row's cells: four channel bytes per cell.
        return self.expand_view_words(materialize((words & ~(centre << 16)) | (centre << 24)))

    def expand_view_words(self, words: jax.Array) -> jax.Array:
        """(agents, view) uint32 view-row words -> (agents, view, view, 4) uint8 observations.

        Bit j of byte lane ch is cell j of channel ch, so each cell's four bytes are one shift and
        one mask (`bench/parts/env.py` times this alone as the floor of the multi-agent step).
        """
        cells = (words[:, :, None] >> self._view_bits) & jnp.uint32(0x01010101)  # (agents, view, view)
        return jax.lax.bitcast_convert_type(cells, jnp.uint8)  # little-endian lanes: channel ch is byte ch

    # -- tests and pictures ------------------------------------------------------------

    def make_state(self, rows: list[str], timer: dict[tuple[int, int], int] | None = None, time: int = 0) -> EnvState:
        """A state from a picture: `#` wall, `R` resource source, `0`-`9` agents (index), `.` empty.

        An agent may stand on a source: `timer` sets the steps until the resource at a cell is
        back (default 0: present).
        """
        if len(rows) != self.size or any(len(line) != self.size for line in rows):
            raise ValueError(f"the picture must be {self.size} rows of {self.size} characters")
        walls, sources = np.zeros((self.size, self.size), bool), np.zeros((self.size, self.size), bool)
        agents: dict[int, tuple[int, int]] = {}
        for r, line in enumerate(rows):
            for c, ch in enumerate(line):
                walls[r, c] = ch == "#"
                sources[r, c] = ch == "R"
                if ch.isdigit():
                    agents[int(ch)] = (r, c)
        if sorted(agents) != list(range(self.num_bodies)):
            raise ValueError(f"the picture must place agents 0..{self.num_bodies - 1} (learners, then bots)")
        ticks = np.zeros((self.size, self.size), np.int32)
        for (r, c), t in (timer or {}).items():
            sources[r, c], ticks[r, c] = True, t
        pack = lambda m: jnp.array(
            [sum(1 << c for c in range(self.size) if m[r, c]) for r in range(self.size)], jnp.uint32
        )
        return EnvState(
            walls=pack(walls),
            sources=pack(sources),
            present=pack(sources & (ticks == 0)),
            timer=jnp.array(ticks, jnp.int16),
            row=jnp.array([agents[k][0] for k in range(self.num_bodies)], jnp.int32),
            col=jnp.array([agents[k][1] for k in range(self.num_bodies)], jnp.int32),
            inventory=jnp.zeros(self.num_bodies, jnp.int32),
            time=jnp.int32(time),
            next_walls=pack(walls),
            next_sources=pack(sources),
        )

    def render_text(self, state: EnvState) -> str:
        """The map as text for a terminal, in `make_state`'s letters: `#` wall, `R` a unit present,
        `0`-`9` agents (`@` from the eleventh on), `.` empty, inside a frame."""
        walls, present = np.asarray(self._unpack(state.walls)), np.asarray(self._unpack(state.present))
        chars = np.full((self.size, self.size), ".", dtype="<U1")
        chars[walls], chars[present] = "#", "R"
        for k, (r, c) in enumerate(zip(np.asarray(state.row).tolist(), np.asarray(state.col).tolist())):
            chars[r, c] = str(k) if k < 10 else "@"
        edge = "+" + "-" * self.size + "+"
        return "\n".join([edge, *("|" + "".join(row) + "|" for row in chars), edge])

    def render_rgb(self, state: EnvState) -> jax.Array:
        """(size, size, 3) uint8 picture: grey walls, gold resources, blue learners (agent 0 brighter), red bots."""
        walls = self._unpack(state.walls)[..., None]
        present = self._unpack(state.present)[..., None]
        agents = self._unpack(self._agent_rows(state.row[: self.num_agents], state.col[: self.num_agents]))[..., None]
        first = ((self._rows[:, None] == state.row[0]) & (self._rows[None, :] == state.col[0]))[..., None]
        img = jnp.zeros((self.size, self.size, 3), jnp.uint8)
        img = jnp.where(walls, jnp.array([110, 110, 110], jnp.uint8), img)
        img = jnp.where(present, jnp.array([230, 190, 40], jnp.uint8), img)
        if self.num_bots:
            bots = self._unpack(self._agent_rows(state.row[self.num_agents :], state.col[self.num_agents :]))
            img = jnp.where(bots[..., None], jnp.array([230, 90, 60], jnp.uint8), img)
        img = jnp.where(agents, jnp.array([60, 110, 230], jnp.uint8), img)
        return jnp.where(first, jnp.array([120, 200, 255], jnp.uint8), img)


__all__ = ["CHANNELS", "EnvParams", "EnvState", "GridWorld"]
