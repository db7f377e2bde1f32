"""Property tests: random settings, boards and action sequences keep Snake's and the grid world's invariants.

An example steps a vmapped batch of worlds under one jitted `lax.scan` and checks every stacked
state and step with numpy, against the state fields and the rules in the envs' docstrings (a
small reference model of one step, written from the docstring rather than copied from the env).
The default run draws a few small examples; `-m slow` checks over a million transitions per env
(a transition is one step of one world) and prints what it checked; with JAXRL_PROPERTY_RESULTS set to a
JSON file (bench/results/property_suite.json holds the last record) it merges that in too, so a test run
writes nothing into the source tree. `test_checks_catch_*` corrupt real traces to show that every
family of checks can fail.
"""

from __future__ import annotations

import datetime
import json
import os
import time
from collections import Counter
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from jaxrl.envs.checks import INT32_MAX
from jaxrl.envs.grid import COLLECT, GridWorld
from jaxrl.envs.grid import DCOL as GRID_DCOL
from jaxrl.envs.grid import DROW as GRID_DROW
from jaxrl.envs.grid import EnvParams as GridParams
from jaxrl.envs.grid import EnvState as GridState
from jaxrl.envs.snake import DCOL, DROW, START_LENGTH, Snake
from jaxrl.envs.snake import EnvParams as SnakeParams
from jaxrl.envs.snake import EnvState as SnakeState

FAST = settings(max_examples=12, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
# The slow runs report a failing example without shrinking it: each example is 262k transitions. Each board
# shape compiles its own rollout, most of an example's time: 4 long examples, not 8 short ones.
SLOW = settings(max_examples=4, deadline=None, database=None, phases=(Phase.explicit, Phase.generate))
SLOW_WORLDS, SLOW_CHUNKS, SLOW_STEPS = 1024, 8, 32  # per example: 1024 worlds x 256 steps; 4 examples = 1,048,576
# Every board shape compiles its own rollout (1.5 s for Snake, 1.2-9 s for the grid on 2 cores), so the
# default run plays a few shapes and varies everything else; the slow runs draw the shapes too.
SNAKE_SIZES = (4, 7)  # one bitboard word; two
SLOW_SNAKE_SIZES = (4, 5, 7, 10, 16, 23)
# (size, view) by agents: a view wider than the map; 5 agents' 81 cells in six 16-bit words; 8 agents on 16 cells.
GRID_SHAPES = {1: [(3, 7)], 2: [(6, 3)], 5: [(9, 5)], 8: [(4, 5)]}
# 17 and 24: the flat bitboard of 5+ agents spans 19 and 36 16-bit words, cut into rows of 17 and 24 bits.
SLOW_GRID_SHAPES = [(size, view) for size in (4, 5, 8, 9, 13, 17, 24) for view in (3, 5, 7)]
SEEDS = st.integers(0, 2**32 - 1)
DIRECTIONS = list(zip(DROW, DCOL, strict=True))

Faults = dict[str, np.ndarray]  # invariant name -> (transitions,) bool, True where it is broken


@struct.dataclass
class Record:
    """One step of a batch of worlds, as `rollout` stacks it: (steps, worlds, ...) after the scan."""

    state: Any  # the env's state after the step (after any auto-reset)
    action: jax.Array  # (worlds,) or (worlds, agents) int32
    reward: jax.Array  # (worlds,) or (worlds, agents) float32
    terminated: jax.Array  # (worlds,) bool
    truncated: jax.Array  # (worlds,) bool
    score: jax.Array  # (worlds,) int32, info["score"]
    obs: jax.Array  # (worlds, ...) uint8, one code per cell: sum of channel c's bit << c
    final: jax.Array  # (worlds, ...) uint8, the same code of info["final_observation"]


def cell_codes(obs: jax.Array) -> jax.Array:
    """(..., channels) uint8 0/1 observation -> (...) uint8 with channel c at bit c."""
    weights = jnp.left_shift(jnp.uint8(1), jnp.arange(obs.shape[-1], dtype=jnp.uint8))
    return jnp.sum(obs * weights, axis=-1, dtype=jnp.uint8)


@partial(jax.jit, static_argnames=("env", "policy", "steps"))
def rollout(env, policy: Callable, params, state, fresh: jax.Array, key: jax.Array, weights: jax.Array, steps: int):
    """`steps` steps of a vmapped batch of worlds under `policy`, the worlds where `fresh` holds first reset:
    (first states, their observation codes, last states, Record stacked over steps). One compile per env."""
    worlds = fresh.shape[0]
    reset_key, key = jax.random.split(key)
    reset = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, worlds), params)[1]
    state = jax.tree.map(lambda r, s: jnp.where(fresh.reshape(-1, *[1] * (s.ndim - 1)), r, s), reset, state)
    codes = lambda obs: cell_codes(obs).reshape(worlds, -1)

    def one(state, key):
        policy_key, env_key = jax.random.split(key)
        action = policy(env, state, policy_key, weights)
        step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
        obs, state, reward, terminated, truncated, info = step(jax.random.split(env_key, worlds), state, action, params)
        record = Record(
            state, action, reward, terminated, truncated, info["score"], codes(obs), codes(info["final_observation"])
        )
        return state, record

    last, records = jax.lax.scan(one, state, jax.random.split(key, steps))
    return state, codes(jax.vmap(env.get_obs)(state)), last, records


def play(
    env,
    policy: Callable,
    params,
    boards: Any,
    key: jax.Array,
    weights: list[float],
    chunks: int,
    steps: int,
    reset_half: bool = True,
):
    """Yields (first states with their codes, or None after the first chunk; the steps' start states,
    flattened; the Record, stacked (steps, worlds)), all numpy, for `chunks` rollouts of `steps`. The worlds
    start from `boards`, the first half of them from reset instead if `reset_half`."""
    worlds = len(jax.tree.leaves(boards)[0])
    fresh = np.arange(worlds) < (worlds // 2 if reset_half else 0)
    state = boards
    for chunk in range(chunks):
        key, chunk_key = jax.random.split(key)
        first, codes, last, trace = jax.device_get(
            rollout(env, policy, params, state, fresh, chunk_key, jnp.array(weights), steps)
        )
        pre = before_each_step(first, trace.state)
        yield ((first, codes) if chunk == 0 else None), flat(pre), trace
        state, fresh = last, np.zeros(worlds, bool)


def snake_policy(env: Snake, state: SnakeState, key: jax.Array, weights: jax.Array) -> jax.Array:
    """(worlds,) actions: toward the apple with probability weights[4], else drawn with weights[:4]."""
    greedy_key, drawn_key = jax.random.split(key)
    worlds = state.head_row.shape[0]
    drawn = jax.random.categorical(drawn_key, jnp.log(weights[:4]), shape=(worlds,))
    apple_row, apple_col = state.apple // env.size, state.apple % env.size
    toward = jnp.select(
        [apple_row < state.head_row, apple_row > state.head_row, apple_col < state.head_col], [0, 2, 3], 1
    )
    return jnp.where(jax.random.uniform(greedy_key, (worlds,)) < weights[4], toward, drawn).astype(jnp.int32)


def grid_policy(env: GridWorld, state: GridState, key: jax.Array, weights: jax.Array) -> jax.Array:
    """(worlds, agents) actions, each drawn with weights (6,)."""
    return jax.random.categorical(key, jnp.log(weights), shape=state.row.shape).astype(jnp.int32)


# -- numpy helpers ------------------------------------------------------------------------------


def flat(tree: Any) -> Any:
    """Merge the (steps, worlds) leading axes of every leaf."""
    return jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), tree)


