"""The CLI log reader against a log written by hand in the shape `battlesnake play -o` writes.

The lines follow the CLI's own fixtures (BattlesnakeOfficial/rules, cli/commands/testdata/jsonl_*.json):
a game line, one /move request body per turn with only live snakes on the board, and a result line.
"""

from __future__ import annotations

import json

import pytest

from jaxrl.battlesnake.cli_log import looks_like_cli_log, read_cli_log

GAME = {
    "id": "GAME_ID",
    "ruleset": {
        "name": "wrapped",
        "version": "cli",
        "settings": {
            "foodSpawnChance": 15,
            "minimumFood": 1,
            "hazardDamagePerTurn": 14,
            "hazardMap": "",
            "hazardMapAuthor": "",
            "royale": {"shrinkEveryNTurns": 25},
            "squad": {
                "allowBodyCollisions": False,
                "sharedElimination": False,
                "sharedHealth": False,
                "sharedLength": False,
            },
        },
    },
    "map": "standard",
    "timeout": 500,
    "source": "",
}


def _snake(snake_id: str, body: list[tuple[int, int]], health: int) -> dict:
    cells = [{"x": x, "y": y} for x, y in body]
    return {
        "id": snake_id,
        "name": snake_id.upper(),
        "latency": "0",
        "health": health,
        "body": cells,
        "head": cells[0],
        "length": len(cells),
        "shout": "",
        "squad": "",
        "customizations": {"color": "#123456", "head": "safe", "tail": "curled"},
    }


def _turn(turn: int, snakes: list[dict], game: dict, food: tuple[int, int] = (2, 2)) -> str:
    board = {
        "height": 5,
        "width": 5,
        "snakes": snakes,
        "food": [{"x": food[0], "y": food[1]}],
        "hazards": [],
    }
    return json.dumps({"game": game, "turn": turn, "board": board, "you": snakes[0]})


def _log(game: dict = GAME) -> list[str]:
    """A 5x5 wrapped game: a eats on turn 1, b crosses the top edge then the right edge, b is gone on turn 3."""
    return [
        json.dumps(game),
        _turn(0, [_snake("a", [(0, 2)] * 3, 100), _snake("b", [(4, 4)] * 3, 100)], game, food=(1, 2)),
        _turn(1, [_snake("a", [(1, 2), (0, 2), (0, 2), (0, 2)], 100), _snake("b", [(4, 0), (4, 4), (4, 4)], 99)], game),
        _turn(2, [_snake("a", [(1, 3), (1, 2), (0, 2), (0, 2)], 99), _snake("b", [(0, 0), (4, 0), (4, 4)], 98)], game),
        _turn(3, [_snake("a", [(2, 3), (1, 3), (1, 2), (0, 2)], 98)], game),
        json.dumps({"winnerId": "a", "winnerName": "A", "isDraw": False}),
        "",
    ]


def _recorded(snake_id: str, body: list[list[int]], health: int, cause: str = "", on_turn: int = 0) -> dict:
    return dict(id=snake_id, body=body, health=health, eliminatedCause=cause, eliminatedOnTurn=on_turn, eliminatedBy="")


def test_a_hand_written_log_becomes_an_oracle_record():
    game = read_cli_log(_log(), "game.jsonl")
    assert {k: v for k, v in game.items() if k != "turns"} == {
        "format": "battlesnake-oracle/1",
        "engine": "battlesnake play -o",
        "ruleset": "wrapped",
        "map": "standard",
        "seed": None,
        "width": 5,
        "height": 5,
        "settings": {"foodSpawnChance": "15", "minimumFood": "1", "damagePerTurn": "14", "shrinkEveryNTurns": "25"},
        "over": True,
        "winner": "a",
        "requests": [],
    }
    a1 = [[1, 2], [0, 2], [0, 2], [0, 2]]  # ate: the tail stacks, health back to full
    b2 = [[0, 0], [4, 0], [4, 4]]
    assert game["turns"] == [
        {
            "turn": 0,
            "snakes": [_recorded("a", [[0, 2]] * 3, 100), _recorded("b", [[4, 4]] * 3, 100)],
            "food": [[1, 2]],
            "hazards": [],
        },
        {
            "turn": 1,
            "moves": {"a": "right", "b": "up"},  # b: y 4 -> 0 over the top edge
            "unknown_moves": [],
            "snakes": [_recorded("a", a1, 100), _recorded("b", [[4, 0], [4, 4], [4, 4]], 99)],
            "food": [[2, 2]],
            "hazards": [],
        },
        {
            "turn": 2,
            "moves": {"a": "up", "b": "right"},  # b: x 4 -> 0 over the right edge
            "unknown_moves": [],
            "snakes": [_recorded("a", [[1, 3], [1, 2], [0, 2], [0, 2]], 99), _recorded("b", b2, 98)],
            "food": [[2, 2]],
            "hazards": [],
        },
        {
            "turn": 3,
            "moves": {"a": "right"},
            "unknown_moves": ["b"],  # gone from the board: its last move is not in the log
            "snakes": [
                _recorded("a", [[2, 3], [1, 3], [1, 2], [0, 2]], 98),
                _recorded("b", b2, 98, "unknown", 3),
            ],
            "food": [[2, 2]],
            "hazards": [],
        },
    ]


def test_a_log_without_its_result_line_is_a_game_not_over():
    game = read_cli_log(_log()[:-2], "cut.jsonl")
    assert (game["over"], game["winner"], len(game["turns"])) == (False, "", 4)


def test_a_jump_across_the_board_is_no_move_off_a_wrapped_board():
    standard = dict(GAME, ruleset=dict(GAME["ruleset"], name="standard"))
    with pytest.raises(ValueError, match=r"^std\.jsonl line 3: snake 'b'.s head went from \[4, 4\] to \[4, 0\]"):
        read_cli_log(_log(standard), "std.jsonl")


def test_the_game_line_tells_a_cli_log_from_an_oracle_record():
    assert looks_like_cli_log(_log()[0])
    assert not looks_like_cli_log(json.dumps({"format": "battlesnake-oracle/1", "id": "x", "ruleset": "standard"}))
    assert not looks_like_cli_log("not json")


def _bad_coordinate(lines: list[str]) -> list[str]:
    turn = json.loads(lines[2])
    turn["board"]["snakes"][1]["body"][1]["x"] = 4.5
    return lines[:2] + [json.dumps(turn)] + lines[3:]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda lines: lines[:3] + ["{not json"] + lines[4:], r"^bad\.jsonl line 4: not JSON \("),
        (_bad_coordinate, r"^bad\.jsonl line 3: x in snake 'b'.s body is 4\.5, not an integer$"),
        (lambda lines: lines[:1] + ['{"turn": 0}'] + lines[2:], r"^bad\.jsonl line 2: a turn line without a board$"),
        (lambda lines: lines[1:], r"^bad\.jsonl line 1: no game line"),
        (lambda lines: [""], r"^bad\.jsonl: no game line"),
    ],
    ids=["not-json", "float-coordinate", "no-board", "no-game-line", "empty"],
)
def test_bad_input_is_one_line_naming_the_file_and_line(change, message):
    with pytest.raises(ValueError, match=message) as caught:
        read_cli_log(change(_log()), "bad.jsonl")
    assert "\n" not in str(caught.value)
