"""Many snakes on one large open map (PufferLib Snake's setting), Battlesnake-style rules, as a pure JAX env.

The small arena (envs/arena.py) keeps every cell's count-down and checks each rule over all
cells, which is cheapest on an 11x11 board and impossible on 640x360 with 256 snakes. Here
every per-step cost is per snake, never per cell:
- the board is two bytes a cell: what lies there (empty, food, wall, a head, or a body cell that
  names the way to the next cell toward its head) in the low 3 bits, so a tail follows by reading
  where its cell points, and a tag in the other 13 (the snake a body cell belongs to, a head's
  length), so a view is one gather from one board, its cells read already turned;
- head-to-head fights go through a scratch board (`claim`): scatter-max of lengths, then of
  ids, gathered back at each head, then zeroed at the same cells;
- a dead body is cleared by walking it from its tail, every dying snake at once, a cell a pass;
- a snake that dies is born again on a random free cell on the same step (another draw on the
  next step if that cell is taken), and eaten food is replaced on random free cells.
Many worlds step as one flat board (envs/flat.py), through the step's skeleton both open arenas
share (envs/open_world.py). The world never resets: an episode is a window of `max_steps_in_episode`
steps of one continuing world (truncated, never terminated), so the value of the last observation
is bootstrapped, and the board is built once.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment

from jaxrl.envs.arena import SNAKE_COLOURS
from jaxrl.envs.checks import COUNT, FINITE, INT32_MAX, check, check_int_setting, whole
from jaxrl.envs.flat import distinct_cells
from jaxrl.envs.kernels import fusion_boundary, pick
from jaxrl.envs.open_world import FlatSnakes, Moved, OpenWorld, check_board, check_view

EMPTY, FOOD, WALL = 0, 1, 2  # a cell's kind; BODY + d: a body cell whose next cell toward the head is way d
BODY = 3
HEAD = BODY + 4
KIND = 7  # a cell's low 3 bits: its kind; the 13 above (TAG): its tag
TAG = 3
OWNER = (1 << 13) - 1  # a body cell's tag: 1 + its snake's number, at most this
MAX_LENGTH = OWNER  # a head's tag: its snake's length, at most this (the views compare lengths up to it)
BIG = 1 << 24  # claim values: lengths below it, ids above it, ties at 2 * BIG
FOOD_DRAWS = 16  # food cells drawn per step to top the board back up to num_food
# The observation: a code a cell, what lies there (below) plus CLASSES if the health bar covers it.
SEEN_EMPTY, SEEN_MINE, SEEN_BODY, SEEN_HEAD, SEEN_LONGER, SEEN_FOOD, SEEN_WALL = range(7)
CLASSES = 7
CODES = 2 * CLASSES


@struct.dataclass
class EnvState(environment.EnvState):
    grid: jax.Array  # (cells,) uint16 over the padded board (a border of view // 2 wall cells): kind | tag << TAG
    claim: jax.Array  # (cells,) int32 scratch for head-to-head fights and births; all 0 between steps
    head: jax.Array  # (snakes,) int32 padded cell index (stale while dead)
    tail: jax.Array  # (snakes,) int32 padded cell index of the oldest body cell
    stack: jax.Array  # (snakes,) int32 segments stacked on the tail cell beyond the first (birth, eating)
    heading: jax.Array  # (snakes,) int32, 0 up, 1 right, 2 down, 3 left
    length: jax.Array  # (snakes,) int32
    health: jax.Array  # (snakes,) int32
    alive: jax.Array  # (snakes,) bool (False: died and waits for a free cell)
    food_count: jax.Array  # () int32
    deaths: jax.Array  # () int32, deaths in this episode window
    eaten: jax.Array  # () int32, food eaten in this episode window
    time: jax.Array  # () int32, steps since the world was built


@struct.dataclass
class EnvParams(environment.EnvParams):
    max_steps_in_episode: int = 256  # an episode: a window of this many steps of the continuing world (truncated)
    start_length: int = 3  # a snake born: this many segments stacked on its cell
    max_health: int = 100  # health at birth and after eating; -1 per step, 0 starves (0 here: no starving)
    reward_food: float = 0.1
    reward_death: float = -1.0
    reward_step: float = 0.0


class OpenArena(OpenWorld):
    """`num_snakes` learning snakes on a `height x width` board, all moving at once, born again where they die.

    Rules: Battlesnake-style moves, feeding and eliminations as arena-v1 played them (off the
        board, into a body cell that stays, head-to-head with one at least as long, starving when
        `max_health` > 0; all judged in one pass, 3 relative moves: not the official engine's two
        passes and 4 moves, which `env=arena` plays since arena-v2), except that the game never
        ends: a snake that dies is born again, the same step, `start_length` long on a random free
        cell (if the drawn cell is taken, it waits for the next step's draw), and food is topped
        back up to `num_food` on random free cells (up to 16 per step). A dead body leaves the board
        at once (PufferLib's leaves food: not here).
    Observation: per snake `(view, view)` uint8, one code a cell, centred on its head and turned so
        that it heads up: what lies there (0 empty, 1 its own body, 2 another's body, 3 another's
        head, 4 another's head at least as long (lengths compared up to 8191), 5 food, 6 wall), plus
        7 where its health bar covers the cell (the first `health` cells in reading order); zeros
        while it waits to be born. Networks one-hot the 14 codes (`observation_codes`). Shape `(num_snakes, view, view)`
        (one snake: no agent axis, as in the arena and the grid).
    Actions: per snake `Discrete(3)` (0 turn left, 1 straight on, 2 turn right), shape `(num_snakes,)`
        (a scalar for one snake); rewards likewise.
    Reward: per snake `reward_food` for eating, `reward_death` on dying, `reward_step` otherwise; 0 while waiting.
    Episodes: never terminated; truncated every `max_steps_in_episode` steps (the world goes on).
    Info: `score` (the live snakes' mean length), `deaths` and `eaten` in the episode window.
    """

    num_actions = 3
    rules = "battlesnake"
    observation_codes = CODES  # a cell is one of this many codes: networks one-hot it

    BIRTH_SALT = 0x5EED_0006  # the cell a snake is born on; HEADING_SALT its heading, FOOD_SALT food cells
    HEADING_SALT = 0x5EED_0007
    FOOD_SALT = 0x5EED_0008

    def __init__(
        self, width: int = 640, height: int = 360, num_snakes: int = 256, num_food: int = 4096, view: int = 11
    ):
        super().__init__()
        check_board(width, height, 8)
        most = min(OWNER - 1, width * height // 8)
        eighth = f"{most} (an eighth of the cells, at most {OWNER - 1}) on {width} x {height}"
        check_int_setting("arena_open num_snakes", num_snakes, 1, most, eighth)
        most_food = width * height // 4
        check_int_setting("arena_open num_food", num_food, 0, most_food, f"{most_food} (a quarter of the cells)")
        check_view(view)
        self.width, self.height, self.num_snakes, self.num_food, self.view = width, height, num_snakes, num_food, view
        self.num_agents = num_snakes
        self.half = view // 2
        self.side = width + 2 * self.half  # the padded board's row length
        self.rows = height + 2 * self.half
        self.num_cells = self.rows * self.side
        self._steps = (-self.side, 1, self.side, -1)  # index offsets of up, right, down, left
        self._reading_order = jnp.arange(view * view, dtype=jnp.int32)
        self._centre = jnp.asarray(np.arange(view * view) == view * view // 2)
        # For each heading, each cell of the turned view (np.rot90 of the crop by the heading) as an offset
        # from the head on the padded board: cell (i, j) lies (i - half) ways up and (j - half) ways right.
        i, j = np.divmod(np.arange(view * view), view)
        up, right = np.array([self.side, -1, -self.side, 1]), np.array([1, self.side, -1, -self.side])
        self._offsets = (up[:, None] * (i - self.half) + right[:, None] * (j - self.half)).astype(np.int32)
        r, c = np.meshgrid(np.arange(self.rows), np.arange(self.side), indexing="ij")
        inside = (r >= self.half) & (r < self.half + height) & (c >= self.half) & (c < self.half + width)
        self._walls = np.where(inside, EMPTY, WALL).astype(np.uint16).reshape(-1)

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

    def _draw_cells(self, key: jax.Array, salt: int, count: int) -> jax.Array:
        """(count,) int32 uniformly random padded indices of board cells (not the border)."""
        u = self.uniform(key, salt, count)
        flat = jnp.minimum((u * (self.width * self.height)).astype(jnp.int32), self.width * self.height - 1)
        return (flat // self.width + self.half) * self.side + flat % self.width + self.half

    @staticmethod
    def _cell(kind, tag) -> jax.Array:
        """A board cell: `kind` in the low bits, `tag` (at most OWNER) above."""
        tag = jnp.minimum(jnp.asarray(tag, jnp.int32), OWNER)
        return (jnp.asarray(kind, jnp.int32) | tag << TAG).astype(jnp.uint16)

    # -- dynamics ------------------------------------------------------------------------

    def _move(self, keys, state, action, params, snakes: FlatSnakes) -> Moved:
        """Battlesnake's rules for every snake of W worlds on their flat board (`OpenWorld._step_worlds`)."""
        n, cells, worlds = self.num_snakes, self.num_cells, snakes.worlds
        ids, base, nowhere = snakes.ids, snakes.base, snakes.nowhere
        flat, per_snake, per_world = snakes.flat, snakes.per_snake, snakes.per_world
        grid_0, claim_0 = flat(state.grid), flat(state.claim)
        head_0, tail_0, stack_0 = flat(state.head) + base, flat(state.tail) + base, flat(state.stack)
        heading_0, length_0, health_0 = flat(state.heading), flat(state.length), flat(state.health)
        moving = flat(state.alive)
        max_health, start_length = per_snake(params.max_health), per_snake(params.start_length)
        direction = jnp.where(moving, (heading_0 + action - 1) % 4, heading_0)
        target = jnp.where(moving, head_0 + pick(self._steps, direction), head_0)
        # Tails first: one not stacked leaves its cell (before any head looks), a stacked one stays.
        vacate = moving & (stack_0 == 0)
        solo = tail_0 == head_0  # one distinct cell: it points nowhere yet, the tail follows the head
        at_tail = grid_0[tail_0]
        way = jnp.where(solo, direction, (at_tail & KIND).astype(jnp.int32) - BODY)
        next_tail = jnp.where(solo, target, tail_0 + pick(self._steps, way))
        grid = grid_0.at[jnp.where(vacate, tail_0, nowhere)].set(jnp.minimum(at_tail, EMPTY), mode="drop")
        stack = jnp.where(moving & (stack_0 > 0), stack_0 - 1, stack_0)
        tile = grid[target] & KIND
        wall = tile == WALL
        eats = moving & (tile == FOOD)
        bitten = moving & (tile >= BODY)
        length = length_0 + eats
        health = jnp.where(eats, max_health, health_0 - 1)
        starves = moving & (max_health > 0) & (health <= 0)
        # Head-to-head: the longest claimant of a cell keeps it, unless another is as long.
        mover = moving & ~wall
        at = jnp.where(mover, target, nowhere)
        claim = claim_0.at[at].max(length, mode="drop")
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
        eaten_cells = per_world(eats & top).sum(1)  # one eater per food cell is its top claimant
        # The board: food under a dying eater is gone (feeding comes before eliminating), the dead
        # bodies are cleared, then the necks point at the new heads.
        grid = grid.at[jnp.where(eats & dies, target, nowhere)].set(EMPTY, mode="drop")
        start = jnp.where(vacate, next_tail, tail_0)
        grid = self._clear_bodies(grid, start, head_0, length_0, dies & ~(vacate & solo), nowhere)
        neck = jnp.where(lives & ~(vacate & solo), head_0, nowhere)  # the old head, unless it was the tail
        grid = grid.at[neck].set(self._cell(BODY + direction, ids + 1), mode="drop")
        grid = grid.at[jnp.where(lives, target, nowhere)].set(self._cell(HEAD, length), mode="drop")
        tail = jnp.where(vacate, next_tail, tail_0)
        stack = jnp.where(eats, stack + 1, stack)
        # Births: every snake not alive now tries a random cell; free cells go to the highest id drawing them.
        cand = flat(jax.vmap(self._draw_cells, (0, None, None))(keys, self.BIRTH_SALT, n)) + base
        tries = ~lives & (grid[cand] == EMPTY)
        claim = claim.at[jnp.where(tries, cand, nowhere)].max(ids + 1, mode="drop")
        drawn = claim[cand]
        born = tries & (drawn == ids + 1)
        claim = claim.at[jnp.where(tries, cand, nowhere)].set(jnp.minimum(drawn, 0), mode="drop")
        grid = grid.at[jnp.where(born, cand, nowhere)].set(self._cell(HEAD, start_length), mode="drop")
        u = flat(jax.vmap(self.uniform, (0, None, None))(keys, self.HEADING_SALT, n))
        alive = lives | born
        head = jnp.where(lives, target, jnp.where(born, cand, head_0))
        tail = jnp.where(born, cand, tail)
        stack = jnp.where(born, start_length - 1, stack)
        heading = jnp.where(born, jnp.minimum((u * 4).astype(jnp.int32), 3), direction)
        length = jnp.where(born, start_length, length)
        health = jnp.where(born, max_health, health)
        # Food: back up to num_food, on free cells drawn at random (a cell drawn twice counts once).
        food_count = state.food_count - eaten_cells
        spots = jax.vmap(self._draw_cells, (0, None, None))(keys, self.FOOD_SALT, FOOD_DRAWS)  # (W, FOOD_DRAWS)
        first = jnp.argmax(spots[:, :, None] == spots[:, None, :], axis=2) == jnp.arange(FOOD_DRAWS)
        spots = spots + jnp.arange(worlds, dtype=jnp.int32)[:, None] * cells
        ok = first & (grid[spots] == EMPTY)
        ok = ok & (jnp.cumsum(ok, axis=1) <= (self.num_food - food_count)[:, None])
        grid = grid.at[jnp.where(ok, spots, nowhere)].set(FOOD, mode="drop")
        stepped = state.replace(
            grid=grid.reshape(worlds, cells),
            claim=claim.reshape(worlds, cells),
            head=per_world(head - base),
            tail=per_world(tail - base),
            stack=per_world(stack),
            heading=per_world(heading),
            length=per_world(length),
            health=per_world(health),
            alive=per_world(alive),
            food_count=food_count + ok.sum(1),
        )
        reward = jnp.where(eats, per_snake(params.reward_food), per_snake(params.reward_step))
        reward = jnp.where(dies, per_snake(params.reward_death), reward)
        reward = jnp.where(moving, reward, 0.0).astype(jnp.float32)
        obs = self._views(grid, head, heading, length, health, alive, worlds)
        return Moved(state=stepped, reward=reward, dies=dies, eats=eats, alive=alive, length=length, obs=obs)

    def _clear_bodies(self, grid, start, head, length, dying, nowhere):
        """The bodies of the dying cleared, each walked from `start` (its tail) to `head` by the way its cells
        point: every dying snake at once, one cell each per pass."""

        def walk(carry):
            grid, at, going, left = carry
            code = grid[jnp.where(going, at, 0)]
            way = (code & KIND).astype(jnp.int32) - BODY
            # EMPTY written as a value read from the cells, so the read comes first and the board is
            # updated in place (a constant let XLA copy the board twice a pass).
            grid = grid.at[jnp.where(going, at, nowhere)].set(jnp.minimum(code, EMPTY), mode="drop")
            # `left` bounds a walk by the body's length, so a broken chain could never loop.
            going = going & (at != head) & (left > 1)
            return grid, at + pick(self._steps, jnp.clip(way, 0, 3)), going, left - 1

        grid, *_ = jax.lax.while_loop(lambda c: jnp.any(c[2]), walk, (grid, start, dying, length))
        return grid

    def reset_env(self, key: jax.Array, params: EnvParams):
        """The world built: walls around, snakes and food on distinct random cells (envs/flat.py)."""
        n = self.num_snakes
        u = self.uniform(key, self.RESET_SALT, 2 + n)
        flat = distinct_cells(u[:2], self.width * self.height, n + self.num_food)
        spot = (flat // self.width + self.half) * self.side + flat % self.width + self.half
        grid = jnp.asarray(self._walls).at[spot[n:]].set(FOOD).at[spot[:n]].set(self._cell(HEAD, params.start_length))
        state = EnvState(
            grid=grid,
            claim=jnp.zeros(self.num_cells, jnp.int32),
            head=spot[:n],
            tail=spot[:n],
            stack=jnp.full(n, params.start_length - 1, jnp.int32),
            heading=jnp.minimum((u[2:] * 4).astype(jnp.int32), 3),
            length=jnp.full(n, params.start_length, jnp.int32),
            health=jnp.full(n, params.max_health, jnp.int32),
            alive=jnp.ones(n, bool),
            food_count=jnp.int32(self.num_food),
            deaths=jnp.int32(0),
            eaten=jnp.int32(0),
            time=jnp.int32(0),
        )
        return self.get_obs(state), state

    # -- observation ----------------------------------------------------------------------

    def views(self, state: EnvState) -> jax.Array:
        """(num_snakes, view, view) uint8: each snake's turned crop, one code a cell (zeros while waiting)."""
        s = state
        return self._views(s.grid, s.head, s.heading, s.length, s.health, s.alive, 1)[0]

    def _views(self, grid, head, heading, length, health, alive, worlds):
        """(W, num_snakes, view, view) codes over W flat boards at flat-board heads: each snake's cells read
        already turned (one gather at its heading's offsets from its head), then a code a cell. The offsets
        are computed into a buffer first: fused into the gather they were recomputed per cell, slower on the
        CPU, as were a crop turned by a second gather and rot90s selected by heading."""
        n = self.num_snakes
        at = fusion_boundary(head[:, None] + jnp.asarray(self._offsets)[heading])
        cell = grid.at[at].get(mode="promise_in_bounds")  # heads are inside the walls, offsets within the border
        g, tg = cell & KIND, (cell >> TAG).astype(jnp.int32)
        me = jnp.tile(jnp.arange(1, n + 1, dtype=jnp.int32), worlds)[:, None]
        body = g >= BODY
        head_cell = g == HEAD
        # A head's tag is its length: one's own head is the centre cell, every other head another's.
        mine = body & jnp.where(head_cell, self._centre[None, :], tg == me)
        at_head = head_cell & ~mine
        longer = tg >= jnp.minimum(length, MAX_LENGTH)[:, None]
        seen = jnp.where(g == FOOD, SEEN_FOOD, jnp.where(g == WALL, SEEN_WALL, SEEN_EMPTY))
        seen = jnp.where(body, SEEN_BODY, seen)
        seen = jnp.where(at_head, jnp.where(longer, SEEN_LONGER, SEEN_HEAD), seen)
        code = jnp.where(mine, SEEN_MINE, seen).astype(jnp.uint8)
        bar = self._reading_order[None, :] < health[:, None]
        code = (code + bar.astype(jnp.uint8) * CLASSES) * alive[:, None].astype(jnp.uint8)
        return code.reshape(worlds, n, self.view, self.view)

    # -- pictures -------------------------------------------------------------------------

    def render_rgb(self, state: EnvState) -> jax.Array:
        """(height, width, 3) uint8, a pixel a cell: each snake in its colour (heads white), food red."""
        inner = (slice(self.half, self.half + self.height), slice(self.half, self.half + self.width))
        word = state.grid.reshape(self.rows, self.side)[inner]
        grid, owner = word & KIND, (word >> TAG).astype(jnp.int32)  # a head's tag: drawn white
        colours = jnp.array(SNAKE_COLOURS, jnp.uint8)[(jnp.maximum(owner, 1) - 1) % len(SNAKE_COLOURS)]
        picture = jnp.where((grid >= BODY)[..., None], colours, jnp.uint8(24))
        picture = jnp.where((grid == HEAD)[..., None], jnp.uint8(255), picture)
        return jnp.where((grid == FOOD)[..., None], jnp.array([235, 50, 50], jnp.uint8), picture)

    def caption(self, state: EnvState) -> str:
        alive, length = np.asarray(state.alive), np.asarray(state.length)
        return f"{int(alive.sum())} alive, longest {int(length[alive].max(initial=0))}, deaths {int(state.deaths)}"

    def bodies(self, state: EnvState) -> list[list[tuple[int, int]]]:
        """Each snake's body cells (row, col) on the board, oldest first (a stacked cell once); [] while
        dead. For tests: the board's ways read back as the body list the rules describe."""
        grid, head, tail, alive = (np.asarray(x) for x in (state.grid & KIND, state.head, state.tail, state.alive))
        out = []
        for k in range(self.num_snakes):
            cells, at = [], int(tail[k])
            while alive[k]:
                cells.append(at)
                if at == head[k] or len(cells) > self.num_cells:
                    break
                at += self._steps[int(grid[at]) - BODY] if BODY <= grid[at] < HEAD else self.num_cells
                if not 0 <= at < self.num_cells:
                    break  # a broken chain: the list ends where it breaks (tests then fail on it)
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
