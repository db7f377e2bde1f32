"""`python -m jaxrl.battlesnake replay`: the official engine's recorded games replayed through the arena's step
with no divergent turn, every ruleset; a changed record is caught and drawn; the CLI's own log reads back."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from jaxrl.battlesnake.replay import replay
from jaxrl.cli.battlesnake import main
from tests.helpers import one_line_error

SHARED = Path(__file__).resolve().parents[1] / "data" / "battlesnake"  # the engine's records, kept in the repository
RECORDS = sorted(SHARED.glob("*.jsonl.gz"))


def games(name: str) -> list[dict]:
    with gzip.open(SHARED / name, "rt") as f:
        return [json.loads(line) for line in f]


def write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_the_first_games_of_every_ruleset_replay_with_no_divergence(tmp_path):
    # the default tier's sample (the slow tier replays every game: the test below)
    sample = []
    for name in ("official-standard-dev.jsonl.gz", "official-variants-dev.jsonl.gz"):
        seen: dict = {}
        for game in games(name):
            if game["ruleset"] == "royale" and len(game["turns"]) < 40:
                continue  # the royale games that reach the hazards (from turn 25)
            if seen.setdefault((game["ruleset"], game["width"]), 0) < 3:
                seen[(game["ruleset"], game["width"])] += 1
                sample.append(game)
    report = replay([write(tmp_path / "sample.jsonl", sample)])
    assert set(report.games) == {"standard", "solo", "wrapped", "constrictor", "wrapped_constrictor", "royale"}
    assert report.turns["royale"] > 100 and sum(report.turns.values()) > 800
    assert sum(report.divergent.values()) == 0, report.first[:1]


@pytest.mark.slow
def test_every_recorded_turn_of_every_ruleset_replays_with_no_divergence(capsys):
    assert len(RECORDS) == 2
    assert main(["replay", *map(str, RECORDS)]) == 0
    out = capsys.readouterr().out
    for ruleset in ("standard", "solo", "wrapped", "constrictor", "wrapped_constrictor", "royale"):
        assert any(line.startswith(ruleset) and line.rstrip().endswith(" 0") for line in out.splitlines()), ruleset
    assert "all " in out


def test_a_changed_record_diverges_exits_1_and_draws_the_boards(tmp_path, capsys):
    game = games("official-standard-dev.jsonl.gz")[0]
    turn = game["turns"][5]
    turn["snakes"][0]["health"] -= 3  # the engine said another health
    other = game["turns"][9]
    other["snakes"][1]["body"][0][0] += 0  # unchanged: only one turn diverges
    path = write(tmp_path / "changed.jsonl", [game])
    assert main(["replay", str(path), "boards=1"]) == 1
    out = capsys.readouterr().out
    assert "health" in out and "engine" in out and "arena" in out and "+-----------+" in out
    assert "turn 5" in out


def test_a_move_changed_in_the_record_is_caught_as_a_body_divergence(tmp_path):
    game = games("official-standard-dev.jsonl.gz")[1]
    turn = next(t for t in game["turns"][1:] if t.get("moves") and len(t["moves"]) >= 2)
    sid = next(iter(turn["moves"]))
    turn["moves"][sid] = {"up": "down", "down": "up", "left": "right", "right": "left"}[turn["moves"][sid]]
    report = replay([write(tmp_path / "moved.jsonl", [game])])
    assert sum(report.divergent.values()) >= 1


def test_the_official_cli_log_of_a_game_replays_with_its_moves_read_from_the_heads(tmp_path):
    for game in games("official-standard-dev.jsonl.gz")[:6] + games("official-variants-dev.jsonl.gz")[30:36]:
        lines = [{"id": "g", "ruleset": {"name": game["ruleset"], "version": "cli", "settings": {}}, "map": "standard"}]
        last = 0 if game["ruleset"] == "solo" else 1
        for i, t in enumerate(game["turns"]):
            if i and sum(not s["eliminatedCause"] for s in game["turns"][i - 1]["snakes"]) <= last:
                break  # the engine's game-over turn, which the CLI does not write
            snakes = [
                {
                    "id": s["id"],
                    "name": s["id"],
                    "health": s["health"],
                    "body": [{"x": x, "y": y} for x, y in s["body"]],
                }
                for s in t["snakes"]
                if not s["eliminatedCause"]
            ]
            board = {
                "height": game["height"],
                "width": game["width"],
                "snakes": snakes,
                "food": [{"x": x, "y": y} for x, y in t["food"]],
                "hazards": [{"x": x, "y": y} for x, y in t["hazards"]],
            }
            lines.append({"game": lines[0], "turn": t["turn"], "board": board})
        lines.append({"winnerId": game["winner"], "winnerName": game["winner"], "isDraw": not game["winner"]})
        path = write(tmp_path / "cli.jsonl", lines)
        report = replay([path])
        assert sum(report.turns.values()) > 0 and sum(report.divergent.values()) == 0, report.first[:1]


@pytest.mark.parametrize(
    "content,message",
    [
        ("not json at all\n", "neither a battlesnake-oracle/1 record nor"),
        ('{"format": "something-else"}\n', "not a battlesnake-oracle/1 record"),
        ("", "holds no game"),
    ],
)
def test_bad_files_get_one_line_and_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    assert message in one_line_error(capsys, main(["replay", str(path)]))
    assert "is not a file" in one_line_error(capsys, main(["replay", str(tmp_path / "missing.jsonl")]))
    assert "boards='x'" in one_line_error(capsys, main(["replay", str(path), "boards=x"]))


def test_food_that_vanished_without_an_eater_is_a_divergence(tmp_path):
    game = games("official-standard-dev.jsonl.gz")[2]
    t = next(
        i
        for i in range(1, len(game["turns"]) - 1)
        if len(game["turns"][i]["food"]) >= 2 and game["turns"][i + 1].get("moves")
    )
    heads = {tuple(s["body"][0]) for s in game["turns"][t + 1]["snakes"]}
    kept = [f for f in game["turns"][t + 1]["food"] if tuple(f) not in heads]
    game["turns"][t + 1]["food"] = kept[1:] + [f for f in game["turns"][t + 1]["food"] if tuple(f) in heads]
    report = replay([write(tmp_path / "vanished.jsonl", [game])])
    assert sum(report.divergent.values()) >= 1 and report.first[0]["where"].endswith(f"turn {t + 1}")
