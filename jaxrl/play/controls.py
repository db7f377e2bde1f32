"""What the play page asks of the env it plays, through the env contract's hooks (envs/base.py): the actions'
names, a person's key as the env's action, the policy's numbers as the board lies, each seat's line beside the
board, and the game's end. Nothing here knows an env by its name, and no rule is decided here."""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxrl.envs.base import hook
from jaxrl.envs.controls import DIRECTIONS, MOVES, check_move

__all__ = ["DIRECTIONS", "MOVES", "action_names", "person_action", "result", "seats", "shown_actions"]


def action_names(env: Any) -> tuple[str, ...]:
    """The env's actions by name, in its action order."""
    return tuple(hook(env, "action_names")())


def person_action(env: Any, state: Any, seat: int, move: str | None) -> int:
    """The env action of a person's `move` (a direction, a turn, collect or stay; None: go on) at `seat`."""
    check_move(move)
    return int(hook(env, "person_action")(state, seat, move))


def shown_actions(env: Any, state: Any, names: tuple[str, ...], numbers: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The policy's numbers per action as the board lies (a mirrored Snake episode's left and right swapped back)."""
    return list(names), np.asarray(hook(env, "shown_numbers")(state, np.asarray(numbers, np.float64)))


def seats(env: Any, state: Any, names: list[str]) -> list[dict[str, Any]]:
    """Each seat for the page's list: its name, and what the env shows of it (colour, length, whether it is in)."""
    status = hook(env, "seat_status")(state)
    return [
        {**{k: v for k, v in status[k].items() if k != "mark"}, "name": names[k]}
        for k in range(min(len(names), len(status)))
    ]


def result(env: Any, info: dict[str, Any], names: list[str], you: int | None) -> str:
    """The game's end in a line."""
    return hook(env, "result_line")(info, names, you)
