"""Many snakes on one large open map (PufferLib Snake's setting), Battlesnake's rules, as a pure JAX env.

The small arena (envs/arena.py) keeps every cell's count-down and checks each rule over all
cells, which is cheapest on an 11x11 board and impossible on 640x360 with 256 snakes. Here
every per-step cost is per snake, never per cell:
- a cell keeps the snake whose head last entered it and the step it did (`stamp`); a snake's
  body is its cells stamped at or after its `cut` (its tail's step), so a tail follows by
  moving `cut` on, a dead body vanishes by setting `cut` past every stamp, and nothing on the
  board is cleared;
- head-to-head fights go through a scratch board (`claim`): scatter-max of lengths, then of
  ids, gathered back at each head, then zeroed at the same cells;
- a snake that dies is born again on a random free cell on the same step (another draw on the
  next step if that cell is taken), and eaten food is replaced on random free cells.
The world never resets: an episode is a window of `max_steps_in_episode` steps of one
continuing world (truncated, never terminated), so the value of the last observation is
bootstrapped, and the board is built once. The stamps' clock is int32: a world runs 2**31 steps.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from jaxrl.envs.arena import CHANNELS, SNAKE_COLOURS
from jaxrl.envs.base import Env
from jaxrl.envs.checks import COUNT, FINITE, INT32_MAX, check, check_int_setting, whole
from jaxrl.envs.kernels import fusion_boundary, pick
from jaxrl.envs.spaces import agents_box

OWNER = (1 << 13) - 1  # bits 0-12 of a cell's word: 1 + the snake whose head last entered it (0: none yet)
FOOD = 1 << 13
WALL = 1 << 14
LENGTH_SHIFT = 15  # bits 15-30: the snake's length when its head entered (read at heads only: current there)
MAX_LENGTH = (1 << 16) - 1
BIG = 1 << 24  # claim values: lengths below it, ids above it, ties at 2 * BIG
FOOD_DRAWS = 16  # food cells drawn per step to top the board back up to num_food


@struct.dataclass
class EnvState(environment.EnvState):
    word: jax.Array  # (cells,) int32 over the padded board: OWNER bits, FOOD, WALL (the border of view // 2 cells)
    stamp: jax.Array  # (cells,) int32, the step the cell's owner entered it
    claim: jax.Array  # (cells,) int32 scratch for head-to-head fights and births; all 0 between steps
    head: jax.Array  # (snakes,) int32 padded cell index (stale while dead)
    heading: jax.Array  # (snakes,) int32, 0 up, 1 right, 2 down, 3 left
    length: jax.Array  # (snakes,) int32
    health: jax.Array  # (snakes,) int32
    alive: jax.Array  # (snakes,) bool (False: died and waits for a free cell)
    cut: jax.Array  # (snakes,) int32, the oldest stamp of the body; INT32_MAX while dead
    food_count: jax.Array  # () int32
    deaths: jax.Array  # () int32, deaths in this episode window
    eaten: jax.Array  # () int32, food eaten in this episode window
    time: jax.Array  # () int32, steps since the world was built (the stamps' clock)


@struct.dataclass
class EnvParams(environment.EnvParams):
    max_steps_in_episode: int = 256  # an episode: a window of this many steps of the continuing world (truncated)
    start_length: int = 3  # a snake born: this many segments stacked on its cell
    max_health: int = 100  # health at birth and after eating; -1 per step, 0 starves (0 here: no starving)
    reward_food: float = 0.1
    reward_death: float = -1.0
    reward_step: float = 0.0


class OpenArena(Env):
    """`num_snakes` learning snakes on a `height x width` board, all moving at once, born again where they die.

    Rules: Battlesnake's standard moves, feeding and eliminations (see envs/arena.py: off the
        board, into a body cell that stays, head-to-head with one at least as long, starving when
        `max_health` > 0), except that the game never ends: a snake that dies is born again, the
        same step, `start_length` long on a random free cell (if the drawn cell is taken, it waits
        for the next step's draw), and food is topped back up to `num_food` on random free cells
        (up to 16 per step). A dead body leaves the board at once (PufferLib's leaves food: not here).
    Observation: per snake `(view, view, 7)` uint8, the arena's channels (own body, other bodies,
        other heads, heads at least as long, food, wall, health bar), centred on its head and turned
        so that it heads up; zeros while it waits to be born. Shape `(num_snakes, view, view, 7)` (one
        snake: no agent axis, as in the arena and the grid).
    Actions: per snake `Discrete(3)` (0 turn left, 1 straight on, 2 turn right), shape `(num_snakes,)`
        (a scalar for one snake); rewards likewise.
    Reward: per snake `reward_food` for eating, `reward_death` on dying, `reward_step` otherwise; 0 while waiting.
    Episodes: never terminated; truncated every `max_steps_in_episode` steps (the world goes on).
    Info: `score` (the live snakes' mean length), `deaths` and `eaten` in the episode window.
    """

    name = "arena_open"
    num_actions = 3

    BIRTH_SALT = 0x5EED_0006  # the cell a snake is born on; HEADING_SALT its heading, FOOD_SALT food cells
    HEADING_SALT = 0x5EED_0007
    FOOD_SALT = 0x5EED_0008

    def __init__(
        self, width: int = 640, height: int = 360, num_snakes: int = 256, num_food: int = 4096, view: int = 11
    ):
        super().__init__()
        check_int_setting("arena_open width", width, 8, 4096)
        check_int_setting("arena_open height", height, 8, 4096)
        if width * height > 1 << 22:
            raise ValueError(f"arena_open width x height must be at most {1 << 22} cells, got {width} x {height}")
        most = min(OWNER - 1, width * height // 8)
        eighth = f"{most} (an eighth of the cells, at most {OWNER - 1}) on {width} x {height}"
        check_int_setting("arena_open num_snakes", num_snakes, 1, most, eighth)
        most_food = width * height // 4
        check_int_setting("arena_open num_food", num_food, 0, most_food, f"{most_food} (a quarter of the cells)")
        if not isinstance(view, int) or isinstance(view, bool) or not 3 <= view <= 63 or view % 2 == 0:
            raise ValueError(f"arena_open view must be an odd integer from 3 to 63, got {view!r}")
        self.width, self.height, self.num_snakes, self.num_food, self.view = width, height, num_snakes, num_food, view
        self.num_agents = num_snakes
        self.half = view // 2
        self.side = width + 2 * self.half  # the padded board's row length
        self.num_cells = (height + 2 * self.half) * self.side
        self._steps = (-self.side, 1, self.side, -1)  # index offsets of up, right, down, left
        self._reading_order = jnp.arange(view * view, dtype=jnp.int32)

    @property
    def default_params(self) -> EnvParams:
        return EnvParams()

    def check_params(self, params: EnvParams) -> None:
        check(
            params,
            ("max_steps_in_episode", *COUNT),
            ("start_length", lambda x: 1 <= whole(x) <= 1000, "an integer from 1 to 1000"),
            ("max_health", lambda x: 0 <= whole(x), f"an integer from 0 (no starving) to {INT32_MAX}"),
            (("reward_food", "reward_death", "reward_step"), *FINITE),
        )

    def observation_space(self, params: EnvParams | None = None) -> spaces.Box:
        return agents_box((self.view, self.view, len(CHANNELS)), self.num_agents)

    # -- randomness and cells ------------------------------------------------------------

    def _draw_cells(self, key: jax.Array, salt: int, count: int) -> jax.Array:
        """(count,) int32 uniformly random padded indices of board cells (not the border)."""
        u = self.uniform(key, salt, count)
        flat = jnp.minimum((u * (self.width * self.height)).astype(jnp.int32), self.width * self.height - 1)
        return (flat // self.width + self.half) * self.side + flat % self.width + self.half

    @staticmethod
    def _table(per_snake: jax.Array, empty: int) -> jax.Array:
        """(snakes + 1,) per_snake indexed by a cell's OWNER bits (0: no snake -> empty)."""
        return jnp.concatenate([jnp.full((1,), empty, per_snake.dtype), per_snake])

    def _occupied(self, word: jax.Array, stamp: jax.Array, cut: jax.Array) -> jax.Array:
        """Whether cells with these words and stamps hold a body, for the snakes' `cut`s."""
        return stamp >= self._table(cut, INT32_MAX)[word & OWNER]

    # -- dynamics ------------------------------------------------------------------------

    @partial(jax.jit, static_argnames=("self",))
    def step(self, key: jax.Array, state: EnvState, action: jax.Array, params: EnvParams | None = None):
        """A step of the continuing world: never terminated, truncated every `max_steps_in_episode` steps
        (the world is not reset: the next observation is the final one)."""
        if params is None:
            params = self.default_params
        obs, state, reward, terminated, info = self.step_env(key, state, action, params)
        truncated = state.time % params.max_steps_in_episode == 0
        info = {**info, "terminated": terminated, "truncated": truncated, "final_observation": obs}
        window = jnp.where(truncated, 0, 1)
        state = state.replace(deaths=state.deaths * window, eaten=state.eaten * window)
        return obs, state, reward, terminated, truncated, info

    def step_env(self, key: jax.Array, state: EnvState, action: jax.Array, params: EnvParams):
        action = jnp.asarray(action, jnp.int32)
        if action.shape != (self.num_snakes,) and not (self.num_snakes == 1 and action.shape == ()):
            raise ValueError(
                f"arena_open with num_snakes={self.num_snakes} takes actions of shape ({self.num_snakes},)"
            )
        action = action.reshape(self.num_snakes)
        ids = jnp.arange(self.num_snakes, dtype=jnp.int32)
        nowhere = jnp.int32(self.num_cells)  # an index past the board: scatters drop it
        t1 = state.time + 1
        moving = state.alive
        direction = jnp.where(moving, (state.heading + action - 1) % 4, state.heading)
        target = jnp.where(moving, state.head + pick(self._steps, direction), state.head)
        # The bodies of this step before the new heads: every tail moves on one cell (a stacked tail
        # stays: cut already counts it), the dead hold nothing.
        cut = jnp.where(moving, jnp.maximum(state.cut, t1 + 1 - state.length), INT32_MAX)
        word, stamp = state.word[target], state.stamp[target]
        wall = (word & WALL) != 0
        eats = moving & ~wall & ((word & FOOD) != 0)
        bitten = moving & ~wall & self._occupied(word, stamp, cut)
        length = state.length + eats
        health = jnp.where(eats, params.max_health, state.health - 1)
        starves = moving & (params.max_health > 0) & (health <= 0)
        # Head-to-head: the longest claimant of a cell keeps it, unless another is as long.
        mover = moving & ~wall
        at = jnp.where(mover, target, nowhere)
        claim = state.claim.at[at].max(length, mode="drop")
        longest = mover & (claim[target] == length)
        claim = claim.at[jnp.where(longest, target, nowhere)].max(BIG + ids, mode="drop")
        top = longest & (claim[target] == BIG + ids)
        claim = claim.at[jnp.where(longest & ~top, target, nowhere)].max(2 * BIG, mode="drop")
        fought = claim[target]
        tied = fought == 2 * BIG
        # Zeroed with values read from the fight (claims are >= 0), so the read comes first and the
        # scratch board is updated in place (a constant 0 let XLA copy the board to reorder them).
        claim = claim.at[at].set(jnp.minimum(fought, 0), mode="drop")
        loses = mover & (~longest | tied)
        dies = moving & (wall | starves | bitten | loses)
        lives = moving & ~dies
        eaten_cells = jnp.sum(eats & top)  # one eater per food cell is its top claimant
        # The board: food under a dying eater is gone (feeding comes before eliminating), then the heads.
        board = state.word.at[jnp.where(eats & dies, target, nowhere)].set(0, mode="drop")
        board = board.at[jnp.where(lives, target, nowhere)].set(
            ids + 1 | (jnp.minimum(length, MAX_LENGTH) << LENGTH_SHIFT), mode="drop"
        )
        stamps = state.stamp.at[jnp.where(lives, target, nowhere)].set(t1, mode="drop")
        cut = jnp.where(lives, cut, INT32_MAX)
        # Births: every snake not alive now tries a random cell; free cells go to the highest id drawing them.
        cand = self._draw_cells(key, self.BIRTH_SALT, self.num_snakes)
        cw, cs = board[cand], stamps[cand]
        free = ((cw & FOOD) == 0) & ~self._occupied(cw, cs, cut)
        tries = ~lives & free
        claim = claim.at[jnp.where(tries, cand, nowhere)].max(ids + 1, mode="drop")
        drawn = claim[cand]
        born = tries & (drawn == ids + 1)
        claim = claim.at[jnp.where(tries, cand, nowhere)].set(jnp.minimum(drawn, 0), mode="drop")
        board = board.at[jnp.where(born, cand, nowhere)].set(
            ids + 1 | (jnp.minimum(params.start_length, MAX_LENGTH) << LENGTH_SHIFT), mode="drop"
        )
        stamps = stamps.at[jnp.where(born, cand, nowhere)].set(t1, mode="drop")
        u = self.uniform(key, self.HEADING_SALT, self.num_snakes)
        alive = lives | born
        head = jnp.where(lives, target, jnp.where(born, cand, state.head))
        heading = jnp.where(born, jnp.minimum((u * 4).astype(jnp.int32), 3), direction)
        length = jnp.where(born, params.start_length, length)
        health = jnp.where(born, params.max_health, health)
        cut = jnp.where(born, t1, cut)
        # Food: back up to num_food, on free cells drawn at random (a cell drawn twice counts once).
        food_count = state.food_count - eaten_cells
        spots = self._draw_cells(key, self.FOOD_SALT, FOOD_DRAWS)
        sw, ss = board[spots], stamps[spots]
        first = jnp.argmax(spots[:, None] == spots[None, :], axis=1) == jnp.arange(FOOD_DRAWS)
        ok = first & ((sw & FOOD) == 0) & ~self._occupied(sw, ss, cut)
        ok = ok & (jnp.cumsum(ok) <= self.num_food - food_count)
        board = board.at[jnp.where(ok, spots, nowhere)].set(FOOD, mode="drop")
        new_state = state.replace(
            word=board,
            stamp=stamps,
            claim=claim,
            head=head,
            heading=heading,
            length=length,
            health=health,
            alive=alive,
            cut=cut,
            food_count=food_count + jnp.sum(ok),
            deaths=state.deaths + jnp.sum(dies),
            eaten=state.eaten + jnp.sum(eats),
            time=t1,
        )
        reward = jnp.where(eats, params.reward_food, params.reward_step)
        reward = jnp.where(dies, params.reward_death, reward)
        reward = jnp.where(moving, reward, 0.0).astype(jnp.float32)
        live = jnp.maximum(jnp.sum(alive), 1)
        info = {
            "score": jnp.sum(jnp.where(alive, length, 0)).astype(jnp.float32) / live,
            "deaths": new_state.deaths,
            "eaten": new_state.eaten,
        }
        reward = reward[0] if self.num_snakes == 1 else reward
        return self.get_obs(new_state), new_state, reward, jnp.zeros((), bool), info

    def reset_env(self, key: jax.Array, params: EnvParams):
        """The world built: walls around, snakes and food on distinct random cells (a random affine
        permutation of the cells: a random unit coprime with their count, and a random offset)."""
        cells = self.width * self.height
        count = self.num_snakes + self.num_food
        most = min(cells, 4096, INT32_MAX // count)  # unit * i stays below 2**31
        units = np.array([a for a in range(1, most) if np.gcd(a, cells) == 1] or [1], np.int32)
        u = self.uniform(key, self.RESET_SALT, 2 + self.num_snakes)
        unit = jnp.asarray(units)[jnp.minimum((u[0] * len(units)).astype(jnp.int32), len(units) - 1)]
        offset = jnp.minimum((u[1] * cells).astype(jnp.int32), cells - 1)
        flat = (unit * jnp.arange(count, dtype=jnp.int32) + offset) % cells  # distinct (unit * i < 2**31)
        spot = (flat // self.width + self.half) * self.side + flat % self.width + self.half
        rows = np.arange(self.num_cells) // self.side
        cols = np.arange(self.num_cells) % self.side
        inside = (
            (rows >= self.half)
            & (rows < self.half + self.height)
            & (cols >= self.half)
            & (cols < self.half + self.width)
        )
        word = jnp.where(jnp.asarray(inside), 0, WALL).astype(jnp.int32)
        ids = jnp.arange(self.num_snakes, dtype=jnp.int32)
        start = jnp.minimum(params.start_length, MAX_LENGTH) << LENGTH_SHIFT
        word = word.at[spot[self.num_snakes :]].set(FOOD).at[spot[: self.num_snakes]].set(ids + 1 | start)
        state = EnvState(
            word=word,
            stamp=jnp.zeros(self.num_cells, jnp.int32),
            claim=jnp.zeros(self.num_cells, jnp.int32),
            head=spot[: self.num_snakes],
            heading=jnp.minimum((u[2:] * 4).astype(jnp.int32), 3),
            length=jnp.full(self.num_snakes, params.start_length, jnp.int32),
            health=jnp.full(self.num_snakes, params.max_health, jnp.int32),
            alive=jnp.ones(self.num_snakes, bool),
            cut=jnp.zeros(self.num_snakes, jnp.int32),
            food_count=jnp.int32(self.num_food),
            deaths=jnp.int32(0),
            eaten=jnp.int32(0),
            time=jnp.int32(0),
        )
        return self.get_obs(state), state

    def is_terminal(self, state: EnvState, params: EnvParams) -> jax.Array:
        return jnp.zeros((), bool)

    def is_truncated(self, state: EnvState, params: EnvParams) -> jax.Array:
        return state.time % params.max_steps_in_episode == 0

    # -- observation ----------------------------------------------------------------------

    def get_obs(self, state: EnvState, params: EnvParams | None = None, key: jax.Array | None = None) -> jax.Array:
        views = self.views(state)
        return views[0] if self.num_snakes == 1 else views

    def views(self, state: EnvState) -> jax.Array:
        """(num_snakes, view, view, 7) uint8: each snake's crop of the board (one window per snake), decoded
        to one byte per cell, turned so that it heads up, then a compare per channel."""
        rows, cols = state.head // self.side - self.half, state.head % self.side - self.half
        board = state.word.reshape(-1, self.side), state.stamp.reshape(-1, self.side)

        def crop(grid, r, c):
            return jax.lax.dynamic_slice(grid, (r, c), (self.view, self.view))

        word, stamp = (jax.vmap(crop, (None, 0, 0))(grid, rows, cols) for grid in board)
        owner = word & OWNER
        body = self._occupied(word, stamp, state.cut)
        mine = body & (owner == jnp.arange(1, self.num_snakes + 1)[:, None, None])
        head = body & ~mine & (stamp == state.time)  # heads entered (or were born) this step
        as_long = head & ((word >> LENGTH_SHIFT) >= state.length[:, None, None])  # a head's word holds its length
        code = (
            mine.astype(jnp.uint8)
            | ((body & ~mine & ~head).astype(jnp.uint8) << 1)
            | (head.astype(jnp.uint8) << 2)
            | (as_long.astype(jnp.uint8) << 3)
            | (((word & FOOD) != 0).astype(jnp.uint8) << 4)
            | (((word & WALL) != 0).astype(jnp.uint8) << 5)
        )
        # The codes pass a fusion boundary before the turns: fused in, each of the 7 channel bytes rebuilt
        # its cell's code four times.
        turned = [jnp.rot90(fusion_boundary(code), t, axes=(1, 2)) for t in range(4)]
        code = jnp.select([(state.heading == t)[:, None, None] for t in range(3)], turned[:3], turned[3])
        bar = (self._reading_order[None, :] < state.health[:, None]).reshape(-1, self.view, self.view)
        code = (code | (bar.astype(jnp.uint8) << 6)) * state.alive[:, None, None].astype(jnp.uint8)
        return (code[..., None] >> jnp.arange(len(CHANNELS), dtype=jnp.uint8)) & 1  # bit b -> channel b

    # -- pictures -------------------------------------------------------------------------

    def render_rgb(self, state: EnvState) -> jax.Array:
        """(height, width, 3) uint8, a pixel a cell: each snake in its colour (heads white), food red."""
        inner = (slice(self.half, self.half + self.height), slice(self.half, self.half + self.width))
        word = state.word.reshape(-1, self.side)[inner]
        stamp = state.stamp.reshape(-1, self.side)[inner]
        owner = word & OWNER
        body = self._occupied(word, stamp, state.cut)
        colours = jnp.array(SNAKE_COLOURS, jnp.uint8)[(jnp.maximum(owner, 1) - 1) % len(SNAKE_COLOURS)]
        picture = jnp.where(body[..., None], colours, jnp.uint8(24))
        picture = jnp.where((body & (stamp == state.time))[..., None], jnp.uint8(255), picture)
        return jnp.where(((word & FOOD) != 0)[..., None], jnp.array([235, 50, 50], jnp.uint8), picture)

    def caption(self, state: EnvState) -> str:
        alive, length = np.asarray(state.alive), np.asarray(state.length)
        return f"{int(alive.sum())} alive, longest {int(length[alive].max(initial=0))}, deaths {int(state.deaths)}"

    def bodies(self, state: EnvState) -> list[list[tuple[int, int]]]:
        """Each snake's body cells (row, col) on the board, oldest first (a stacked cell once); [] while
        dead. For tests: the stamps read back as the body list the rules describe."""
        word, stamp = np.asarray(state.word), np.asarray(state.stamp)
        cut, alive = np.asarray(state.cut), np.asarray(state.alive)
        out = []
        for k in range(self.num_snakes):
            cells = np.flatnonzero(((word & OWNER) == k + 1) & (stamp >= cut[k])) if alive[k] else []
            cells = sorted(cells, key=lambda c: stamp[c])
            out.append([(int(c // self.side - self.half), int(c % self.side - self.half)) for c in cells])
        return out


__all__ = ["RULES", "EnvParams", "EnvState", "OpenArena", "open_arena"]


RULES = ("battlesnake", "pufferlib")


def open_arena(
    width: int = 640,
    height: int = 360,
    num_snakes: int = 256,
    num_food: int = 4096,
    view: int = 11,
    rules: str = "battlesnake",
    max_length: int = 1024,
):
    """`env=arena_open`: the open arena under Battlesnake's rules (`OpenArena`) or PufferLib Snake's
    (`rules=pufferlib`: envs/arena_puffer.py, where `max_length` caps a snake's length as PufferLib's does)."""
    if rules == "pufferlib":
        from jaxrl.envs.arena_puffer import PufferArena

        return PufferArena(width, height, num_snakes, num_food, view, max_length)
    if rules != "battlesnake":
        raise ValueError(f"arena_open rules must be one of {', '.join(RULES)}, got {rules!r}")
    if max_length != 1024:
        raise ValueError(
            "arena_open max_length is a setting of rules=pufferlib (Battlesnake's snakes grow without a cap),"
            f" got {max_length!r}"
        )
    return OpenArena(width, height, num_snakes, num_food, view)
