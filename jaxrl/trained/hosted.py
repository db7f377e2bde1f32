"""Games stepped on the host one turn at a time, where some players answer from outside the compiled program.

Head-to-head games with an HTTP snake in them (`trained/headtohead.py`) and jaxrl as the host of Battlesnake
games (`battlesnake/host.py`) both play through `Host`: one loop, one timeout rule, one way of asking. Each seat
of the table is held by one of two kinds of player:

- an asked player (`start(request)`, `move(request) -> str | None`, `end(request)`): an HTTP snake
  (`trained/http.py`) or a served agent in this process. Each live seat it holds gets the env's `board_request`
  for that seat every turn, every asked seat at once; no answer (late, failed, invalid: None) repeats that
  seat's last move, "up" at first, as the engine does. Each gets `/start` and, at the end, `/end` with the final
  board for every seat it held;
- a compiled player (`Compiled`): a run's policy or one of the env's bots, acting for every seat at once while
  the asked players think.

A game ends when the env terminates it or at the step limit; with `sides` (head to head), also when fewer than
two sides (a game of one side: none) still hold a live seat.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.envs.base import hook

FIRST_MOVE = "up"  # the move a seat without one yet repeats (the engine's default)


@dataclasses.dataclass(eq=False)
class Compiled:
    """A player acting in every seat at once: `act(state, carry, key) -> (carry, (seats,) int actions)`."""

    name: str
    act: Callable[[Any, Any, jax.Array], tuple[Any, Any]]
    carry0: Any = None  # its memory at a game's start (a recurrent policy's, for every seat)


def asked(player: Any) -> bool:
    return not isinstance(player, Compiled)


class Host:
    """A table's rules and params compiled once (step, reset, seats alive, placements), for all its games."""

    def __init__(self, rules: Any, params: Any):
        self.rules, self.params, self.seats = rules, params, hook(rules, "num_seats")
        self._step = jax.jit(lambda k, s, a: rules.step_env(k, s, a, params)[1:4])  # (state, reward, terminated)
        self._reset = jax.jit(lambda k: rules.reset_env(k, params)[1])
        self._alive = jax.jit(hook(rules, "seat_alive"))
        self._place = jax.jit(hook(rules, "seat_placement"))

    def request(self, state: Any, seat: int, game: dict[str, Any], names: list[str] | None = None) -> dict:
        """The Battlesnake request the engine would send `seat` of concrete `state`, under this table's params."""
        return hook(self.rules, "board_request")(state, int(seat), game, names, self.params)

    def play(
        self,
        holders: list[Any],
        key: jax.Array,
        steps: int,
        game: dict[str, Any],
        names: list[str] | None = None,
        sides: np.ndarray | None = None,
        record: bool = False,
        log: bool = False,
    ) -> dict[str, Any]:
        """One game, seat k held by `holders[k]` (on side `sides[k]`, when given), from `key`, at most `steps`
        turns; `game` is the requests' game object (id, timeout). The final concrete state, seats alive,
        returns, placements (1 the best) and length; with `record` each turn's frame and concrete state, with
        `log` each turn's request (the first live seat's, as the official CLI's `-o` log keeps them)."""
        rules, seats = self.rules, self.seats
        if len(holders) != seats:
            raise ValueError(f"{len(holders)} holders for a table of {seats} seats")
        compiled = [p for p in dict.fromkeys(holders) if not asked(p)]
        held = {id(p): np.array([h is p for h in holders]) for p in compiled}
        carries = {id(p): p.carry0 for p in compiled}
        side_of = None if sides is None else np.asarray(sides)
        key, reset_key = jax.random.split(key)
        state = self._reset(reset_key)
        concrete, alive = jax.device_get(state), np.asarray(self._alive(state))
        request = lambda k: self.request(concrete, k, game, names)
        last, you = [FIRST_MOVE] * seats, {}  # each seat's last move, and its `you` when it was last asked
        returns, length, over = np.zeros(seats, np.float32), 0, False
        frames, states, lines = [], [], []
        with ThreadPoolExecutor(max_workers=seats) as pool:
            _each(pool, [(holders[k].start, request(k)) for k in np.flatnonzero(alive) if asked(holders[k])])
            while not over:
                if record:
                    frames.append(np.asarray(rules.render_rgb(state)))
                    states.append(concrete)
                bodies = {int(k): request(k) for k in np.flatnonzero(alive) if asked(holders[k])}
                you.update({k: body["you"] for k, body in bodies.items()})
                answers = {k: pool.submit(holders[k].move, body) for k, body in bodies.items()}
                if log:
                    first = int(np.flatnonzero(alive)[0])
                    lines.append(bodies.get(first) or request(first))
                key, step_key, act_key = jax.random.split(key, 3)  # the step's draws: whoever plays
                action = np.ones(seats, np.int32)
                for i, p in enumerate(compiled):
                    carries[id(p)], act = p.act(state, carries[id(p)], jax.random.fold_in(act_key, i))
                    action = np.where(held[id(p)], np.asarray(act, np.int32), action)
                for k, answer in answers.items():
                    last[k] = answer.result() or last[k]
                    action[k] = hook(rules, "board_action")(concrete, k, last[k])
                state, reward, terminated = self._step(step_key, state, jnp.asarray(action))
                concrete, alive = jax.device_get(state), np.asarray(self._alive(state))
                returns += np.asarray(reward, np.float32).reshape(seats)
                length += 1
                over = bool(terminated) or length >= steps
                if side_of is not None:
                    holding = np.unique(side_of[alive]).size
                    over = over or holding < min(2, np.unique(side_of).size)
            if record:
                frames.append(np.asarray(rules.render_rgb(state)))
                states.append(concrete)
            ends = []
            for k in sorted(you):
                body = request(k)  # the final board; a seat that is out keeps the `you` it was last asked with
                ends.append((holders[k].end, {**body, "you": body["you"] or you[k]}))
            _each(pool, ends)
        place = np.asarray(self._place(state, jnp.asarray(returns)))
        out = {"state": concrete, "alive": alive, "returns": returns, "place": place, "length": length}
        return {**out, "frames": frames, "states": states, "lines": lines}


def _each(pool: ThreadPoolExecutor, calls: list[tuple[Callable, Any]]) -> None:
    """Every `(f, request)` call at once, as the engine sends /start and /end."""
    for done in [pool.submit(f, body) for f, body in calls]:
        done.result()
