"""The official Battlesnake CLI's game log (`battlesnake play -o FILE`) read as one `battlesnake-oracle/1` game.

The CLI (BattlesnakeOfficial/rules, `cli/commands/play.go` and `output.go`) writes one JSON object a line:
the game (`client.Game`: id, ruleset {name, version, settings}, map, timeout, source), one `/move` request
body per turn (game, turn, board, you), and the result {winnerId, winnerName, isDraw}. Its boards list
only live snakes and it keeps no moves, so moves are read off the heads, and a snake that vanishes is out
for an unknown cause, with an unknown last move and the body and health it had before that move (the
engine's own record shows the body after it). Which turns are written changed between CLI versions
(turn 0 or not, the final board or not), so the first turn written is whatever the log starts with.
Stdlib only: tools read logs without starting jax.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

FORMAT = "battlesnake-oracle/1"
ENGINE = "battlesnake play -o"
STEPS = {"up": (0, 1), "down": (0, -1), "left": (-1, 0), "right": (1, 0)}  # y points up, as in the API
SETTINGS = {  # the record's name -> its path in the log's ruleset settings
    "foodSpawnChance": ("foodSpawnChance",),
    "minimumFood": ("minimumFood",),
    "damagePerTurn": ("hazardDamagePerTurn",),
    "shrinkEveryNTurns": ("royale", "shrinkEveryNTurns"),
}


def looks_like_cli_log(first_line: str) -> bool:
    """True when a file starts with the CLI's game line, not with an oracle record (which has "format")."""
    try:
        head = json.loads(first_line)
    except ValueError:
        return False
    return isinstance(head, dict) and "ruleset" in head and "id" in head and "format" not in head


def read_cli_log(lines: Iterable[str], where: str) -> dict[str, Any]:
    """One game of a `battlesnake play -o` log as a battlesnake-oracle/1 record.

    Raises ValueError with one line naming `where`, the line number and what is wrong.
    """
    game, result, boards = None, None, []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        at = f"{where} line {number}"
        entry = _object(line, at)
        if game is None:
            game = _game(entry, at)
        elif result is not None:
            raise ValueError(f"{at}: a line after the result line (a log holds one game)")
        elif "winnerId" in entry or "isDraw" in entry:
            result = entry
        else:
            boards.append((at, _board(entry, at)))
    if game is None:
        raise ValueError(f"{where}: no game line (the log is empty)")
    if not boards:
        raise ValueError(f"{where}: no turn line after the game line")
    first = boards[0][1]
    return {
        "format": FORMAT,
        "engine": ENGINE,
        "ruleset": game["ruleset"]["name"],
        "map": game.get("map") or "standard",
        "seed": None,
        "width": first["width"],
        "height": first["height"],
        "settings": _settings(game["ruleset"].get("settings")),
        "turns": _turns(boards, wrapped="wrapped" in game["ruleset"]["name"]),
        "over": result is not None,
        "winner": (result or {}).get("winnerId") or "",
        "requests": [],
    }


def _turns(boards: list[tuple[str, dict[str, Any]]], wrapped: bool) -> list[dict[str, Any]]:
    """The record's turns: every snake ever seen on each, with the moves read off the heads."""
    size = boards[0][1]["width"], boards[0][1]["height"]
    seen: dict[str, dict[str, Any]] = {}  # id -> its latest entry, in the order first seen
    turns: list[dict[str, Any]] = []
    for at, board in boards:
        if (board["width"], board["height"]) != size:
            raise ValueError(f"{at}: the board is {board['width']}x{board['height']}, was {size[0]}x{size[1]}")
        turn: dict[str, Any] = {"turn": board["turn"]}
        if turns:
            if board["turn"] != turns[-1]["turn"] + 1:
                raise ValueError(f"{at}: turn {board['turn']} follows turn {turns[-1]['turn']}")
            turn["moves"], turn["unknown_moves"] = _moves(seen, board, wrapped, at)
        for snake_id, (body, health) in board["snakes"].items():
            if snake_id not in seen and turns:
                raise ValueError(f"{at}: snake {snake_id!r} first appears after the first turn")
            if snake_id in seen and seen[snake_id]["eliminatedCause"]:
                raise ValueError(f"{at}: snake {snake_id!r} is listed again after it went missing")
            seen[snake_id] = _entry(snake_id, body, health, "", 0)
        for snake_id, entry in seen.items():
            if snake_id not in board["snakes"] and not entry["eliminatedCause"]:
                seen[snake_id] = _entry(snake_id, entry["body"], entry["health"], "unknown", board["turn"])
        turn["snakes"] = [dict(entry, body=[list(c) for c in entry["body"]]) for entry in seen.values()]
        turn["food"] = [list(c) for c in board["food"]]
        turn["hazards"] = [list(c) for c in board["hazards"]]
        turns.append(turn)
    return turns


