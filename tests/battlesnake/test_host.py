"""jaxrl as the host of Battlesnake games (`python -m jaxrl.battlesnake play`), over real sockets on 127.0.0.1:
games between served agents and a snake written here with the standard library, seats rotated, each game
written as the official CLI writes it and replayed through the arena with no divergent turn."""

import json
import random
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

import jaxrl
from jaxrl.battlesnake.host import play
from jaxrl.battlesnake.replay import replay
from jaxrl.battlesnake.server import safe_move, serve
from jaxrl.trained.http import HttpSnake

ROOT = Path(__file__).resolve().parents[2]


class RandomSafe(BaseHTTPRequestHandler):
    """A Battlesnake of a few lines, as anyone might write one: a random move that stays on the board and off
    the bodies; `slow` answers it too late, `rude` answers nonsense."""

    mode = "fine"
    seen: list[str] = []

    def log_message(self, *args):
        pass

    def _answer(self, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        self._answer({"apiversion": "1", "author": "a test"})

    def do_POST(self):  # noqa: N802
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append(self.path)
        if self.path != "/move":
            self._answer({})
            return
        if self.mode == "drip":  # an answer a byte at a time, each well within any socket timeout
            try:
                for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n" + b'{"move": "up"}\n':
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    threading.Event().wait(0.05)
            except OSError:
                pass  # the host stopped waiting
            self.close_connection = True
            return
        if self.mode == "rude":
            self._answer({"move": "sideways"})
            return
        if self.mode == "slow":
            threading.Event().wait(0.3)
        moves = [safe_move(request)] + random.sample(["up", "down", "left", "right"], 4)
        self._answer({"move": moves[0] if random.random() < 0.8 else moves[1]})


@pytest.fixture
def stdlib_snake():
    server = ThreadingHTTPServer(("127.0.0.1", 0), RandomSafe)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    RandomSafe.mode, RandomSafe.seen = "fine", []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_hosted_games_between_served_agents_replay_with_no_divergent_turn(tmp_path):
    champion = serve("pretrained:arena-selfplay-v2", port=0, block=False, quiet=True)
    greedy = serve("greedy", port=0, block=False, quiet=True)
    try:
        urls = [champion.url, greedy.url]
        result = play(urls, games=2, size=11, seed=3, out=tmp_path / "games", say=lambda *_: None)
    finally:
        champion.stop()
        greedy.stop()
    assert sum(sum(row.values()) for row in result["table"].values()) == 4  # 2 games x 2 players
    for url in urls:
        lat = result["latency"][url]
        assert lat["answered"] > 0 and lat["late"] == lat["failed"] == lat["invalid"] == 0
        assert lat["max_ms"] < 500
    logs = sorted((tmp_path / "games").glob("game-*.jsonl"))
    assert len(logs) == 2
    first = [json.loads(line) for line in logs[0].read_text().splitlines()]
    assert first[0]["ruleset"]["name"] == "standard" and "isDraw" in first[-1]
    assert [s["name"] for s in first[1]["board"]["snakes"]] == urls  # game 0: seats in the order given
    second = [json.loads(line) for line in logs[1].read_text().splitlines()]
    assert [s["name"] for s in second[1]["board"]["snakes"]] == urls[::-1]  # game 1: rotated
    report = replay(logs, boards=0)
    assert sum(report.games.values()) == 2 and sum(report.divergent.values()) == 0, report.first


def test_a_snake_written_with_the_standard_library_plays_and_bad_answers_repeat_the_last_move(stdlib_snake, tmp_path):
    result = play([stdlib_snake, "greedy"], games=2, size=7, seed=1, out=tmp_path / "a", say=lambda *_: None)
    assert result["latency"][stdlib_snake]["answered"] > 0
    assert {"/start", "/move", "/end"} <= set(RandomSafe.seen)
    assert sum(replay(sorted((tmp_path / "a").glob("*.jsonl")), boards=0).divergent.values()) == 0

    RandomSafe.mode = "rude"
    rude = play([stdlib_snake, "greedy"], games=1, size=7, out=tmp_path / "b", say=lambda *_: None)
    assert rude["latency"][stdlib_snake]["invalid"] > 0  # "sideways": the last move again ("up" at first)
    RandomSafe.mode = "slow"
    slow = play([stdlib_snake, "greedy"], games=1, size=7, timeout_ms=100, out=tmp_path / "c", say=lambda *_: None)
    assert slow["latency"][stdlib_snake]["late"] > 0
    assert sum(replay(sorted((tmp_path / "c").glob("*.jsonl")), boards=0).divergent.values()) == 0
    RandomSafe.mode = "drip"  # each byte in time, the whole answer (3 s) not: late, as the engine's deadline has it
    snake, request = (
        HttpSnake(stdlib_snake, 100),
        json.loads((tmp_path / "a" / "game-0.jsonl").read_text().split("\n")[1]),
    )
    t0 = time.perf_counter()
    assert snake.move(request) is None and snake.answers.late == 1
    assert time.perf_counter() - t0 < 1.5  # given up at the deadline, not when the last byte came
    drip = play([stdlib_snake, "greedy"], games=1, size=7, timeout_ms=100, out=tmp_path / "d", say=lambda *_: None)
    late = drip["latency"][stdlib_snake]
    assert late["late"] > 0 and late["answered"] == late["failed"] == 0, late


def test_a_log_holds_the_boards_played_as_the_official_cli_writes_them(stdlib_snake, tmp_path):
    play([stdlib_snake, "greedy"], games=3, size=7, seed=5, out=tmp_path, say=lambda *_: None)
    for log in sorted(tmp_path.glob("*.jsonl")):
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        game, boards, result = lines[0], lines[1:-1], lines[-1]
        assert set(game) >= {"id", "ruleset", "map", "timeout"} and game["ruleset"]["name"] == "standard"
        assert [b["turn"] for b in boards] == list(range(len(boards)))
        assert all(b["game"] == game for b in boards)
        # a board is written before each turn is played, none after the last: every one has both snakes
        assert all(len(b["board"]["snakes"]) == 2 for b in boards), log
        names = {s["name"] for s in boards[0]["board"]["snakes"]}
        assert result["isDraw"] or result["winnerName"] in names


def test_bad_play_input_is_one_line(capsys):
    from jaxrl.cli.battlesnake import main

    for args, said in (
        (["play", "greedy", "ruleset=chess"], "ruleset=chess is invalid"),
        (["play", "ftp://x:1", "greedy"], "ftp://x:1"),
        (["play", "greedy", "greedy"], "greedy is given twice"),
        (["play", "games=2"], "play needs a TARGET"),
    ):
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1, (args, err)
    proc = subprocess.run(  # the command itself, in its own process
        [sys.executable, "-m", "jaxrl.battlesnake", "play", "greedy", "games=0"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2 and "games=0 is invalid" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_eval_vs_and_rate_take_an_http_snake_as_a_player(stdlib_snake, tmp_path, monkeypatch):
    from jaxrl.cli.eval import main as eval_main
    from jaxrl.cli.rate import main as rate_main

    monkeypatch.chdir(tmp_path)
    run = jaxrl.pretrained("arena-selfplay-v2")
    result = run.play_against(stdlib_snake, episodes=6, seed=1)
    assert result["b"] == stdlib_snake and result["a_wins"] + result["b_wins"] + result["draws"] == 6
    assert result["latency"][stdlib_snake]["answered"] > 0  # its answers, timed over these games
    assert result["unfinished"] == 0 and RandomSafe.seen.count("/start") >= 6  # each game's seats started
    assert rate_main(["pretrained:arena-selfplay-v2", stdlib_snake, "games=4", "bots=false", "out=r"]) == 0
    table = json.loads((tmp_path / "r" / "ratings.json").read_text())
    assert {row["player"] for row in table["table"]} == {"pretrained:arena-selfplay-v2", stdlib_snake}
    gif = tmp_path / "versus.gif"
    assert eval_main(["pretrained:arena-selfplay-v2", f"vs={stdlib_snake}", "episodes=2", f"out={gif}"]) == 0
    assert gif.stat().st_size > 0


def test_a_served_recurrent_run_keeps_one_memory_for_each_seat_it_holds(tmp_path):
    from jaxrl.battlesnake.server import Snake, player
    from jaxrl.trained import headtohead

    run = jaxrl.train(
        env="arena",
        run_dir=tmp_path / "gru",
        num_envs=8,
        total_timesteps=256,
        progress=False,
        algo={"name": "ppo", "network": "gru", "torso": "cnn", "channels": [8], "hidden": [16], "rnn_hidden": 16},
        **{"algo.num_steps": 16, "algo.bptt_horizon": 8},
    )
    served = serve(str(run.run_dir), port=0, block=False, quiet=True, warm="standard")
    asked: list = []
    answer = Snake.move
    try:
        Snake.move = lambda self, request: asked.append(request) or answer(self, request)
        http = headtohead.player(served.url, jaxrl.load)
        result = headtohead.play_pair(http, headtohead.player(str(run.run_dir), jaxrl.load), games=2, seed=0)
    finally:
        Snake.move = answer
        served.stop()
    assert result["a_wins"] + result["b_wins"] + result["draws"] == 2 and result["unfinished"] == 0
    seats = {(r["game"]["id"], r["you"]["id"]) for r in asked}
    assert sorted(g for g, _ in seats) == ["jaxrl-h2h-0-0"] * 2 + ["jaxrl-h2h-0-1"] * 2  # the HTTP snake's 2 of 4

    # one server answering both seats of a game, turn by turn, keeps each seat's memory as if it were alone
    game = [r for r in asked if r["game"]["id"] == "jaxrl-h2h-0-0"]
    together = Snake(player(str(run.run_dir)))
    alone = {you: Snake(player(str(run.run_dir))) for g, you in seats if g == "jaxrl-h2h-0-0"}
    for request in game:
        together.move(request)
        alone[request["you"]["id"]].move(request)
    for you, snake in alone.items():
        mine = snake.games[("jaxrl-h2h-0-0", you)]["carry"]
        np.testing.assert_allclose(np.asarray(together.games[("jaxrl-h2h-0-0", you)]["carry"]), np.asarray(mine))
