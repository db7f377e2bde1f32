"""Snake on a square board, as a pure JAX gymnax 1.0 environment.

The board lives in bitboards (one bit per cell, packed into uint32 words) and the body is a
linked list stored as two more bitboards: each body cell but the head holds the direction
of the next segment toward the head, so the tail can follow the body without a per-cell
counter. A step is then a few dozen integer operations per env, which `vmap` turns into
SIMD across envs; only the observation touches every cell.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from jaxrl.envs import controls
from jaxrl.envs.base import Env
from jaxrl.envs.checks import COUNT, FINITE, SHARE, check, check_int_setting
from jaxrl.envs.kernels import DCOL, DROW, fusion_boundary, pick

START_LENGTH = 3
VIEWS = ("world", "ego")  # the whole board as it lies, or turned so that the snake heads up
ACTIONS = ("absolute", "relative")  # four compass moves, or turn left / straight on / turn right


@struct.dataclass
class EnvState(environment.EnvState):
    occupied: jax.Array  # (words,) uint32, bit i set where cell i holds the snake (head included)
    link_lo: jax.Array  # (words,) uint32, low bit of the direction from a body cell to the next one headward
    link_hi: jax.Array  # (words,) uint32, high bit of that direction
    head_row: jax.Array  # () int32
    head_col: jax.Array  # () int32
    tail: jax.Array  # () int32, cell index row * size + col
    direction: jax.Array  # () int32, the last move (0 up, 1 right, 2 down, 3 left)
    apple: jax.Array  # () int32, cell index; meaningless once the board is full
    length: jax.Array  # () int32, cells occupied by the snake, head included
    hunger: jax.Array  # () int32, steps since the last apple (or the reset)
    time: jax.Array  # () int32, steps since the reset
    mirrored: jax.Array  # () bool, the agent sees (and acts in) the board flipped left to right


@struct.dataclass
class EnvParams(environment.EnvParams):
    max_steps_in_episode: int = 10_000  # truncation: steps in one episode
    hunger_limit: int = 100  # truncation: steps without an apple
    reward_apple: float = 1.0  # eating an apple (also the step that fills the board)
    reward_death: float = -1.0  # leaving the board or biting the body
    reward_step: float = 0.0  # every other step
    hunger_kills: bool = False  # hunger_limit steps without an apple end the episode as a death, not a truncation
    shaping: float = 0.0  # potential-based shaping toward the apple (0: off); the score stays apples
    shaping_gamma: float = 0.99  # the discount in the shaping term (the learner's gamma keeps it policy-neutral)
    mirror_prob: float = 0.0  # chance that an episode is mirrored left to right (augmentation)


def _select_bit(word: jax.Array, rank: jax.Array) -> jax.Array:
    """Position (0..31) of the `rank`-th set bit (0-based) of a uint32 word, by halving."""
    pos = jnp.int32(0)
    for width in (16, 8, 4, 2, 1):
        low = jax.lax.population_count(word & jnp.uint32((1 << width) - 1)).astype(jnp.int32)
        high = rank >= low
        rank = jnp.where(high, rank - low, rank)
        word = jnp.where(high, word >> width, word)
        pos = jnp.where(high, pos + width, pos)
    return pos


class Snake(Env):
    """Classic Snake on a `size x size` board.

    Observation (`view`):
        `world`: `(size, size, 3)` uint8: channel 0 is 1 at the head, channel 1 is 1 on the
            other body cells, channel 2 is 1 at the apple.
        `ego`: `(size, size, 3)` uint8, the same channels with the board turned so that the snake
            always heads up (row-1). The walls lie just outside the view, on every side whatever
            the turn (a wall channel would be constant: no information, and a quarter more input).
        A mirrored episode (see `mirror_prob`) sees its observation flipped left to right.
    Actions (`actions`):
        `absolute`: `Discrete(4)`: 0 up (row-1), 1 right (col+1), 2 down (row+1), 3 left
            (col-1). The action opposite to the current direction keeps the current direction.
        `relative`: `Discrete(3)`: 0 turn left, 1 straight on, 2 turn right.
        In a mirrored episode left and right swap (absolute 1 and 3, relative 0 and 2), so the
        agent acts in the world it sees.
    Reward: `reward_apple` for eating (the snake grows by one and a new apple appears on a
        uniformly random free cell), `reward_death` for leaving the board or entering a body
        cell (the tail's cell frees this step unless the snake eats), `reward_step` otherwise;
        plus, with `shaping > 0`, the potential-based term `shaping_gamma * phi(s') - phi(s)`,
        phi = -shaping * manhattan(head, apple) / (2 (size - 1)) and 0 once the episode ended
        (Ng et al. 1999: it leaves the optimal policy unchanged). `score` counts apples only.
    Termination: death, or a full board (a win; that step earns `reward_apple`), or, with
        `hunger_kills`, `hunger_limit` steps without an apple (a death, `reward_death`).
    Truncation: `max_steps_in_episode` steps, or `hunger_limit` steps without an apple.
    Reset: a straight snake of length 3 at a uniformly random place and direction, fully on
        the board with the cell ahead free; one apple on a uniformly random free cell; the
        episode is mirrored with probability `mirror_prob`.
    Info: `score`, apples eaten this episode, and `won`, whether it filled the board (after
        the step, before any reset).
    """

    name = "snake"

    def __init__(self, size: int = 10, view: str = "world", actions: str = "absolute"):
        super().__init__()
        check_int_setting("snake size", size, 4, 64)
        if view not in VIEWS:
            raise ValueError(f"snake view={view!r} is invalid: allowed {', '.join(VIEWS)}")
        if actions not in ACTIONS:
            raise ValueError(f"snake actions={actions!r} is invalid: allowed {', '.join(ACTIONS)}")
        if view == "ego" and actions != "relative":
            raise ValueError("snake view='ego' needs actions='relative': the turned board does not show where up is")
        self.size, self.view, self.actions = size, view, actions
        self.num_cells = size * size
        self.num_words = -(-self.num_cells // 32)
        valid = [0] * self.num_words
        for i in range(self.num_cells):
            valid[i >> 5] |= 1 << (i & 31)
        self._valid = jnp.array(valid, jnp.uint32)  # (words,) bits of real cells
        self._word_ids = jnp.arange(self.num_words, dtype=jnp.int32)  # (words,)
        self._shifts = jnp.arange(32, dtype=jnp.uint32)  # (32,)
        self._cells = jnp.arange(self.num_cells, dtype=jnp.int32).reshape(size, size)  # (size, size)
        self._flat_step = (-size, 1, size, -1)  # cell-index offset of each direction

    @property
    def default_params(self) -> EnvParams:
        return EnvParams(max_steps_in_episode=100 * self.num_cells, hunger_limit=self.num_cells)

    def check_params(self, params: EnvParams) -> None:
        check(
            params,
            (("max_steps_in_episode", "hunger_limit"), *COUNT),
            (("reward_apple", "reward_death", "reward_step", "shaping"), *FINITE),
            (("shaping_gamma", "mirror_prob"), *SHARE),
        )

    def eval_params(self, params: EnvParams) -> EnvParams:
        """The params to evaluate a policy with: the hunger limit cannot cut a legal game short
        (at least size * size steps per apple) and no shaping (the return is the plain one)."""
        hunger_limit = jnp.maximum(params.hunger_limit, self.num_cells)
        return params.replace(hunger_limit=hunger_limit, shaping=jnp.zeros_like(params.shaping))

    @property
    def num_actions(self) -> int:
        return 3 if self.actions == "relative" else 4

    def observation_space(self, params: EnvParams | None = None) -> spaces.Box:
        return spaces.Box(0, 1, (self.size, self.size, 3), jnp.uint8)

    # -- a person at the play page --------------------------------------------

    def action_names(self) -> tuple[str, ...]:
        return controls.DIRECTIONS if self.actions == "absolute" else controls.RELATIVE

    def person_action(self, state: EnvState, seat: int, move: str | None) -> int:
        heading = int(np.asarray(state.direction))
        turn = controls.turn(heading, move)
        mirrored = bool(np.asarray(state.mirrored))
        if self.actions == "absolute":
            direction = (heading + turn) % 4
            return 4 - direction if mirrored and direction % 2 == 1 else direction  # the env swaps left and right back
        return 1 - turn if mirrored else turn + 1

    def shown_numbers(self, state: EnvState, numbers: np.ndarray) -> np.ndarray:
        numbers = np.asarray(numbers, np.float64).copy()
        if bool(np.asarray(state.mirrored)):
            a, b = (1, 3) if self.actions == "absolute" else (0, 2)
            numbers[[a, b]] = numbers[[b, a]]
        return numbers

    def result_line(self, info: dict, names: list[str], you: int | None) -> str:
        won = bool(np.asarray(info.get("won", False)))
        return f"score {int(np.asarray(info['score']))}" + (": a full board, won" if won else "")

    # -- bitboard helpers ---------------------------------------------------

    def _bit(self, cell: jax.Array) -> jax.Array:
        """(words,) uint32 with only `cell`'s bit set."""
        bit = jnp.uint32(1) << (cell & 31).astype(jnp.uint32)
        return jnp.where(self._word_ids == (cell >> 5), bit, jnp.uint32(0))

    def _spawn_apple(self, u: jax.Array, occupied: jax.Array) -> jax.Array:
        """Cell index of a uniformly random free cell, given u uniform in [0, 1)."""
        free = ~occupied & self._valid
        counts = jax.lax.population_count(free).astype(jnp.int32)  # (words,)
        total = jnp.sum(counts)
        rank = jnp.minimum((u * total).astype(jnp.int32), total - 1)
        seen = jnp.zeros((), jnp.int32)  # free cells in words 0..k-1
        before = jnp.zeros((), jnp.int32)  # free cells in the words before the chosen one
        word = jnp.zeros((), jnp.int32)
        for k in range(1, self.num_words):  # static and short: ceil(size^2 / 32) words
            seen = seen + counts[k - 1]
            passed = rank >= seen  # monotone in k: the chosen word is the last one passed
            before = jnp.where(passed, seen, before)
            word = jnp.where(passed, k, word)
        bits = jnp.sum(jnp.where(self._word_ids == word, free, jnp.uint32(0)))
        return word * 32 + _select_bit(bits, rank - before)

    def make_state(
        self,
        cells: list[tuple[int, int]],
        apple: tuple[int, int],
        direction: int,
        hunger: int = 0,
        time: int = 0,
        mirrored: bool = False,
    ) -> EnvState:
        """A state from the snake's cells, head first, each adjacent to the next (for tests and replays)."""
        if len(cells) < 2:
            raise ValueError("a snake has at least a head and one body cell")
        occupied = [0] * self.num_words
        lo, hi = [0] * self.num_words, [0] * self.num_words
        for i, (r, c) in enumerate(cells):
            index = r * self.size + c
            occupied[index >> 5] |= 1 << (index & 31)
            if i == 0:
                continue
            toward = (cells[i - 1][0] - r, cells[i - 1][1] - c)
            link = list(zip(DROW, DCOL)).index(toward)  # ValueError if cells are not adjacent
            if link & 1:
                lo[index >> 5] |= 1 << (index & 31)
            if link & 2:
                hi[index >> 5] |= 1 << (index & 31)
        u32 = lambda x: jnp.array(x, jnp.uint32)
        return EnvState(
            occupied=u32(occupied),
            link_lo=u32(lo),
            link_hi=u32(hi),
            head_row=jnp.int32(cells[0][0]),
            head_col=jnp.int32(cells[0][1]),
            tail=jnp.int32(cells[-1][0] * self.size + cells[-1][1]),
            direction=jnp.int32(direction),
            apple=jnp.int32(apple[0] * self.size + apple[1]),
            length=jnp.int32(len(cells)),
            hunger=jnp.int32(hunger),
            time=jnp.int32(time),
            mirrored=jnp.bool_(mirrored),
        )

    # -- dynamics -------------------------------------------------------------

    def _direction(self, state: EnvState, action: jax.Array) -> jax.Array:
        """The direction the head moves in for the agent's action (as the agent sees the board)."""
        action = jnp.asarray(action, jnp.int32)
        if self.actions == "relative":  # 0 left, 1 straight, 2 right; a mirrored agent's left is right
            turn = jnp.where(state.mirrored, 1 - action, action - 1)
            return (state.direction + turn) % 4
        action = jnp.where(state.mirrored & (action & 1 == 1), 4 - action, action)  # swap right and left
        return jnp.where(action == (state.direction + 2) % 4, state.direction, action)

    def _potential(self, state: EnvState, params: EnvParams) -> jax.Array:
        """Shaping potential: minus the scaled Manhattan distance from the head to the apple."""
        rows = jnp.abs(state.head_row - state.apple // self.size)
        distance = rows + jnp.abs(state.head_col - state.apple % self.size)
        return -params.shaping * distance.astype(jnp.float32) / (2 * (self.size - 1))

    def step_env(self, key: jax.Array, state: EnvState, action: jax.Array, params: EnvParams):
        direction = self._direction(state, action)
        row = state.head_row + pick(DROW, direction)
        col = state.head_col + pick(DCOL, direction)
        off_board = (row < 0) | (row >= self.size) | (col < 0) | (col >= self.size)
        head = jnp.where(off_board, 0, row * self.size + col)
        eats = ~off_board & (head == state.apple)

        # The tail moves along its link unless the snake eats.
        tail_bit = self._bit(state.tail)
        link = jnp.any((state.link_lo & tail_bit) != 0).astype(jnp.int32) + 2 * jnp.any(
            (state.link_hi & tail_bit) != 0
        ).astype(jnp.int32)
        occupied = jnp.where(eats, state.occupied, state.occupied & ~tail_bit)
        tail = jnp.where(eats, state.tail, state.tail + pick(self._flat_step, link))
        head_bit = jnp.where(off_board, jnp.uint32(0), self._bit(head))  # a head off the board holds no cell
        bites = ~off_board & jnp.any((occupied & head_bit) != 0)
        dead = off_board | bites

        # The old head now links to the new head.
        old_head_bit = self._bit(state.head_row * self.size + state.head_col)
        link_lo = jnp.where(direction & 1, state.link_lo | old_head_bit, state.link_lo & ~old_head_bit)
        link_hi = jnp.where(direction & 2, state.link_hi | old_head_bit, state.link_hi & ~old_head_bit)
        occupied = occupied | head_bit
        length = state.length + eats.astype(jnp.int32)
        won = length == self.num_cells
        hunger = jnp.where(eats, 0, state.hunger + 1)
        dead = dead | (params.hunger_kills & ~won & (hunger >= params.hunger_limit))
        spawned = self._spawn_apple(self.uniform(key, self.STEP_SALT, 1)[0], occupied)
        apple = jnp.where(eats & ~won, spawned, state.apple)
        reward = jnp.where(dead, params.reward_death, jnp.where(eats, params.reward_apple, params.reward_step))
        new_state = EnvState(
            occupied=occupied,
            link_lo=link_lo,
            link_hi=link_hi,
            head_row=row,
            head_col=col,
            tail=tail,
            direction=direction,
            apple=apple,
            length=length,
            hunger=hunger,
            time=state.time + 1,
            mirrored=state.mirrored,
        )
        ended = dead | won
        shaped = params.shaping_gamma * jnp.where(ended, 0.0, self._potential(new_state, params))
        reward = reward + shaped - self._potential(state, params)
        info = {"score": length - START_LENGTH, "won": won}
        return self.get_obs(new_state), new_state, reward.astype(jnp.float32), ended, info

    def reset_env(self, key: jax.Array, params: EnvParams):
        u = self.uniform(key, self.RESET_SALT, 5)
        span = self.size - 3  # heading right, the head's column is 2..size-2: two cells behind, one ahead
        across = jnp.minimum(u[0] * self.size, self.size - 1).astype(jnp.int32)
        along = jnp.minimum(u[1] * span, span - 1).astype(jnp.int32) + 2
        direction = jnp.minimum(u[2] * 4, 3).astype(jnp.int32)
        # Place the snake heading right, then turn the board to the drawn direction.
        last = self.size - 1
        row = jnp.select([direction == 0, direction == 2], [last - along, along], across)
        col = jnp.select([direction == 1, direction == 3], [along, last - along], across)
        step = pick(self._flat_step, direction)
        head = row * self.size + col
        neck, tail = head - step, head - 2 * step
        body_bits = self._bit(neck) | self._bit(tail)
        occupied = body_bits | self._bit(head)
        link_lo = jnp.where(direction & 1, body_bits, jnp.uint32(0))
        link_hi = jnp.where(direction & 2, body_bits, jnp.uint32(0))
        state = EnvState(
            occupied=occupied,
            link_lo=link_lo,
            link_hi=link_hi,
            head_row=row,
            head_col=col,
            tail=tail,
            direction=direction,
            apple=self._spawn_apple(u[3], occupied),
            length=jnp.int32(START_LENGTH),
            hunger=jnp.int32(0),
            time=jnp.int32(0),
            mirrored=u[4] < params.mirror_prob,
        )
        return self.get_obs(state), state

    def _codes(self, state: EnvState) -> jax.Array:
        """(size * size,) uint8, one code per cell: 0 empty, 1 head, 2 body, 3 apple (world frame)."""
        bits = (state.occupied[:, None] >> self._shifts) & jnp.uint32(1)  # (words, 32)
        code = bits.reshape(-1)[: self.num_cells].astype(jnp.uint8) * jnp.uint8(2)
        cells = self._cells.reshape(-1)
        code = jnp.where(cells == state.apple, jnp.uint8(3), code)
        # After a death off the board the head is nowhere: row * size + col would wrap onto a real cell.
        row, col = state.head_row, state.head_col
        on_board = (row >= 0) & (row < self.size) & (col >= 0) & (col < self.size)
        return jnp.where(cells == jnp.where(on_board, row * self.size + col, -1), jnp.uint8(1), code)

    def get_obs(self, state: EnvState, params: EnvParams | None = None, key: jax.Array | None = None) -> jax.Array:
        # One code per cell, then a compare per channel. The world view is built on the flat cell
        # axis and reshaped last, which XLA vectorizes better than (size, size) planes. The
        # codes pass a fusion boundary: fused into the compare, each code was recomputed from the
        # bitboards once per channel with the mirror's index arithmetic.
        code = fusion_boundary(self._codes(state))
        if self.view == "ego":
            # Turn the heading to up: rot90 by k quarter turns counterclockwise brings direction k
            # (0 up, 1 right, 2 down, 3 left) to up. Static turns and a select: no gather under vmap.
            board = code.reshape(self.size, self.size)
            turns = [jnp.rot90(board, k).reshape(-1) for k in range(4)]
            # The turned codes pass a boundary too: fused into the compare, every output byte read all
            # four turns.
            code = fusion_boundary(jnp.select([state.direction == k for k in range(3)], turns[:3], turns[3]))
        flipped = code.reshape(self.size, self.size)[:, ::-1].reshape(-1)
        code = jnp.where(state.mirrored, flipped, code)
        channels = jnp.arange(1, 4, dtype=jnp.uint8)
        return (code[:, None] == channels).astype(jnp.uint8).reshape(self.size, self.size, 3)

    def is_truncated(self, state: EnvState, params: EnvParams) -> jax.Array:
        hungry = ~params.hunger_kills & (state.hunger >= params.hunger_limit)  # else a death, in step_env
        return (state.time >= params.max_steps_in_episode) | hungry

    def render_rgb(self, state: EnvState) -> jax.Array:
        """(size, size, 3) uint8 picture of the board as it lies: green body, bright head, red apple."""
        code = self._codes(state).reshape(self.size, self.size, 1)
        img = jnp.zeros((self.size, self.size, 3), jnp.uint8)
        img = jnp.where(code == 2, jnp.array([40, 160, 60], jnp.uint8), img)
        img = jnp.where(code == 1, jnp.array([120, 255, 120], jnp.uint8), img)
        return jnp.where(code == 3, jnp.array([230, 40, 40], jnp.uint8), img)

    def render_text(self, state: EnvState) -> str:
        """The board as it lies, as text for a terminal: `@` head, `o` body, `*` apple, `.` empty, inside a frame."""
        chars = np.array([".", "@", "o", "*"])[np.asarray(self._codes(state)).reshape(self.size, self.size)]
        edge = "+" + "-" * self.size + "+"
        return "\n".join([edge, *("|" + "".join(row) + "|" for row in chars), edge])