def _moves(seen: dict[str, dict], board: dict[str, Any], wrapped: bool, at: str) -> tuple[dict[str, str], list[str]]:
    """Moves of the snakes live on the turn before, from head to head; a vanished snake's move is unknown."""
    moves, unknown = {}, []
    for snake_id, entry in seen.items():
        if entry["eliminatedCause"]:
            continue
        if snake_id not in board["snakes"]:
            unknown.append(snake_id)
            continue
        before, after = entry["body"][0], board["snakes"][snake_id][0][0]
        found = [m for m, step in STEPS.items() if _step(before, step, board, wrapped) == after]
        if not found:
            raise ValueError(f"{at}: snake {snake_id!r}'s head went from {list(before)} to {list(after)}, not one step")
        if len(found) == 1:
            moves[snake_id] = found[0]
        else:  # a wrapped board one or two cells across: both ways reach the same cell
            unknown.append(snake_id)
    return moves, unknown


def _step(head: tuple[int, int], step: tuple[int, int], board: dict[str, Any], wrapped: bool) -> tuple[int, int]:
    """The cell a move leads to; on a wrapped board leaving one edge enters at the other."""
    x, y = head[0] + step[0], head[1] + step[1]
    if wrapped:
        x, y = x % board["width"], y % board["height"]
    return x, y


def _entry(snake_id: str, body: list, health: int, cause: str, on_turn: int) -> dict[str, Any]:
    """A snake as the record writes it; `eliminatedBy` stays empty since the log never says."""
    return {
        "id": snake_id,
        "body": body,
        "health": health,
        "eliminatedCause": cause,
        "eliminatedOnTurn": on_turn,
        "eliminatedBy": "",
    }


def _object(line: str, at: str) -> dict[str, Any]:
    """The JSON object on one line."""
    try:
        entry = json.loads(line)
    except ValueError as e:
        raise ValueError(f"{at}: not JSON ({getattr(e, 'msg', e)})") from None
    if not isinstance(entry, dict):
        raise ValueError(f"{at}: a JSON {type(entry).__name__}, not an object")
    return entry


def _game(entry: dict[str, Any], at: str) -> dict[str, Any]:
    """The game line, checked for what the record takes from it."""
    ruleset = entry.get("ruleset")
    if "format" in entry or not isinstance(ruleset, dict) or not isinstance(ruleset.get("name"), str):
        raise ValueError(f"{at}: no game line (the first object has no ruleset with a name)")
    if not isinstance(entry.get("map", ""), str):
        raise ValueError(f"{at}: the game's map is {entry['map']!r}, not a name")
    return entry


def _settings(settings: Any) -> dict[str, str]:
    """The settings the record keeps, as strings, for those the log has."""
    out = {}
    for name, path in SETTINGS.items():
        value = settings
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            out[name] = str(value)
    return out


def _board(entry: dict[str, Any], at: str) -> dict[str, Any]:
    """A turn line's turn and board: snakes as id -> (body as (x, y) head first, health)."""
    board = entry.get("board")
    if not isinstance(board, dict):
        raise ValueError(f"{at}: a turn line without a board")
    out = {"turn": _int(entry.get("turn"), "the turn", at)}
    out["width"] = _int(board.get("width"), "the board's width", at)
    out["height"] = _int(board.get("height"), "the board's height", at)
    out["food"] = _coords(board.get("food"), "food", at)
    out["hazards"] = _coords(board.get("hazards"), "hazards", at)
    snakes = board.get("snakes") or []  # an early CLI wrote null once every snake was out
    if not isinstance(snakes, list):
        raise ValueError(f"{at}: the board's snakes are {type(snakes).__name__}, not a list")
    out["snakes"] = {}
    for snake in snakes:
        snake_id = snake.get("id") if isinstance(snake, dict) else None
        if not isinstance(snake_id, str) or not snake_id:
            raise ValueError(f"{at}: a snake without an id")
        if snake_id in out["snakes"]:
            raise ValueError(f"{at}: snake {snake_id!r} is listed twice")
        body = _coords(snake.get("body"), f"snake {snake_id!r}'s body", at)
        if not body:
            raise ValueError(f"{at}: snake {snake_id!r} has an empty body")
        out["snakes"][snake_id] = (body, _int(snake.get("health"), f"snake {snake_id!r}'s health", at))
    return out


def _coords(points: Any, what: str, at: str) -> list[tuple[int, int]]:
    """(x, y) of a list of {"x", "y"} points; null reads as none (Go writes a nil list so)."""
    if points is None:
        return []
    if not isinstance(points, list):
        raise ValueError(f"{at}: {what} is {type(points).__name__}, not a list of points")
    out = []
    for p in points:
        if not isinstance(p, dict):
            raise ValueError(f"{at}: {what} holds {p!r}, not a point {{x, y}}")
        out.append((_int(p.get("x"), f"x in {what}", at), _int(p.get("y"), f"y in {what}", at)))
    return out


def _int(value: Any, what: str, at: str) -> int:
    """An integer of the log; JSON's true/false are not one."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{at}: {what} is {value!r}, not an integer")
    return value
