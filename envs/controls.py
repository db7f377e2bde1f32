"""A person's keys as moves of the snake envs: the compass and the turns the play page sends, and the turn a key
asks of a snake with a heading. Each env's `person_action` hook (envs/base.py) builds on these."""

from __future__ import annotations

DIRECTIONS = ("up", "right", "down", "left")  # 0..3: the envs' headings (row - 1, col + 1, row + 1, col - 1)
TURNS = {"turn_left": -1, "straight": 0, "turn_right": 1}
MOVES = (*DIRECTIONS, *TURNS, "collect", "stay")  # every key the page may send
RELATIVE = ("turn left", "straight on", "turn right")


def check_move(move: str | None) -> None:
    """ValueError naming a key the page never sends."""
    if move is not None and move not in MOVES:
        raise ValueError(f"move {move!r} is invalid: allowed {', '.join(MOVES)}")


def turn(heading: int, move: str | None) -> int:
    """-1, 0 or 1: the turn `move` asks of a snake heading `heading` (a reverse, or nothing: straight on)."""
    check_move(move)
    if move in TURNS:
        return TURNS[move]
    if move in DIRECTIONS:
        return {0: 0, 1: 1, 2: 0, 3: -1}[(DIRECTIONS.index(move) - heading) % 4]
    return 0


def reverses(heading: int, move: str | None) -> bool:
    """Whether `move` is the compass key straight back against `heading`."""
    return move in DIRECTIONS and (DIRECTIONS.index(move) - heading) % 4 == 2
