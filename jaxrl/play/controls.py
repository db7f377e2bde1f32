"""What the play page knows of each env it plays: the names of the actions, a person's key as the env's action,
and the lines beside the board. Read from the env's own state fields; no rule is decided here."""

from __future__ import annotations

from typing import Any

import numpy as np

ENVS = ("snake", "grid", "arena", "arena_open")
DIRECTIONS = ("up", "right", "down", "left")  # 0..3: the envs' headings (row - 1, col + 1, row + 1, col - 1)
TURNS = {"turn_left": -1, "straight": 0, "turn_right": 1}
MOVES = (*DIRECTIONS, *TURNS, "collect", "stay")  # what the page may send
RELATIVE = ("turn left", "straight on", "turn right")
BATTLESNAKE = (*RELATIVE, "back")  # env=arena: the engine's 4 moves, turned by the heading
GRID = ("stay", "up", "right", "down", "left", "collect")
PUFFERLIB = ("up", "down", "left", "right")  # env.rules=pufferlib: PufferLib's four moves, in its order


def _pufferlib(env: Any) -> bool:
    return getattr(env, "rules", None) == "pufferlib"


def knows(env: Any) -> bool:
    return getattr(env, "name", None) in ENVS


def action_names(env: Any) -> tuple[str, ...]:
    """The env's actions by name, in its action order."""
    if env.name == "grid":
        return GRID
    if env.name == "snake" and env.actions == "absolute":
        return DIRECTIONS
    if _pufferlib(env):
        return PUFFERLIB
    if env.num_actions == 4:
        return BATTLESNAKE
    return RELATIVE


def _heading(env: Any, state: Any, seat: int) -> int:
    if env.name == "snake":
        return int(np.asarray(state.direction))
    return int(np.asarray(state.heading)[seat])


def _turn(heading: int, move: str | None) -> int:
    """-1, 0 or 1: the turn `move` asks of a snake heading `heading` (a reverse, or nothing: straight on)."""
    if move in TURNS:
        return TURNS[move]
    if move in DIRECTIONS:
        return {0: 0, 1: 1, 2: 0, 3: -1}[(DIRECTIONS.index(move) - heading) % 4]
    return 0


def person_action(env: Any, state: Any, seat: int, move: str | None) -> int:
    """The env action of a person's `move` (a direction, a turn, collect or stay; None: go on) at `seat`."""
    if move is not None and move not in MOVES:
        raise ValueError(f"move {move!r} is invalid: allowed {', '.join(MOVES)}")
    if env.name == "grid":
        if move in DIRECTIONS:
            return 1 + DIRECTIONS.index(move)
        return 5 if move == "collect" else 0
    heading = _heading(env, state, seat)
    if _pufferlib(env):  # absolute moves; a turn, or nothing, is taken from the last move
        compass = DIRECTIONS.index(PUFFERLIB[heading])
        if move in DIRECTIONS:
            return PUFFERLIB.index(move)
        return PUFFERLIB.index(DIRECTIONS[(compass + _turn(compass, move)) % 4])
    if env.name == "arena" and move in DIRECTIONS and (DIRECTIONS.index(move) - heading) % 4 == 2:
        if int(np.asarray(state.time)) == 0:  # a stacked start: back is a move like any other
            return 3
    turn = _turn(heading, move)
    mirrored = env.name == "snake" and bool(np.asarray(state.mirrored))
    if env.name == "snake" and env.actions == "absolute":
        direction = (heading + turn) % 4
        return 4 - direction if mirrored and direction % 2 == 1 else direction  # the env swaps left and right back
    return 1 - turn if mirrored else turn + 1


def shown_actions(env: Any, state: Any, names: tuple[str, ...], numbers: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The policy's numbers per action as the board lies: a mirrored Snake episode's left and right swapped back."""
    numbers = np.asarray(numbers, np.float64).copy()
    if env.name == "snake" and bool(np.asarray(state.mirrored)):
        a, b = (1, 3) if env.actions == "absolute" else (0, 2)
        numbers[[a, b]] = numbers[[b, a]]
    return list(names), numbers


def seats(env: Any, state: Any, names: list[str]) -> list[dict[str, Any]]:
    """Each seat for the page's list: its name and colour, and in the arenas its length and whether it lives."""
    if env.name not in ("arena", "arena_open"):
        return [{"name": n} for n in names]
    from jaxrl.envs.arena import SNAKE_COLOURS

    length = np.asarray(state.length)
    alive = np.asarray(state.alive) if hasattr(state, "alive") else length > 0
    placement = np.asarray(getattr(state, "placement", np.zeros_like(length)))
    shown = min(len(names), 8 if env.name == "arena_open" else len(names))  # 256 snakes: the first few
    return [
        {
            "name": names[k],
            "colour": list(SNAKE_COLOURS[k % len(SNAKE_COLOURS)]),
            "length": int(length[k]),
            "alive": bool(alive[k]),
            "placement": int(placement[k]),
        }
        for k in range(shown)
    ]


def result(env: Any, info: dict[str, Any], names: list[str], you: int | None) -> str:
    """The game's end in a line."""
    get = lambda name: np.asarray(info[name]) if name in info else None
    if env.name == "snake":
        won = bool(get("won")) if "won" in info else False
        return f"score {int(get('score'))}" + (": a full board, won" if won else "")
    if env.name == "grid":
        return f"collected {int(get('score'))}"
    if env.name == "arena_open":
        return f"a window of the world ended: mean length {float(get('score')):.1f}"
    winner = int(get("winner")) if "winner" in info else -1
    if you is not None and "snake_placement" in info:
        place = int(np.asarray(info["snake_placement"])[you]) or 1
        return ("you won" if winner == you else f"you placed {place} of {len(names)}") + (
            f"; {names[winner]} won" if winner >= 0 and winner != you else ""
        )
    if winner >= 0 and winner < len(names):
        return f"{names[winner]} (seat {winner}) won"
    return "no snake left alone: a draw" if winner < 0 else "won"
