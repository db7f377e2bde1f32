"""What both open arenas share (Battlesnake's rules in envs/arena_open.py, PufferLib's in envs/arena_puffer.py):
a world that never resets, stepped as many worlds on one flat board (envs/flat.py).

`OpenWorld` is the step's skeleton: the episode window (truncated every `max_steps_in_episode` steps,
never terminated), the action check, the window's counters, rewards, info and views per world. An
arena fills in `_move`, its rules for one step of every snake on the flat board, and `views`.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import spaces

from jaxrl.envs import controls
from jaxrl.envs.base import Env
from jaxrl.envs.checks import check_int_setting
from jaxrl.envs.flat import FlatWorlds


def check_view(view: Any) -> None:
    """ValueError unless `view` (a snake's crop is view x view) is an odd integer from 3 to 63."""
    if not isinstance(view, int) or isinstance(view, bool) or not 3 <= view <= 63 or view % 2 == 0:
        raise ValueError(f"arena_open view must be an odd integer from 3 to 63, got {view!r}")


def check_board(width: Any, height: Any, least: int) -> None:
    """ValueError unless `width` and `height` are integers from `least` to 4096 and the map at most 2**22 cells."""
    check_int_setting("arena_open width", width, least, 4096)
    check_int_setting("arena_open height", height, least, 4096)
    if width * height > 1 << 22:
        raise ValueError(f"arena_open width x height must be at most {1 << 22} cells, got {width} x {height}")


class FlatSnakes:
    """Every snake of W worlds on their flat board, world by world: snake k of world w at w * num_snakes + k."""

    def __init__(self, num_snakes: int, worlds: int, cells: int):
        self.num_snakes, self.worlds = num_snakes, worlds
        self.world = jnp.repeat(jnp.arange(worlds, dtype=jnp.int32), num_snakes)  # (W * n,) each snake's world
        self.ids = jnp.tile(jnp.arange(num_snakes, dtype=jnp.int32), worlds)  # (W * n,) its number in its world
        self.base = self.world * cells  # (W * n,) its world's first cell on the flat board
        self.nowhere = jnp.int32(worlds * cells)  # an index past the boards: scatters drop it

    @staticmethod
    def flat(x: jax.Array) -> jax.Array:
        """A (W, ...) leaf as one flat axis: (W * n,) for per-snake leaves, (W * cells,) for boards."""
        return x.reshape(-1)

    def per_snake(self, x: jax.Array) -> jax.Array:
        """(W * n,): a parameter (one per world) for each snake."""
        return jnp.repeat(jnp.asarray(x), self.num_snakes)

    def per_world(self, x: jax.Array) -> jax.Array:
        """(W, n): a per-snake value by world."""
        return x.reshape(self.worlds, self.num_snakes)


class Moved(NamedTuple):
    """One step of an arena's rules on the flat board (`_move`); per-snake fields are (W * n,)."""

    state: Any  # the stepped state, every leaf with its (W,) axis, but for `deaths`, `eaten` and `time`
    reward: jax.Array  # float32
    dies: jax.Array  # bool, died on this step
    eats: jax.Array  # bool, ate on this step (counted in the window's `eaten`)
    alive: jax.Array  # bool, alive after the step (births included)
    length: jax.Array  # int32 (any value while not alive)
    obs: jax.Array  # (W, n, view, view) uint8 views of the stepped boards


class OpenWorld(FlatWorlds, Env):
    """Base of the open arenas: `num_snakes` learning snakes in one world that goes on forever.

    A subclass sets `num_snakes` (= `num_agents`), `num_cells` (a world's flat board), `view` and
    `observation_codes`, and fills in `_move` (its rules on the flat board), `views` and `reset_env`;
    its state has `deaths`, `eaten` and `time` (int32 scalars), its params `max_steps_in_episode`.
    """

    name = "arena_open"  # both rule sets are `env=arena_open` (`env.rules` picks one)

    @partial(jax.jit, static_argnames=("self",))
    def step(self, key: jax.Array, state: Any, action: jax.Array, params: Any = None):
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

    def step_env(self, key: jax.Array, state: Any, action: jax.Array, params: Any):
        action = jnp.asarray(action, jnp.int32)
        if action.shape != (self.num_snakes,) and not (self.num_snakes == 1 and action.shape == ()):
            raise ValueError(
                f"arena_open with num_snakes={self.num_snakes} takes actions of shape ({self.num_snakes},)"
            )
        # One world's step through `_step_worlds`; its vmap steps all the worlds as one flat board (envs/flat.py).
        return self._stepper(key, state, action.reshape(self.num_snakes), params)

    def _step_worlds(self, keys, state, action, params):
        """step_env for W worlds at once (every leaf with a leading (W,) axis), as one flat board of W x cells:
        the rules' `_move`, then the window's counters, rewards, score and views by world."""
        snakes = FlatSnakes(self.num_snakes, action.shape[0], self.num_cells)
        moved = self._move(keys, state, snakes.flat(action), params, snakes)
        new_state = moved.state.replace(
            deaths=state.deaths + snakes.per_world(moved.dies).sum(1),
            eaten=state.eaten + snakes.per_world(moved.eats).sum(1),
            time=state.time + 1,
        )
        live = jnp.maximum(snakes.per_world(moved.alive).sum(1), 1)
        info = {
            "score": snakes.per_world(jnp.where(moved.alive, moved.length, 0)).sum(1).astype(jnp.float32) / live,
            "deaths": new_state.deaths,
            "eaten": new_state.eaten,
        }
        reward, obs = snakes.per_world(moved.reward), moved.obs
        if self.num_snakes == 1:
            reward, obs = reward[:, 0], obs[:, 0]
        return obs, new_state, reward, jnp.zeros(snakes.worlds, bool), info

    def _move(self, keys: jax.Array, state: Any, action: jax.Array, params: Any, snakes: FlatSnakes) -> Moved:
        """The rules: every snake of W worlds moved once, (W * n,) actions; keys, state and params by world."""
        raise NotImplementedError  # pragma: no cover - each arena defines it

    def is_terminal(self, state: Any, params: Any) -> jax.Array:
        return jnp.zeros((), bool)

    def is_truncated(self, state: Any, params: Any) -> jax.Array:
        return state.time % params.max_steps_in_episode == 0

    # -- observation ----------------------------------------------------------------------

    def observation_space(self, params: Any = None) -> spaces.Box:
        shape = (self.view, self.view) if self.num_agents == 1 else (self.num_agents, self.view, self.view)
        return spaces.Box(0, self.observation_codes - 1, shape, jnp.uint8)

    def get_obs(self, state: Any, params: Any = None, key: jax.Array | None = None) -> jax.Array:
        views = self.views(state)
        return views[0] if self.num_snakes == 1 else views

    def views(self, state: Any) -> jax.Array:
        """(num_snakes, view, view) uint8: each snake's crop around its head (zeros while it waits)."""
        raise NotImplementedError  # pragma: no cover - each arena defines it

    # -- a person at the play page: the first snakes of the first world -------------------

    SHOWN = 8  # seats the page lists (of up to hundreds of snakes)

    def seat_status(self, state: Any) -> list[dict]:
        from jaxrl.envs.arena import SNAKE_COLOURS

        length = np.asarray(state.length)
        alive = np.asarray(state.alive) if hasattr(state, "alive") else length > 0
        return [
            {
                "colour": list(SNAKE_COLOURS[k % len(SNAKE_COLOURS)]),
                "length": int(length[k]),
                "alive": bool(alive[k]),
                "placement": 0,
            }
            for k in range(min(self.SHOWN, len(length)))
        ]

    def action_names(self) -> tuple[str, ...]:
        return controls.RELATIVE

    def person_action(self, state: Any, seat: int, move: str | None) -> int:
        return controls.turn(int(np.asarray(state.heading)[seat]), move) + 1

    def result_line(self, info: dict, names: list[str], you: int | None) -> str:
        return f"a window of the world ended: mean length {float(np.asarray(info['score'])):.1f}"


__all__ = ["FlatSnakes", "Moved", "OpenWorld", "check_board", "check_view"]
