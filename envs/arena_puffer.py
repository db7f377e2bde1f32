"""The open arena under PufferLib Snake's rules (`env=arena_open env.rules=pufferlib`), as a pure JAX env.

The board is PufferLib's: one byte per cell holding what its observation shows (0 empty, 1 food,
2 corpse, 3 wall, 4-9 a snake's colour), walls `view // 2` cells wide inside `width x height`, and
each snake a ring buffer of its cells, head last. A step is per snake, never per cell: gathers
at the 256 targets, scatters of heads and tails, and a dead body written back cell by cell
(corpses on every second one), `BLOCK` cells of one dying snake at a time.
The observation is a crop of that board, as it lies (the moves are absolute): one byte a cell.
The step's skeleton (the episode window, rewards and info by world) is the open arena's, envs/open_world.py.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment

from jaxrl.envs import controls
from jaxrl.envs.arena import SNAKE_COLOURS
from jaxrl.envs.checks import COUNT, FINITE, INT32_MAX, check, check_int_setting
from jaxrl.envs.flat import distinct_cells
from jaxrl.envs.kernels import hash32, mix, pick
from jaxrl.envs.open_world import FlatSnakes, Moved, OpenWorld, check_board, check_view

EMPTY, FOOD, CORPSE, WALL = 0, 1, 2, 3  # PufferLib's cell codes; a snake's colour is 4-9
CODES = 10  # distinct cell codes (the network one-hots them)
DROW = (-1, 1, 0, 0)  # PufferLib's actions: 0 up, 1 down, 2 left, 3 right
DCOL = (0, 0, -1, 1)
OPPOSITE = (1, 0, 3, 2)
BLOCK = 64  # body cells of a dying snake written back per pass
SPAWN_ROUNDS = 32  # draws per step for a snake or food still without a cell; then it waits a step


def colour(ids: jax.Array) -> jax.Array:
    """PufferLib's snake colours: 9 for snake 0 (the one a person steers there), 4 + id % 4 for the rest."""
    return jnp.where(ids == 0, 9, 4 + ids % 4).astype(jnp.uint8)


@struct.dataclass
class EnvState(environment.EnvState):
    grid: jax.Array  # (cells,) uint8, the cell codes over width x height (walls included)
    ring: jax.Array  # (snakes * max_length,) int32: snake k's cells at k * max_length + i, its head at i = ptr
    ptr: jax.Array  # (snakes,) int32
    head: (
        jax.Array
    )  # (snakes,) int32, the head's cell (the ring at ptr, kept apart so that views need not read the ring)
    length: jax.Array  # (snakes,) int32 (0: waiting for a free cell)
    heading: jax.Array  # (snakes,) int32, the last move (0 up, 1 down, 2 left, 3 right): the neck is behind it
    claim: jax.Array  # (cells,) int32 scratch for head-to-head fights and spawns; all INT32_MAX between steps
    deaths: jax.Array  # () int32, deaths in this episode window
    eaten: jax.Array  # () int32, food and corpses eaten in this episode window
    time: jax.Array  # () int32, steps since the world was built


@struct.dataclass
class EnvParams(environment.EnvParams):
    max_steps_in_episode: int = 256  # an episode: a window of this many steps of the continuing world (truncated)
    reward_food: float = 0.1
    reward_corpse: float = 0.1
    reward_death: float = -1.0