def before_each_step(first: Any, after: Any) -> Any:
    """The states each step started from: `first`, then every stacked state but the last."""
    return jax.tree.map(lambda f, a: np.concatenate([f[None], a[:-1]]), first, after)


def counters_near(limit: int, rng: np.random.Generator, count: int, reach: int) -> np.ndarray:
    """(count,) int64 counters in [0, limit): half uniform, half within `reach` steps of the limit."""
    uniform = rng.integers(0, limit, count)
    near = limit - 1 - rng.integers(0, min(limit, reach), count)
    return np.where(rng.random(count) < 0.5, uniform, near)


def tally(total: Counter, faults: Faults) -> None:
    for name, broken in faults.items():
        total[name] += int(np.count_nonzero(broken))


def assert_clean(faults: Counter, what: str) -> None:
    broken = {name: count for name, count in faults.items() if count}
    assert not broken, f"{what}: transitions breaking each invariant: {broken}"


# -- Snake --------------------------------------------------------------------------------------


@cache
def snake_env(size: int) -> Snake:
    return Snake(size)  # one instance per size, so `rollout` compiles once per size


@st.composite
def snake_settings(draw, sizes: tuple[int, ...]) -> dict:
    """Board size, EnvParams (limits small or anywhere check_params allows, distinct rewards), policy."""
    limit = lambda small: st.one_of(st.integers(1, small), st.integers(1, INT32_MAX), st.just(INT32_MAX))
    # XLA on CPU flushes float32 subnormals to zero, so rewards are normal floats (or zero).
    reward = st.floats(width=32, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    apple, death, step = draw(st.lists(reward, min_size=3, max_size=3, unique=True))
    weights = draw(st.lists(st.integers(0, 3), min_size=4, max_size=4).filter(any))
    return {
        "size": draw(st.sampled_from(sizes)),
        "params": {
            "max_steps_in_episode": draw(limit(300)),
            "hunger_limit": draw(limit(60)),
            "reward_apple": apple,
            "reward_death": death,
            "reward_step": step,
        },
        "weights": [*map(float, weights), draw(st.floats(0, 1))],  # 4 action weights, then P(toward the apple)
    }


def random_snake_cells(size: int, length: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """A snake of `length` cells, head first: a self-avoiding random walk, or a piece of a board-filling serpentine."""
    for _ in range(20 if length <= size * size // 3 else 0):
        cells = [(int(rng.integers(size)), int(rng.integers(size)))]
        while len(cells) < length:
            r, c = cells[-1]
            options = [(r + dr, c + dc) for dr, dc in DIRECTIONS if 0 <= r + dr < size and 0 <= c + dc < size]
            options = [cell for cell in options if cell not in cells]
            if not options:
                break
            cells.append(options[rng.integers(len(options))])
        if len(cells) == length:
            return cells
    path = [(r, c if r % 2 == 0 else size - 1 - c) for r in range(size) for c in range(size)]
    transpose, flip_rows, flip_cols, backwards = rng.random(4) < 0.5
    path = [(c, r) if transpose else (r, c) for r, c in path]
    path = [(size - 1 - r if flip_rows else r, size - 1 - c if flip_cols else c) for r, c in path]
    start = int(rng.integers(len(path) - length + 1))
    piece = path[start : start + length]
    return piece[::-1] if backwards else piece


def pack_cells(cells: np.ndarray, words: int) -> np.ndarray:
    """(..., count) bool -> (..., words) uint32 bitboards, cell i at bit i % 32 of word i // 32."""
    padded = np.zeros((*cells.shape[:-1], words * 32), np.uint64)
    padded[..., : cells.shape[-1]] = cells
    shifted = padded.reshape(*cells.shape[:-1], words, 32) << np.arange(32, dtype=np.uint64)
    return shifted.sum(-1).astype(np.uint32)


def unpack_cells(words: np.ndarray, count: int) -> np.ndarray:
    """(..., words) uint32 bitboards -> (..., count) bool."""
    bits = (words[..., None] >> np.arange(32, dtype=np.uint32)) & 1
    return bits.reshape(*words.shape[:-1], -1)[..., :count].astype(bool)


def spilled(words: np.ndarray, count: int) -> np.ndarray:
    """(...,) bool: a bit beyond the first `count` cells is set."""
    bits = (words[..., None] >> np.arange(32, dtype=np.uint32)) & 1
    return bits.reshape(*words.shape[:-1], -1)[..., count:].any(-1)


def snake_boards(env: Snake, params: dict, rng: np.random.Generator, count: int, reach: int) -> SnakeState:
    """`count` random live boards: any length from 3 to a board one apple short of full, counters anywhere."""
    size, cells = env.size, env.num_cells
    occupied, lo, hi = (np.zeros((count, cells), bool) for _ in range(3))
    fields = {
        name: np.zeros(count, np.int32) for name in ("head_row", "head_col", "tail", "direction", "apple", "length")
    }
    for i in range(count):
        length = int(rng.choice([rng.integers(3, min(cells, 3 * size)), rng.integers(3, cells), cells - 1]))
        snake = random_snake_cells(size, length, rng)
        for k, (r, c) in enumerate(snake):
            occupied[i, r * size + c] = True
            if k:
                link = DIRECTIONS.index((snake[k - 1][0] - r, snake[k - 1][1] - c))
                lo[i, r * size + c], hi[i, r * size + c] = link & 1, link & 2
        head, neck = snake[0], snake[1]
        free = np.flatnonzero(~occupied[i])
        fields["head_row"][i], fields["head_col"][i] = head
        fields["tail"][i] = snake[-1][0] * size + snake[-1][1]
        fields["direction"][i] = DIRECTIONS.index((head[0] - neck[0], head[1] - neck[1]))
        fields["apple"][i], fields["length"][i] = free[rng.integers(len(free))], length
    time_ = counters_near(params["max_steps_in_episode"], rng, count, reach)
    hunger = np.minimum(counters_near(params["hunger_limit"], rng, count, reach), time_)
    words = env.num_words
    return SnakeState(
        occupied=pack_cells(occupied, words),
        link_lo=pack_cells(lo, words),
        link_hi=pack_cells(hi, words),
        time=time_.astype(np.int32),
        hunger=hunger.astype(np.int32),
        mirrored=np.zeros(count, bool),  # what the agent sees, not the rules these checks cover
        **fields,
    )


def snake_chain_ok(env: Snake, s: SnakeState, occupied: np.ndarray) -> np.ndarray:
    """(N,) bool: following the links from the tail visits length distinct body cells, on the board, and
    ends at the head, whose last link is the state's direction."""
    size, cells = env.size, env.num_cells
    link = unpack_cells(s.link_lo, cells) + 2 * unpack_cells(s.link_hi, cells).astype(np.int64)
    n = len(s.length)
    ok = (0 <= s.tail) & (s.tail < cells)
    walker = np.arange(n)  # the worlds still walking
    cell = np.clip(s.tail, 0, cells - 1).astype(np.int64)
    ok &= occupied[walker, cell]
    seen = np.zeros((n, cells), bool)
    seen[walker, cell] = True
    last = np.full(n, -1)
    for k in range(int(s.length.max()) - 1):
        walker = walker[k < s.length[walker] - 1]
        here = cell[walker]
        d = link[walker, here]
        r, c = here // size + np.array(DROW)[d], here % size + np.array(DCOL)[d]
        inside = (0 <= r) & (r < size) & (0 <= c) & (c < size)
        there = np.where(inside, r * size + c, here)
        ok[walker] &= inside & occupied[walker, there] & ~seen[walker, there]
        seen[walker, there] = True
        cell[walker], last[walker] = there, d
    return ok & (cell == s.head_row * size + s.head_col) & (last == s.direction)


def snake_state_faults(env: Snake, params: dict, s: SnakeState, code: np.ndarray) -> Faults:
    """Invariants of live Snake states (N,) and their observations (N, cells) of codes (head 1, body 2, apple 4)."""
    size, cells = env.size, env.num_cells
    rows = np.arange(len(s.length))
    occupied = unpack_cells(s.occupied, cells)
    on_board = (0 <= s.head_row) & (s.head_row < size) & (0 <= s.head_col) & (s.head_col < size)
    head = np.where(on_board, s.head_row * size + s.head_col, 0)
    apple_ok = (0 <= s.apple) & (s.apple < cells)
    apple = np.where(apple_ok, s.apple, 0)
    expected = 2 * occupied.astype(np.uint8)
    expected[rows, apple] = 4
    expected[rows, head] = 1
    return {
        "snake: one head, on the board and on the body": ~on_board
        | ~occupied[rows, head]
        | (((code & 1) != 0).sum(1) != 1),
        "snake: length == occupied cells": (occupied.sum(1) != s.length) | spilled(s.occupied, cells) | (s.length < 3),
        "snake: board never over-full": s.length >= cells,  # a live board keeps a free cell for the apple
        "snake: apple on a free cell": ~apple_ok | occupied[rows, apple],
        "snake: body is one chain from tail to head": ~snake_chain_ok(env, s, occupied),
        "snake: counters within the limits": (s.time < 0)
        | (s.time >= params["max_steps_in_episode"])
        | (s.hunger < 0)
        | (s.hunger >= params["hunger_limit"])
        | (s.hunger > s.time),
        "snake: observation matches the state": (code != expected).any(1),
    }


def snake_reference_step(env: Snake, pre: SnakeState, action: np.ndarray) -> dict[str, np.ndarray]:
    """The docstring's step from states (N,): target cell, outcome, and the board before any reset."""
    size, cells = env.size, env.num_cells
    rows = np.arange(len(action))
    direction = np.where(action == (pre.direction + 2) % 4, pre.direction, action)  # reversing keeps going
    r, c = pre.head_row + np.array(DROW)[direction], pre.head_col + np.array(DCOL)[direction]
    off = (r < 0) | (r >= size) | (c < 0) | (c >= size)
    target = np.where(off, 0, r * size + c)
    eats = ~off & (target == pre.apple)
    board = unpack_cells(pre.occupied, cells)
    board[rows, np.clip(pre.tail, 0, cells - 1)] &= eats  # the tail's cell frees unless the snake eats
    dead = off | (~off & board[rows, target])
    board[rows, target] |= ~off
    length = pre.length + eats
    return {
        "direction": direction,
        "row": r,
        "col": c,
        "off": off,
        "target": target,
        "eats": eats,
        "dead": dead,
        "won": length == cells,
        "length": length,
        "board": board,
        "hunger": np.where(eats, 0, pre.hunger + 1),
    }


def snake_final_ok(env: Snake, pre: SnakeState, ref: dict, final: np.ndarray) -> np.ndarray:
    """(N,) bool: info["final_observation"] shows the board the step reached: the head where it went (none
    off the board), the body, and the apple on a free cell (none once the board is full)."""
    rows = np.arange(len(final))
    head_body = 2 * ref["board"].astype(np.uint8)
    head_body[rows[~ref["off"]], ref["target"][~ref["off"]]] = 1
    apples = (final & 4) != 0
    new_apple = ref["eats"] & ~ref["won"]
    ok = ((final & 3) == head_body).all(1) & ~(apples & ref["board"]).any(1)
    ok &= apples.sum(1) == np.where(ref["won"], 0, 1)
    return ok & (new_apple | ref["won"] | apples[rows, np.clip(pre.apple, 0, env.num_cells - 1)])


def snake_step_faults(env: Snake, params: dict, pre: SnakeState, rec: Record) -> Faults:
    """Invariants of steps (N,) from `pre` to `rec.state` (after any auto-reset)."""
    ref = snake_reference_step(env, pre, rec.action)
    post, done = rec.state, rec.terminated | rec.truncated
    rewards = np.float32([params["reward_apple"], params["reward_death"], params["reward_step"]])
    expected_reward = np.where(ref["dead"], rewards[1], np.where(ref["eats"], rewards[0], rewards[2]))
    out_of_time = pre.time.astype(np.int64) + 1 >= params["max_steps_in_episode"]
    limit = out_of_time | (ref["hunger"] >= params["hunger_limit"])
    moved = (
        (post.head_row != ref["row"])
        | (post.head_col != ref["col"])
        | (post.direction != ref["direction"])
        | (post.length != ref["length"])
        | (post.time != pre.time + 1)
        | (post.hunger != ref["hunger"])
        | (unpack_cells(post.occupied, env.num_cells) != ref["board"]).any(1)
        | (~ref["eats"] & (post.apple != pre.apple))
    )
    fresh = (post.length != START_LENGTH) | (post.time != 0) | (post.hunger != 0)
    return {
        "snake: reward in {apple, death, step}": ~np.isin(rec.reward, rewards),
        "snake: reward is the step's outcome": rec.reward != expected_reward,
        # Both flags may be set: death or a full board on the step that reaches a limit. The base
        # class sets them independently and every consumer lets termination win (no bootstrap).
        "snake: terminated == death or a full board": rec.terminated != (ref["dead"] | ref["won"]),
        "snake: truncated == a limit reached": rec.truncated != limit,
        "snake: score == length - 3": rec.score != ref["length"] - START_LENGTH,
        "snake: the step moves the snake": ~done & moved,
        "snake: an ended episode restarts": done & fresh,
        "snake: final observation is the board reached": ~snake_final_ok(env, pre, ref, rec.final),
    }


def snake_apple_faults(rec: Record, apple: float, eaten: np.ndarray) -> tuple[Faults, np.ndarray]:
    """length == 3 + apples eaten this episode, apples counted from rewards over (steps, worlds); `eaten`
    (worlds,) is the count before the first step, returned updated for the next chunk."""
    bad = np.zeros(rec.reward.shape, bool)
    for t in range(len(rec.reward)):
        eaten = eaten + (rec.reward[t] == np.float32(apple))
        bad[t] = rec.score[t] != eaten
        eaten = np.where(rec.terminated[t] | rec.truncated[t], 0, eaten)
        bad[t] |= rec.state.length[t] != START_LENGTH + eaten
    return {"snake: length == 3 + apples eaten this episode": bad.reshape(-1)}, eaten


def snake_coverage(ref: dict, rec: Record) -> Counter:
    return Counter(
        apples=int(ref["eats"].sum()),
        deaths=int(ref["dead"].sum()),
        full_boards=int(ref["won"].sum()),
        truncations=int(rec.truncated.sum()),
        terminated_and_truncated=int((rec.terminated & rec.truncated).sum()),
    )


def check_snake(setting: dict, seed: int, worlds: int, chunks: int, steps: int) -> tuple[int, Counter, Counter]:
    """Play `worlds` Snake worlds (half from reset, half random boards) `chunks * steps` steps, checking every
    state and step: (transitions checked, broken invariants by name, coverage)."""
    env, params = snake_env(setting["size"]), setting["params"]
    env.check_params(SnakeParams(**params))
    half = snake_boards(env, params, np.random.default_rng(seed), worlds - worlds // 2, chunks * steps)
    boards = jax.tree.map(lambda b: np.concatenate([b, b])[:worlds], half)
    faults, coverage = Counter(), Counter(max_length=0)
    runs = play(
        env, snake_policy, SnakeParams(**params), boards, jax.random.key(seed), setting["weights"], chunks, steps
    )
    for start, pre, trace in runs:
        if start is not None:
            first, codes = start
            tally(faults, snake_state_faults(env, params, first, codes))
            eaten = first.length - START_LENGTH
        rec = flat(trace)
        tally(faults, snake_state_faults(env, params, rec.state, rec.obs))
        tally(faults, snake_step_faults(env, params, pre, rec))
        apple_faults, eaten = snake_apple_faults(trace, params["reward_apple"], eaten)
        tally(faults, apple_faults)
        coverage.update(snake_coverage(snake_reference_step(env, pre, rec.action), rec))
        coverage["max_length"] = max(coverage["max_length"], int(rec.state.length.max()))
    return worlds * chunks * steps, faults, coverage


@given(snake_settings(SNAKE_SIZES), SEEDS)
@FAST
def test_snake_random_play_keeps_its_invariants(setting, seed):
    _, faults, _ = check_snake(setting, seed, worlds=64, chunks=1, steps=48)
    assert_clean(faults, f"snake {setting}")


# -- Grid world ---------------------------------------------------------------------------------


@cache
def grid_env(size: int, num_agents: int, view: int) -> GridWorld:
    return GridWorld(size=size, num_agents=num_agents, view=view)


@st.composite
def grid_settings(draw, num_agents: int, shapes: list[tuple[int, int]]) -> dict:
    """Map size and view, EnvParams within check_params's ranges (rewards of moderate size), action weights."""
    size, view = draw(st.sampled_from([(s, v) for s, v in shapes if num_agents <= s * s // 2]))
    # Any finite float32 is accepted, but huge pairs overflow their sum and XLA on CPU flushes subnormals to zero.
    reward = st.floats(-1e6, 1e6, width=32, allow_subnormal=False)
    step, collect = draw(st.tuples(reward, reward).filter(distinct_sum))
    return {
        "size": size,
        "num_agents": num_agents,
        "view": view,
        "params": {
            "max_steps_in_episode": draw(
                st.one_of(st.integers(size, 4 * size), st.integers(size, INT32_MAX), st.just(INT32_MAX))
            ),
            "regrow_delay": draw(st.one_of(st.integers(1, 8), st.integers(1, 32767), st.just(32767))),
            "reward_collect": collect,
            "reward_step": step,
            "wall_density": draw(st.floats(0, 1)),
            "resource_density": draw(st.floats(0, 1)),
        },
        "weights": [float(w) for w in draw(st.lists(st.integers(0, 3), min_size=6, max_size=6).filter(any))],
    }


def distinct_sum(rewards: tuple[float, float]) -> bool:
    """step + collect (in float32) differs from step, and is zero or a normal float."""
    step, both = np.float32(rewards[0]), np.float32(rewards[0]) + np.float32(rewards[1])
    return bool(both != step and (both == 0 or abs(both) >= np.finfo(np.float32).tiny))


def pack_rows(cells: np.ndarray) -> np.ndarray:
    """(..., size, size) bool -> (..., size) uint32 row words, bit c for column c."""
    return (cells.astype(np.uint32) << np.arange(cells.shape[-1], dtype=np.uint32)).sum(-1, dtype=np.uint32)


def unpack_rows(words: np.ndarray, size: int) -> np.ndarray:
    """(..., size) uint32 row words -> (..., size, size) bool."""
    words = np.ascontiguousarray(words, dtype="<u4")  # its 4 bytes, lowest first: bit c is byte c // 8's bit c % 8
    bits = np.unpackbits(words.view(np.uint8).reshape(*words.shape, 4), axis=-1, bitorder="little")
    return bits[..., :size].astype(bool)


def grid_boards(env: GridWorld, params: dict, rng: np.random.Generator, count: int, reach: int) -> GridState:
    """`count` random live maps: per-map wall and source densities, units pending regrowth, agents on distinct
    free cells (some on sources), counters anywhere below their limits."""
    size, k, shape = env.size, env.num_agents, (count, env.size, env.size)
    density = lambda: rng.random((count, 1, 1))
    walls = rng.random(shape) < density()
    start = np.argsort(rng.random((count, size * size)), axis=1)[:, :k]
    row, col = start // size, start % size
    walls[np.arange(count)[:, None], row, col] = False
    sources = (rng.random(shape) < density()) & ~walls
    delay = params["regrow_delay"]
    timer = np.where(sources & (rng.random(shape) < 0.5), rng.integers(1, delay + 1, shape), 0).astype(np.int16)
    time_ = counters_near(params["max_steps_in_episode"], rng, count, reach)
    # An agent collects at most every other step; the cap keeps info["score"], their sum, inside int32.
    cap = np.minimum((time_ + 1) // 2, INT32_MAX // k - 1)
    next_walls = rng.random(shape) < density()
    return GridState(
        walls=pack_rows(walls),
        sources=pack_rows(sources),
        present=pack_rows(sources & (timer == 0)),
        timer=timer,
        row=row.astype(np.int32),
        col=col.astype(np.int32),
        inventory=rng.integers(0, cap[:, None] + 1, (count, k)).astype(np.int32),
        time=time_.astype(np.int32),
        next_walls=pack_rows(next_walls),
        next_sources=pack_rows((rng.random(shape) < density()) & ~next_walls),
    )


def grid_expected_obs(
    env: GridWorld, walls: np.ndarray, present: np.ndarray, row: np.ndarray, col: np.ndarray
) -> np.ndarray:
    """(N, agents * view * view) codes of the docstring's view from (N, size, size) maps and (N, agents)
    positions: wall (beyond the border too) 1, resource 2, another agent 4, self 8 (the centre)."""
    n, view, half = len(walls), env.view, env.view // 2
    agents = np.zeros_like(walls)
    agents[np.arange(n)[:, None], row, col] = True
    cells = walls.astype(np.uint8) | present.astype(np.uint8) << 1 | agents.astype(np.uint8) << 2
    cells = np.pad(cells, ((0, 0), (half, half), (half, half)), constant_values=1)  # beyond the border: wall
    # Each agent's view is the window whose top-left corner is its cell in padded coordinates: one gather
    # of whole windows (a gather of single cells took most of this check's time).
    windows = np.lib.stride_tricks.sliding_window_view(cells, (view, view), axis=(1, 2))
    code = windows[np.arange(n)[:, None], row, col]  # (N, agents, view, view), a copy
    code[..., half, half] = (code[..., half, half] & ~np.uint8(4)) | 8  # the centre: itself, not another agent
    return code.reshape(n, -1)


def grid_state_faults(env: GridWorld, params: dict, s: GridState, code: np.ndarray) -> Faults:
    """Invariants of live grid states (N,) and their observations (N, agents * view * view)."""
    size = env.size
    walls, sources, present = (unpack_rows(w, size) for w in (s.walls, s.sources, s.present))
    inside = (0 <= s.row) & (s.row < size) & (0 <= s.col) & (s.col < size)
    row, col = np.clip(s.row, 0, size - 1), np.clip(s.col, 0, size - 1)
    cell = row * size + col
    shared = (cell[:, :, None] == cell[:, None, :]) & ~np.eye(env.num_agents, dtype=bool)
    next_overlap = unpack_rows(s.next_walls & s.next_sources, size)
    spill = [(w >> size) != 0 for w in (s.walls, s.sources, s.present, s.next_walls, s.next_sources)]
    resting = sources & (s.timer == 0)
    return {
        "grid: agents on the board": ~inside.all(1),
        "grid: agents never on a wall": walls[np.arange(len(row))[:, None], row, col].any(1),
        "grid: agents never share a cell": shared.any((1, 2)),
        "grid: maps well formed": (walls & sources).any((1, 2)) | next_overlap.any((1, 2)) | np.any(spill, axis=(0, 2)),
        "grid: units present == sources not regrowing": (present != resting).any((1, 2))
        | ((s.timer != 0) & ~sources).any((1, 2))
        | ((s.timer < 0) | (s.timer > params["regrow_delay"])).any((1, 2)),
        "grid: counters within the limits": (s.time < 0)
        | (s.time >= params["max_steps_in_episode"])
        | (s.inventory < 0).any(1)
        | (s.inventory > s.time[:, None]).any(1),
        "grid: observation matches the state": (code != grid_expected_obs(env, walls, present, row, col)).any(1),
    }


def grid_reference_moves(env: GridWorld, walls: np.ndarray, pre: GridState, action: np.ndarray) -> tuple:
    """The docstring's conflict rule, agent by agent: a move fails into a wall, off the map, onto a cell an
    agent held at the start of the step, or onto a cell a lower-indexed agent moves into. (rows, cols, moved)."""
    size, n = env.size, len(action)
    to_row, to_col = pre.row + np.array(GRID_DROW)[action], pre.col + np.array(GRID_DCOL)[action]
    inside = (0 <= to_row) & (to_row < size) & (0 <= to_col) & (to_col < size)
    open_ = inside & ~walls[np.arange(n)[:, None], np.clip(to_row, 0, size - 1), np.clip(to_col, 0, size - 1)]
    target, now = to_row * size + to_col, pre.row * size + pre.col
    held = (target[:, :, None] == now[:, None, :]).any(2)
    moved = np.zeros(action.shape, bool)
    for k in range(env.num_agents):
        lower = (moved[:, :k] & (target[:, :k] == target[:, k : k + 1])).any(1)
        moved[:, k] = (action[:, k] >= 1) & (action[:, k] <= 4) & open_[:, k] & ~held[:, k] & ~lower
    return np.where(moved, to_row, pre.row), np.where(moved, to_col, pre.col), moved


def grid_reference_step(env: GridWorld, params: dict, pre: GridState, action: np.ndarray) -> dict[str, np.ndarray]:
    """The docstring's step from states (N,): moves, collections and regrowth, before any reset."""
    size, rows = env.size, np.arange(len(action))[:, None]
    walls, sources, present = (unpack_rows(w, size) for w in (pre.walls, pre.sources, pre.present))
    row, col, moved = grid_reference_moves(env, walls, pre, action)
    gained = (action == COLLECT) & present[rows, row, col]  # collecting is not a move: the agent's own cell
    taken = np.zeros_like(present)
    taken[rows, row, col] = gained
    delay = min(max(params["regrow_delay"], 1), 32767)
    return {
        "walls": walls,
        "present": present,
        "row": row,
        "col": col,
        "moved": moved,
        "gained": gained,
        "delay": delay,
        "regrown": (present & ~taken) | (sources & (pre.timer == 1)),
        "timer": np.where(taken, delay, np.maximum(pre.timer - 1, 0)),
        "inventory": pre.inventory.astype(np.int64) + gained,
    }


def grid_collect_faults(env: GridWorld, params: dict, ref: dict, rec: Record) -> Faults:
    """Rewards within their bounds, and no unit collected twice: collections are read from the rewards."""
    n, k, size = len(rec.action), env.num_agents, env.size
    rows, done = np.arange(n)[:, None], rec.terminated | rec.truncated
    reward = rec.reward.reshape(n, k)
    step = np.float32(params["reward_step"])
    both = step + np.float32(params["reward_collect"])
    collected = reward == both
    row, col = ref["row"], ref["col"]
    cell = np.where(collected, row * size + col, -1 - np.arange(k))  # distinct unless two collect one cell
    twice = (collected.sum(1) > ref["present"].sum((1, 2))) | ((cell[:, :, None] == cell[:, None, :]).sum((1, 2)) > k)
    twice |= (collected & ~ref["present"][rows, row, col]).any(1)
    post_present = unpack_rows(rec.state.present, size)[rows, row, col]
    refilled = ~done[:, None] & (post_present | (rec.state.timer[rows, row, col] != ref["delay"]))
    centre = rec.final.reshape(n, k, -1)[:, :, (env.view * env.view) // 2]  # the collector's own cell, reached
    return {
        "grid: reward in {step, step + collect}": ~np.isin(reward, [step, both]).all(1),
        "grid: reward is the units collected": (reward != np.where(ref["gained"], both, step)).any(1),
        "grid: a unit never collected twice": twice,
        "grid: a collected cell becomes empty": (collected & (refilled | ((centre & 2) != 0))).any(1),
    }


def grid_map_faults(env: GridWorld, pre: GridState, rec: Record) -> np.ndarray:
    """(N,) bool: an episode keeps its map; the next map changes only in row time % size; a new episode
    plays the next map, cleared under its agents, with every unit present and nothing collected."""
    size, post, done = env.size, rec.state, rec.terminated | rec.truncated
    redrawn = np.arange(size) == (pre.time % size)[:, None]
    changed = ((post.next_walls != pre.next_walls) | (post.next_sources != pre.next_sources)) & ~redrawn
    agents = np.zeros((len(done), size, size), bool)
    agents[np.arange(len(done))[:, None], np.clip(post.row, 0, size - 1), np.clip(post.col, 0, size - 1)] = True
    fresh = lambda words, next_words: unpack_rows(words, size) != (unpack_rows(next_words, size) & ~agents)
    restart = (post.inventory != 0).any(1) | (post.timer != 0).any((1, 2)) | (post.present != post.sources).any(1)
    restart |= fresh(post.walls, post.next_walls).any((1, 2)) | fresh(post.sources, post.next_sources).any((1, 2))
    kept = (post.walls == pre.walls).all(1) & (post.sources == pre.sources).all(1)
    return changed.any(1) | (~done & ~kept) | (done & restart)


def grid_step_faults(env: GridWorld, params: dict, pre: GridState, rec: Record) -> Faults:
    """Invariants of steps (N,) from `pre` to `rec.state` (after any auto-reset)."""
    n, k, post = len(rec.action), env.num_agents, rec.state
    ref = grid_reference_step(env, params, pre, rec.action.reshape(n, k))
    done = rec.terminated | rec.truncated
    regrowth = (unpack_rows(post.present, env.size) != ref["regrown"]) | (post.timer != ref["timer"])
    limit = pre.time.astype(np.int64) + 1 >= params["max_steps_in_episode"]
    final = grid_expected_obs(env, ref["walls"], ref["regrown"], ref["row"], ref["col"])
    return {
        **grid_collect_faults(env, params, ref, rec),
        "grid: agents move by the conflict rule": ~done & ((post.row != ref["row"]) | (post.col != ref["col"])).any(1),
        "grid: regrowth after the delay": ~done & regrowth.any((1, 2)),
        "grid: inventory and score count the units": (~done & (post.inventory != ref["inventory"]).any(1))
        | (rec.score != ref["inventory"].sum(1)),
        "grid: never terminated": rec.terminated,
        "grid: truncated == the step limit reached": rec.truncated != limit,
        "grid: terminated and truncated never both set": rec.terminated & rec.truncated,
        "grid: time counts the episode's steps": post.time != np.where(done, 0, pre.time.astype(np.int64) + 1),
        "grid: the map stays; the next map changes a row a step": grid_map_faults(env, pre, rec),
        "grid: final observation is the step's": (rec.final != final).any(1),
    }


def grid_coverage(env: GridWorld, ref: dict, rec: Record) -> Counter:
    n, k = len(rec.action), env.num_agents
    action = rec.action.reshape(n, k)
    return Counter(
        units_collected=int(ref["gained"].sum()),
        moves=int(ref["moved"].sum()),
        moves_refused=int(((action >= 1) & (action <= 4) & ~ref["moved"]).sum()),
        truncations=int(rec.truncated.sum()),
    )


def check_grid(setting: dict, seed: int, worlds: int, chunks: int, steps: int) -> tuple[int, Counter, Counter]:
    """Play `worlds` grid worlds (half from reset, half random maps) `chunks * steps` steps, checking every
    state and step: (transitions checked, broken invariants by name, coverage)."""
    env = grid_env(setting["size"], setting["num_agents"], setting["view"])
    params = setting["params"]
    env.check_params(GridParams(**params))
    boards = grid_boards(env, params, np.random.default_rng(seed), worlds, chunks * steps)
    faults, coverage = Counter(), Counter()
    runs = play(env, grid_policy, GridParams(**params), boards, jax.random.key(seed), setting["weights"], chunks, steps)
    for start, pre, trace in runs:
        if start is not None:
            tally(faults, grid_state_faults(env, params, *start))
        rec = flat(trace)
        tally(faults, grid_state_faults(env, params, rec.state, rec.obs))
        tally(faults, grid_step_faults(env, params, pre, rec))
        ref = grid_reference_step(env, params, pre, rec.action.reshape(len(rec.action), -1))
        coverage.update(grid_coverage(env, ref, rec))
    return worlds * chunks * steps, faults, coverage


@pytest.mark.parametrize("num_agents", [1, 2, 5, 8])
def test_grid_random_play_keeps_its_invariants(num_agents):
    @given(grid_settings(num_agents, GRID_SHAPES[num_agents]), SEEDS)
    @FAST
    def example(setting, seed):
        _, faults, _ = check_grid(setting, seed, worlds=32, chunks=1, steps=32)
        assert_clean(faults, f"grid {setting}")

    example()


# -- counters at the int32 limit -------------------------------------------------------------------

LIMITS = st.one_of(st.just(INT32_MAX), st.integers(1, INT32_MAX), st.integers(1, 8))


def first_truncation(truncated: np.ndarray) -> np.ndarray:
    """(worlds,) index of the first truncated step in (steps, worlds) flags, or -1."""
    return np.where(truncated.any(0), truncated.argmax(0), -1)


@given(LIMITS, LIMITS)
@settings(FAST, max_examples=20)
def test_snake_counters_at_the_int32_limit_truncate_and_reset(max_steps, hunger_limit):
    """World j starts j + 1 steps short of its nearest limit (up to 2**31 - 1, the most check_params allows)
    and walks right, safely: it is truncated exactly then, its counters reset, and none goes negative."""
    env, params = snake_env(16), {"max_steps_in_episode": max_steps, "hunger_limit": hunger_limit}
    params |= {"reward_apple": 1.0, "reward_death": -1.0, "reward_step": 0.0}
    worlds, steps = 4, 6
    time_ = [max(max_steps - 1 - j, 0) for j in range(worlds)]
    hunger = [min(max(hunger_limit - 1 - j, 0), time_[j]) for j in range(worlds)]
    states = [env.make_state([(8, 4), (8, 3), (8, 2)], (0, 0), 1, hunger[j], time_[j]) for j in range(worlds)]
    boards = jax.device_get(jax.tree.map(lambda *x: jnp.stack(x), *states))
    faults = Counter()
    runs = play(env, snake_policy, SnakeParams(**params), boards, jax.random.key(0), [0, 1, 0, 0, 0], 1, steps, False)
    for (first, codes), pre, trace in runs:
        tally(faults, snake_state_faults(env, params, first, codes))
        tally(faults, snake_state_faults(env, params, flat(trace).state, flat(trace).obs))
        tally(faults, snake_step_faults(env, params, pre, flat(trace)))
    assert_clean(faults, "snake at the counter limits")
    left = np.minimum(max_steps - np.array(time_), hunger_limit - np.array(hunger))  # steps to the first limit
    np.testing.assert_array_equal(first_truncation(trace.truncated), left - 1)
    assert not (trace.terminated & (np.arange(steps)[:, None] < left)).any()  # the walk is safe: pure truncations
    assert (trace.state.time[left - 1, np.arange(worlds)] == 0).all()  # reset
    assert (trace.state.time >= 0).all() and (trace.state.hunger >= 0).all()


@given(st.one_of(st.just(INT32_MAX), st.integers(4, INT32_MAX), st.integers(4, 12)))
@settings(FAST, max_examples=20)
def test_grid_counters_at_the_int32_limit_truncate_and_reset(max_steps):
    """World j starts j + 1 steps short of `max_steps` (up to 2**31 - 1), agents collecting with the longest
    regrowth check_params allows (32767, the int16 timer's maximum): truncated exactly then, time reset."""
    env = grid_env(4, 2, 3)
    params = {"max_steps_in_episode": max_steps, "regrow_delay": 32767, "reward_collect": 1.0, "reward_step": 0.0}
    params |= {"wall_density": 0.2, "resource_density": 0.5}
    worlds, steps = 4, 6
    time_ = np.array([max(max_steps - 1 - j, 0) for j in range(worlds)])
    picture = ["0R..", "R...", "..1.", "...#"]  # agent 1 stands on a unit
    boards = [env.make_state(picture, {(2, 2): 0}, int(time_[j])) for j in range(worlds)]
    boards = jax.device_get(jax.tree.map(lambda *x: jnp.stack(x), *boards))
    # As many units as the episode could have held (one every other step), their sum inside int32.
    inventory = np.minimum(time_ // 2, INT32_MAX // 2 - 1)[:, None].repeat(2, 1)
    boards = boards.replace(inventory=inventory.astype(np.int32))
    faults = Counter()
    runs = play(env, grid_policy, GridParams(**params), boards, jax.random.key(0), [0, 0, 0, 0, 0, 1], 1, steps, False)
    for (first, codes), pre, trace in runs:
        tally(faults, grid_state_faults(env, params, first, codes))
        tally(faults, grid_state_faults(env, params, flat(trace).state, flat(trace).obs))
        tally(faults, grid_step_faults(env, params, pre, flat(trace)))
    assert_clean(faults, "grid at the counter limits")
    left = max_steps - time_  # steps to the limit
    np.testing.assert_array_equal(first_truncation(trace.truncated), left - 1)
    assert (trace.state.time[left - 1, np.arange(worlds)] == 0).all()  # reset
    assert (trace.state.time >= 0).all() and (trace.state.timer >= 0).all()
    assert int(trace.state.timer[0, -1, 2, 2]) == 32767  # agent 1 took the unit under it (the last world runs on)


# -- a Snake bug these checks found ----------------------------------------------------------------


@pytest.mark.parametrize("cells,direction", [([(3, 0), (3, 1), (3, 2)], 3), ([(2, 5), (2, 4), (2, 3)], 1)])
def test_snake_leaving_the_board_shows_no_head_and_no_phantom_cell(cells, direction):
    """The board a death off the board reaches (info["final_observation"], what Gymnasium's adapter
    renders) showed a body cell at (0, 0) and, leaving sideways, the head wrapped onto the next or the
    previous row: the off-board head was stored as cell 0 and drawn at row * size + col."""
    env, params = snake_env(6), SnakeParams()
    state = env.make_state(cells, apple=(5, 5), direction=direction)
    _, _, reward, terminated, _, info = env.step(jax.random.key(0), state, jnp.int32(direction), params)
    final = np.asarray(info["final_observation"])
    assert bool(terminated) and float(reward) == params.reward_death
    assert final[..., 0].sum() == 0  # the head left the board
    assert {tuple(rc) for rc in np.argwhere(final[..., 1])} == set(cells[:2])  # the body, the tail's cell freed
    assert final[..., 2].sum() == 1 and final[5, 5, 2] == 1


# -- the checks can fail ---------------------------------------------------------------------------


def pick(mask: np.ndarray) -> int:
    """The first transition where `mask` holds (the fixed seeds below make every mask hold somewhere)."""
    assert mask.any(), "the clean trace has no transition to corrupt"
    return int(np.flatnonzero(mask)[0])


def edit(field: str, index: Any, change: Any) -> Callable[[Record], None]:
    """A corruption of a flat Record: `field` (dotted) at `index` becomes `change(old)`, or `change`."""

    def corrupt(rec: Record) -> None:
        array = rec
        for name in field.split("."):
            array = getattr(array, name)
        array[index] = change(array[index]) if callable(change) else change

    return corrupt


def assert_each_check_fires(faults_of: Callable, trace: Record, corruptions: dict[str, list[Callable]]) -> None:
    """The clean trace breaks nothing; each invariant has a corruption, and that corruption breaks it."""
    clean = faults_of(trace)
    assert not any(clean.values()), f"the clean trace breaks {clean}"
    assert set(corruptions) == set(clean), "every invariant needs a corruption"
    missed = []
    for name, edits in corruptions.items():
        broken = jax.tree.map(np.copy, trace)
        for corrupt in edits:
            corrupt(flat(broken))  # flat() gives views: the stacked copy changes too
        if not faults_of(broken)[name]:
            missed.append(name)
    assert not missed, f"corrupting these went unnoticed: {missed}"


def test_checks_catch_corrupted_snake_traces():
    env, weights = snake_env(5), [1.0, 1.0, 1.0, 1.0, 0.6]
    params = {"max_steps_in_episode": 30, "hunger_limit": 12, "reward_apple": 1.0, "reward_death": -1.0}
    params["reward_step"] = -0.01
    boards = snake_boards(env, params, np.random.default_rng(0), 32, 40)
    runs = play(env, snake_policy, SnakeParams(**params), boards, jax.random.key(3), weights, 1, 40)
    (first, _), pre, trace = next(runs)
    clean = flat(trace)
    ref, done = snake_reference_step(env, pre, clean.action), clean.terminated | clean.truncated

    def faults_of(trace: Record) -> Counter:
        rec, out = flat(trace), Counter()
        tally(out, snake_state_faults(env, params, rec.state, rec.obs))
        tally(out, snake_step_faults(env, params, pre, rec))
        tally(out, snake_apple_faults(trace, params["reward_apple"], first.length - START_LENGTH)[0])
        return out

    n = pick(~done)
    empty_cell = np.flatnonzero(clean.obs[n] == 0)[0]
    tail_bit = pack_cells(np.arange(env.num_cells) == clean.state.tail[n], env.num_words)
    full = pack_cells(np.ones(env.num_cells, bool), env.num_words)
    corruptions = {
        "snake: one head, on the board and on the body": [edit("obs", (n, empty_cell), 1)],
        "snake: length == occupied cells": [edit("state.length", n, lambda v: v + 1)],
        "snake: board never over-full": [edit("state.occupied", n, full), edit("state.length", n, env.num_cells)],
        "snake: apple on a free cell": [edit("state.apple", n, clean.state.tail[n])],
        "snake: body is one chain from tail to head": [edit("state.link_lo", n, lambda w: w ^ tail_bit)],
        "snake: counters within the limits": [edit("state.hunger", n, params["hunger_limit"])],
        "snake: observation matches the state": [edit("obs", (n, clean.state.apple[n]), 0)],
        "snake: reward in {apple, death, step}": [edit("reward", n, 0.5)],
        "snake: reward is the step's outcome": [edit("reward", pick(ref["dead"]), params["reward_step"])],
        "snake: terminated == death or a full board": [edit("terminated", pick(~ref["dead"]), True)],
        "snake: truncated == a limit reached": [edit("truncated", pick(~clean.truncated), True)],
        "snake: score == length - 3": [edit("score", n, lambda v: v + 1)],
        "snake: the step moves the snake": [edit("state.time", n, lambda v: v - 1)],
        "snake: an ended episode restarts": [edit("state.length", pick(done), 4)],
        "snake: final observation is the board reached": [edit("final", (n, 0), lambda v: v ^ 2)],
        "snake: length == 3 + apples eaten this episode": [
            edit("reward", pick(~ref["eats"] & ~ref["dead"]), params["reward_apple"])
        ],
    }
    assert_each_check_fires(faults_of, trace, corruptions)


def test_checks_catch_corrupted_grid_traces():
    env, weights = grid_env(6, 5, 5), [1, 1, 1, 1, 1, 3]
    params = {"max_steps_in_episode": 20, "regrow_delay": 3, "reward_collect": 1.0, "reward_step": -0.1}
    params |= {"wall_density": 0.2, "resource_density": 0.5}
    boards = grid_boards(env, params, np.random.default_rng(0), 32, 30)
    runs = play(env, grid_policy, GridParams(**params), boards, jax.random.key(3), weights, 1, 30)
    _, pre, trace = next(runs)
    clean = flat(trace)
    ref, done = grid_reference_step(env, params, pre, clean.action), clean.terminated | clean.truncated

    def faults_of(trace: Record) -> Counter:
        rec, out = flat(trace), Counter()
        tally(out, grid_state_faults(env, params, rec.state, rec.obs))
        tally(out, grid_step_faults(env, params, pre, rec))
        return out

    n = pick(~done)
    grab = pick(~done & ref["gained"][:, 0])  # agent 0 collects and the episode goes on
    mover = pick(~done & ref["moved"][:, 0])
    on_empty = pick(~ref["present"][np.arange(len(done)), ref["row"][:, 0], ref["col"][:, 0]])
    row, col = clean.state.row[n, 0], clean.state.col[n, 0]  # agent 0's cell
    grab_row, grab_col = clean.state.row[grab, 0], clean.state.col[grab, 0]
    bit = lambda c: np.uint32(1) << np.uint32(c)
    redrawn_next = (pre.time[n] + 1) % env.size  # a row of the next map that this step must not change
    corruptions = {
        "grid: agents on the board": [edit("state.row", (n, 0), env.size)],
        "grid: agents never on a wall": [edit("state.walls", (n, row), lambda w: w | bit(col))],
        "grid: agents never share a cell": [edit("state.row", (n, 1), row), edit("state.col", (n, 1), col)],
        "grid: maps well formed": [edit("state.next_sources", n, clean.state.next_walls[n] | 1)],
        "grid: units present == sources not regrowing": [edit("state.timer", (n, 0, 0), params["regrow_delay"] + 1)],
        "grid: counters within the limits": [edit("state.time", n, params["max_steps_in_episode"])],
        "grid: observation matches the state": [edit("obs", (n, 0), lambda v: v ^ 2)],
        "grid: reward in {step, step + collect}": [edit("reward", (n, 0), 0.123)],
        "grid: reward is the units collected": [edit("reward", (grab, 0), params["reward_step"])],
        "grid: a unit never collected twice": [edit("reward", (on_empty, 0), np.float32(-0.1) + np.float32(1.0))],
        "grid: a collected cell becomes empty": [edit("state.present", (grab, grab_row), lambda w: w | bit(grab_col))],
        "grid: agents move by the conflict rule": [
            edit("state.row", (mover, 0), pre.row[mover, 0]),
            edit("state.col", (mover, 0), pre.col[mover, 0]),
        ],
        "grid: regrowth after the delay": [edit("state.present", n, lambda w: w ^ clean.state.sources[n])],
        "grid: inventory and score count the units": [edit("score", n, lambda v: v + 1)],
        "grid: never terminated": [edit("terminated", n, True)],
        "grid: truncated == the step limit reached": [edit("truncated", n, True)],
        "grid: terminated and truncated never both set": [edit("terminated", pick(done), True)],
        "grid: time counts the episode's steps": [edit("state.time", n, lambda v: v - 1)],
        "grid: the map stays; the next map changes a row a step": [
            edit("state.next_walls", (n, redrawn_next), lambda w: w ^ 1)
        ],
        "grid: final observation is the step's": [edit("final", (n, 0), lambda v: v ^ 1)],
    }
    assert_each_check_fires(faults_of, trace, corruptions)


# -- a million transitions each (slow) ------------------------------------------------------------


def record_result(name: str, result: dict) -> None:
    """Print `result`, and merge it under `name` into the JSON file JAXRL_PROPERTY_RESULTS names, if set."""
    print(json.dumps({name: result}, indent=2))
    target = os.environ.get("JAXRL_PROPERTY_RESULTS")
    if not target:
        return
    path = Path(target)
    data = json.loads(path.read_text()) if path.exists() else {}
    data[name] = result
    scratch = path.with_name(path.name + ".tmp")  # bench/results/*.tmp is git-ignored
    scratch.write_text(json.dumps(data, indent=2) + "\n")
    scratch.replace(path)


def check_a_million(name: str, check: Callable, settings_strategy: st.SearchStrategy, env_settings: str) -> None:
    """Hypothesis draws SLOW's examples of `SLOW_WORLDS` worlds playing `SLOW_CHUNKS * SLOW_STEPS` steps; every
    transition is checked, a violation fails at once; what was checked is recorded."""
    from jaxrl.bench.machine import describe

    runs, start = [], time.perf_counter()

    @given(settings_strategy, SEEDS)
    @SLOW
    def example(setting, seed):
        transitions, faults, coverage = check(setting, seed, SLOW_WORLDS, SLOW_CHUNKS, SLOW_STEPS)
        assert_clean(faults, f"{name} {setting} seed={seed}")
        runs.append(
            {"settings": setting, "seed": seed, "transitions": transitions, "faults": faults, "coverage": coverage}
        )

    example()
    wall = time.perf_counter() - start
    faults, coverage = Counter(), Counter()
    for run in runs:
        faults.update(run.pop("faults"))
        for key, value in run.pop("coverage").items():  # counts add up; a "max_" is a maximum
            coverage[key] = max(coverage[key], value) if key.startswith("max_") else coverage[key] + value
    transitions = sum(run["transitions"] for run in runs)
    assert transitions >= 1_000_000 and not any(faults.values())
    record_result(
        name,
        {
            "transitions_checked": transitions,
            "violations": sum(faults.values()),
            "violations_by_invariant": dict(sorted(faults.items())),
            "env_settings": env_settings,
            "examples": runs,
            "worlds_per_example": SLOW_WORLDS,
            "steps_per_world": SLOW_CHUNKS * SLOW_STEPS,
            "coverage": dict(coverage),
            "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "wall_s": round(wall, 1),
            "command": "JAXRL_PROPERTY_RESULTS=bench/results/property_suite.json"
            " python -m pytest -m slow tests/envs/test_properties.py",
            "machine": describe(),
        },
    )


@pytest.mark.slow
def test_snake_a_million_random_transitions_keep_the_invariants():
    what = f"size from {SLOW_SNAKE_SIZES}; EnvParams drawn by hypothesis within check_params (see examples)"
    check_a_million("snake", check_snake, snake_settings(SLOW_SNAKE_SIZES), what)


@pytest.mark.slow
@pytest.mark.optimized  # a million 8-agent steps: running, not compiling, takes the time (docs/tests.md)
def test_grid_a_million_random_transitions_with_8_agents_keep_the_invariants():
    what = f"8 agents; (size, view) from {SLOW_GRID_SHAPES}; EnvParams drawn by hypothesis within check_params"
    check_a_million("grid", check_grid, grid_settings(8, SLOW_GRID_SHAPES), what)