class PufferArena(OpenWorld):
    """`num_snakes` learning snakes on PufferLib Snake's map and rules, all moving at once, born again where they die.

    Rules (PufferLib's `snake.h`): the map is `width x height` with walls `view // 2` cells wide at its
        edges. A move is one of four (0 up, 1 down, 2 left, 3 right); a move back into the neck goes
        straight on instead. Into a wall or any body cell as the step begins (one's own, its tail
        included): death. Food and corpses make a snake one longer (up to `max_length - 1`) and pay
        `reward_food` / `reward_corpse`; each eaten food comes back on a random free cell (empty or
        corpse), so there is always `num_food` of it. A snake that dies pays `reward_death` and
        leaves a corpse on every second cell of its body (the second from its tail, the fourth, ...),
        and is born again one cell long on a random free cell the same step. No health, no starving.
    Where PufferLib differs: it moves its snakes one after another in id order, so a snake there
        may step into a cell that a lower-numbered snake's tail (or whole body, if it died) left on
        the same step, and a lower number wins a contested cell. Here every snake moves at once: the
        board as the step begins decides, and of several snakes moving into one cell the lowest
        number lives and the others die. Births and new food come after all moves (lowest number
        first, snakes before food); one that finds no free cell in `SPAWN_ROUNDS` draws waits a step.
    Observation: per snake `(view, view)` uint8, the board's codes around its head, as it lies (0
        empty, 1 food, 2 corpse, 3 wall, 4-9 snake colours: PufferLib's own observation); zeros while
        it waits. One byte a cell; networks one-hot it (`observation_codes`).
    Episodes: never terminated; truncated every `max_steps_in_episode` steps (the world goes on).
    Info: `score` (the live snakes' mean length), `deaths` and `eaten` in the episode window.
    """

    num_actions = 4
    rules = "pufferlib"
    MOVES = ("up", "down", "left", "right")  # PufferLib's four moves, in its order

    def action_names(self) -> tuple[str, ...]:
        return self.MOVES

    def person_action(self, state: EnvState, seat: int, move: str | None) -> int:
        """Absolute moves; a turn, or nothing, is taken from the last move."""
        if move in controls.DIRECTIONS:
            return self.MOVES.index(move)
        compass = controls.DIRECTIONS.index(self.MOVES[int(np.asarray(state.heading)[seat])])
        return self.MOVES.index(controls.DIRECTIONS[(compass + controls.turn(compass, move)) % 4])

    observation_codes = CODES  # a cell is one of this many codes: networks one-hot it

    SPAWN_SALT = 0x5EED_0009

    def __init__(
        self,
        width: int = 640,
        height: int = 360,
        num_snakes: int = 256,
        num_food: int = 4096,
        view: int = 11,
        max_length: int = 1024,
    ):
        super().__init__()
        check_view(view)
        self.half = view // 2
        check_board(width, height, 2 * self.half + 8)
        inner = (width - 2 * self.half) * (height - 2 * self.half)
        check_int_setting(
            "arena_open num_snakes", num_snakes, 1, inner // 8, f"{inner // 8} (an eighth of the free cells)"
        )
        check_int_setting("arena_open num_food", num_food, 0, inner // 4, f"{inner // 4} (a quarter of the free cells)")
        check_int_setting("arena_open max_length", max_length, 2, 1 << 16)
        if num_snakes * max_length > INT32_MAX - 1:  # one world's rings must fit int32 indexes
            raise ValueError(
                f"arena_open num_snakes x max_length must be below 2**31 (the snakes' rings), got {num_snakes} x"
                f" {max_length}"
            )
        self.width, self.height, self.num_snakes, self.num_food, self.view = width, height, num_snakes, num_food, view
        self.max_length = max_length
        self.num_agents = num_snakes
        self.num_cells = width * height
        self.inner_width, self.inner_height = width - 2 * self.half, height - 2 * self.half
        self._steps = tuple(r * width + c for r, c in zip(DROW, DCOL, strict=True))
        r, c = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
        edge = (r < self.half) | (r >= height - self.half) | (c < self.half) | (c >= width - self.half)
        self._walls = np.where(edge, WALL, EMPTY).astype(np.uint8).reshape(-1)

    @property
    def default_params(self) -> EnvParams:
        return EnvParams()

    def check_params(self, params: EnvParams) -> None:
        check(params, ("max_steps_in_episode", *COUNT), (("reward_food", "reward_corpse", "reward_death"), *FINITE))

    # -- randomness ----------------------------------------------------------------------

    def spawn_draws(self, key: jax.Array, round_: jax.Array) -> jax.Array:
        """(2 * num_snakes,) int32 random cells off the walls for one round of draws: snake k's birth
        at k, the food eaten by snake k at num_snakes + k."""
        salt = hash32(mix(key, self.SPAWN_SALT) ^ (jnp.asarray(round_, jnp.uint32) * jnp.uint32(0x632BE5AB)))
        words = hash32(salt ^ (jnp.arange(2 * self.num_snakes, dtype=jnp.uint32) * jnp.uint32(0x9E3779B9)))
        u = (words >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)
        cells = self.inner_width * self.inner_height
        flat = jnp.minimum((u * cells).astype(jnp.int32), cells - 1)
        return (flat // self.inner_width + self.half) * self.width + flat % self.inner_width + self.half

    # -- dynamics ------------------------------------------------------------------------

    def _world_span(self) -> int:
        return max(self.num_cells, self.num_snakes * self.max_length)  # the board, or the rings if longer

    def _move(self, keys, state, action, params, snakes: FlatSnakes) -> Moved:
        """PufferLib's rules for every snake of W worlds on their flat board (`OpenWorld._step_worlds`)."""
        n, m, cells, worlds = self.num_snakes, self.max_length, self.num_cells, snakes.worlds
        ids, base, nowhere = snakes.ids, snakes.base, snakes.nowhere
        flat, per_snake, per_world = snakes.flat, snakes.per_snake, snakes.per_world
        row = (snakes.world * n + ids) * m  # each snake's ring's first slot
        grid_0, ring_0, claim_0 = flat(state.grid), flat(state.ring), flat(state.claim)
        ptr_0, length_0, heading_0 = flat(state.ptr), flat(state.length), flat(state.heading)
        head = flat(state.head) + base
        act = jnp.clip(action, 0, 3)
        moving = length_0 > 0
        back = (length_0 >= 2) & (act == pick(OPPOSITE, heading_0))  # into the neck: straight on
        direction = jnp.where(back, heading_0, act)
        target = head + pick(self._steps, direction)
        tile = grid_0[jnp.where(moving, target, 0)]
        # A contested cell goes to the lowest number; a wall or a body cell kills.
        free = moving & (tile < WALL)
        at = jnp.where(free, target, nowhere)
        claim = claim_0.at[at].min(ids, mode="drop")
        owner = claim[jnp.where(free, target, 0)]
        wins = free & (owner == ids)
        # Reset with values read from the claim (all ids <= INT32_MAX), so the read comes first and the
        # scratch board is updated in place (a constant let XLA copy the board to reorder them).
        claim = claim.at[at].set(jnp.maximum(owner, INT32_MAX), mode="drop")
        dies = moving & ~wins
        eats_food = wins & (tile == FOOD)
        grows = wins & (tile != EMPTY) & (length_0 < m - 1)
        # Survivors: the tail leaves (unless growing), the head enters.
        ptr = jnp.where(wins, (ptr_0 + 1) % m, ptr_0)
        tail = ring_0[row + (ptr_0 - length_0 + 1) % m] + base
        grid = grid_0.at[jnp.where(wins & ~grows, tail, nowhere)].set(EMPTY, mode="drop")
        grid = grid.at[jnp.where(wins, target, nowhere)].set(colour(ids), mode="drop")
        length = jnp.where(grows, length_0 + 1, length_0)
        heading = jnp.where(wins, direction, heading_0)
        grid = self._write_back_bodies(grid, ring_0, row, base, ptr_0, length_0, dies, nowhere)
        length = jnp.where(dies, 0, length)
        # Births and food: free cells (empty or corpse) not yet taken this step, lowest number first.
        grid, claim, placed = self._spawn(keys, grid, claim, length == 0, eats_food, nowhere)
        born = placed[:, :n].reshape(-1) >= 0
        born_at = placed[:, :n].reshape(-1)  # a flat-board cell
        # One write to the rings, after every read of them (the dying's bodies were read from the old
        # rings, which this step's heads do not touch): XLA then updates them in place.
        slot = jnp.where(born, row, jnp.where(wins, row + ptr, worlds * n * m))
        ring = ring_0.at[slot].set(jnp.where(born, born_at, target) - base, mode="drop")
        ptr = jnp.where(born, 0, ptr)
        head = jnp.where(born, born_at, jnp.where(wins, target, head)) - base
        length = jnp.where(born, 1, length)
        stepped = state.replace(
            grid=grid.reshape(worlds, cells),
            ring=ring.reshape(worlds, n * m),
            ptr=per_world(ptr),
            head=per_world(head),
            length=per_world(length),
            heading=per_world(heading),
            claim=claim.reshape(worlds, cells),
        )
        food, corpse, death = (
            per_snake(params.reward_food),
            per_snake(params.reward_corpse),
            per_snake(params.reward_death),
        )
        reward = jnp.where(tile == FOOD, food, jnp.where(tile == CORPSE, corpse, 0.0))
        reward = jnp.where(dies, death, jnp.where(wins, reward, 0.0)).astype(jnp.float32)
        obs = self._views(grid, head + base, length, worlds)
        eats = wins & (tile != EMPTY)  # food or a corpse
        return Moved(state=stepped, reward=reward, dies=dies, eats=eats, alive=length > 0, length=length, obs=obs)

    def _write_back_bodies(self, grid, ring, row, base, ptr, length, dies, nowhere):
        """The bodies of the dying as corpse (every second cell from the tail's) or empty: one dying snake and
        BLOCK of its cells per pass, the lowest-numbered first (bodies are disjoint, so order is free). A few
        die per step: a sort to batch them cost more than the passes."""
        m = self.max_length
        span = jnp.where(dies, length, 0)
        steps = jnp.arange(BLOCK, dtype=jnp.int32)

        def block(carry):
            grid, left, offset = carry
            k = jnp.argmax(left)  # the lowest-numbered snake still to write
            p = offset + steps  # 0-based position from the tail
            cells = ring[row[k] + (ptr[k] - span[k] + 1 + p) % m] + base[k]
            code = jnp.where(p % 2 == 1, CORPSE, EMPTY).astype(jnp.uint8)
            grid = grid.at[jnp.where(p < span[k], cells, nowhere)].set(code, mode="drop")
            done = offset + BLOCK >= span[k]
            return grid, left.at[k].set(left[k] & ~done), jnp.where(done, 0, offset + BLOCK)

        grid, _, _ = jax.lax.while_loop(lambda c: jnp.any(c[1]), block, (grid, dies, jnp.int32(0)))
        return grid

    def _spawn(self, keys, grid, claim, want_snake, want_food, nowhere):
        """Rounds of draws: each snake without a cell and each eaten food takes its round's cell if that is
        free and no lower slot of its world drew it. Returns (grid, claim, (W, 2n) the flat-board cell each
        slot got or -1), slots as in `spawn_draws`."""
        n, worlds = self.num_snakes, keys.shape[0]
        wanting = jnp.concatenate([want_snake.reshape(worlds, n), want_food.reshape(worlds, n)], axis=1).reshape(-1)
        slots = jnp.tile(jnp.arange(2 * n, dtype=jnp.int32), worlds)
        codes = jnp.where(slots < n, colour(slots), FOOD).astype(jnp.uint8)
        base = jnp.repeat(jnp.arange(worlds, dtype=jnp.int32) * self.num_cells, 2 * n)

        def round_(carry):
            r, grid, claim, waiting, placed = carry
            cells = jax.vmap(self.spawn_draws, in_axes=(0, None))(keys, r).reshape(-1) + base
            tile = grid[cells]
            ok = waiting & ((tile == EMPTY) | (tile == CORPSE))
            at = jnp.where(ok, cells, nowhere)
            mark = claim.at[at].min(slots, mode="drop")
            owner = mark[cells]
            got = ok & (owner == slots)
            mark = mark.at[at].set(jnp.maximum(owner, INT32_MAX), mode="drop")  # read first: in place
            grid = grid.at[jnp.where(got, cells, nowhere)].set(codes, mode="drop")
            placed = jnp.where(got, cells, placed)
            return r + 1, grid, mark, waiting & ~got, placed

        def more(carry):
            r, _, _, waiting, _ = carry
            return (r < SPAWN_ROUNDS) & jnp.any(waiting)

        start = (jnp.int32(0), grid, claim, wanting, jnp.full(worlds * 2 * n, -1, jnp.int32))
        _, grid, claim, _, placed = jax.lax.while_loop(more, round_, start)
        return grid, claim, placed.reshape(worlds, 2 * n)

    # -- reset and observation ------------------------------------------------------------

    def reset_env(self, key: jax.Array, params: EnvParams):
        """The world built: walls at the edges, snakes (one cell long) and food on distinct random cells
        (a random affine permutation of the cells off the walls)."""
        n, cells = self.num_snakes, self.inner_width * self.inner_height
        flat = distinct_cells(self.uniform(key, self.RESET_SALT, 2), cells, n + self.num_food)
        spot = (flat // self.inner_width + self.half) * self.width + flat % self.inner_width + self.half
        ids = jnp.arange(n, dtype=jnp.int32)
        grid = jnp.asarray(self._walls).at[spot[n:]].set(FOOD).at[spot[:n]].set(colour(ids))
        state = EnvState(
            grid=grid,
            ring=jnp.zeros(n * self.max_length, jnp.int32).at[jnp.arange(n) * self.max_length].set(spot[:n]),
            ptr=jnp.zeros(n, jnp.int32),
            head=spot[:n],
            length=jnp.ones(n, jnp.int32),
            heading=jnp.zeros(n, jnp.int32),
            claim=jnp.full(self.num_cells, INT32_MAX, jnp.int32),
            deaths=jnp.int32(0),
            eaten=jnp.int32(0),
            time=jnp.int32(0),
        )
        return self.get_obs(state), state

    def views(self, state: EnvState) -> jax.Array:
        """(num_snakes, view, view) uint8: each snake's crop of the board around its head (zeros while waiting)."""
        return self._views(state.grid, state.head, state.length, 1)[0]

    def _views(self, grid, head, length, worlds):
        """(W, num_snakes, view, view) crops of W flat boards at flat-board heads: one crop per snake."""
        board = grid.reshape(worlds * self.height, self.width)
        rows, cols = head // self.width - self.half, head % self.width - self.half
        crops = jax.vmap(lambda r, c: jax.lax.dynamic_slice(board, (r, c), (self.view, self.view)))(rows, cols)
        crops = crops * (length.reshape(-1) > 0)[:, None, None].astype(jnp.uint8)
        return crops.reshape(worlds, self.num_snakes, self.view, self.view)

    # -- pictures -------------------------------------------------------------------------

    def render_rgb(self, state: EnvState) -> jax.Array:
        """(height, width, 3) uint8, a pixel a cell: snakes in their colours, food red, corpses dim red, walls grey."""
        palette = np.array(
            [(24, 24, 24), (235, 50, 50), (120, 40, 40), (90, 90, 90)] + list(SNAKE_COLOURS[:6]), np.uint8
        )
        return jnp.asarray(palette)[state.grid.reshape(self.height, self.width)]

    def caption(self, state: EnvState) -> str:
        length = np.asarray(state.length)
        return f"{int((length > 0).sum())} alive, longest {int(length.max(initial=0))}, deaths {int(state.deaths)}"

    def bodies(self, state: EnvState) -> list[list[tuple[int, int]]]:
        """Each snake's cells (row, col) on the map, tail first; [] while waiting. For tests."""
        ring, ptr, length = np.asarray(state.ring), np.asarray(state.ptr), np.asarray(state.length)
        out = []
        for k in range(self.num_snakes):
            m = self.max_length
            cells = [ring[k * m + (ptr[k] - length[k] + 1 + i) % m] for i in range(length[k])]
            out.append([(int(c // self.width), int(c % self.width)) for c in cells])
        return out


__all__ = ["EnvParams", "EnvState", "PufferArena"]
