"""The Battlesnake server (`python -m jaxrl.battlesnake serve`) over real sockets on 127.0.0.1: every `/move`
body the official engine wrote gets a legal move, never back into the neck; games are kept apart and forgotten;
bad requests get a 4xx with one line and the server goes on."""

import gzip
import http.client
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jaxrl.battlesnake.server import board_example, program_of, serve
from jaxrl.config.compose import UsageError

DATA = Path(__file__).resolve().parents[1] / "data" / "battlesnake"
ROOT = Path(__file__).resolve().parents[2]
MOVES = {"up": (0, 1), "down": (0, -1), "left": (-1, 0), "right": (1, 0)}


def requests() -> list[dict]:
    """Every /move body the engine wrote into the recorded games."""
    found = []
    for name in ("official-standard-dev.jsonl.gz", "official-variants-dev.jsonl.gz"):
        with gzip.open(DATA / name, "rt") as f:
            found += [r for line in f for r in json.loads(line).get("requests", [])]
    return found


OVER_1MB = object()  # a request that says its body holds 2 MB (it is refused before a byte of it is read)


def post(served, path: str, body: bytes | dict, headers: dict | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    if body is OVER_1MB:
        conn.putrequest("POST", path)
        conn.putheader("Content-Length", str(2 << 20))
        conn.endheaders(b"[")
        answer = conn.getresponse()
        out = answer.status, answer.read()
        conn.close()
        return out
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request("POST", path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    answer = conn.getresponse()
    out = answer.status, answer.read()
    conn.close()
    return out


@pytest.fixture(scope="module")
def champion():
    served = serve("pretrained:arena-selfplay-v2", port=0, block=False, quiet=True, forget_s=60, warm=False)
    yield served
    served.stop()


def back_into_the_neck(request: dict, move: str) -> bool:
    body = request["you"]["body"]
    head, neck = body[0], next((p for p in body[1:] if p != body[0]), None)
    dx, dy = MOVES[move]
    width, height = request["board"]["width"], request["board"]["height"]
    target = ((head["x"] + dx) % width, (head["y"] + dy) % height)
    return neck is not None and target == (neck["x"], neck["y"])


def test_get_names_the_snake_and_what_it_sees(champion):
    conn = http.client.HTTPConnection("127.0.0.1", champion.port, timeout=30)
    conn.request("GET", "/")
    info = json.loads(conn.getresponse().read())
    assert info["apiversion"] == "1" and info["author"] == "jaxrl" and info["color"].startswith("#")
    assert "pretrained:arena-selfplay-v2" in info["version"] and "view 7" in info["version"]


def test_every_recorded_move_request_gets_a_legal_move_never_back_into_the_neck(champion):
    bodies = requests()
    assert len(bodies) > 1000
    for request in bodies:
        status, body = post(champion, "/move", request)
        assert status == 200, body
        move = json.loads(body)["move"]
        assert move in MOVES and not back_into_the_neck(request, move), (request["turn"], move)


def test_games_are_started_told_apart_ended_and_forgotten(champion):
    request = requests()[0]
    games = [json.loads(json.dumps(request)) for _ in range(3)]
    for i, game in enumerate(games):
        game["game"]["id"] = f"game-{i}"
        assert post(champion, "/start", game)[0] == 200
    you = str(request["you"]["id"])
    assert {(f"game-{i}", you) for i in range(3)} <= set(champion.snake.games)  # one memory per game and snake
    dead = _bad(games[0], lambda d: d["board"].update(snakes=[]))  # the engine's /end for a snake that is out
    assert post(champion, "/end", dead)[0] == 200 and ("game-0", you) not in champion.snake.games
    champion.snake.forget_s, kept = 0.0, champion.snake.forget_s
    try:
        time.sleep(0.01)
        assert post(champion, "/move", games[1])[0] == 200
        assert ("game-2", you) not in champion.snake.games  # no request within forget_s: forgotten
    finally:
        champion.snake.forget_s = kept


def _bad(request: dict, change) -> dict:
    changed = json.loads(json.dumps(request))
    change(changed)
    return changed


@pytest.mark.parametrize(
    "make, status, said",
    [
        (lambda r: b"{not json", 400, "needs a JSON body"),
        (lambda r: _bad(r, lambda d: d.pop("board")), 400, "no board object"),
        (lambda r: _bad(r, lambda d: d["board"].update(width=0, height=0)), 400, "board width=0 is invalid"),
        (lambda r: _bad(r, lambda d: d["board"].update(width=100, height=100)), 400, "board width=100 is invalid"),
        (lambda r: _bad(r, lambda d: d["you"]["body"][0].update(x=99)), 400, "(99, 4) off the 11x11 board"),
        (lambda r: _bad(r, lambda d: d["board"]["snakes"][1].update(body=[])), 400, "has no body"),
        (lambda r: _bad(r, lambda d: d["game"]["ruleset"].update(name="chess")), 400, "ruleset 'chess'"),
        (lambda r: OVER_1MB, 413, "at most 1,048,576"),
        (lambda r: _bad(r, lambda d: d["game"].update(ruleset="standard")), 400, "not an object with a name"),
        (lambda r: _bad(r, lambda d: d.update(turn=10**30)), 400, "turn=1000"),
        (lambda r: _bad(r, lambda d: d["board"]["food"].append({"x": 50, "y": 0})), 400, "food has a point (50, 0)"),
        (lambda r: _bad(r, lambda d: d["board"]["snakes"].append(d["board"]["snakes"][0])), 400, "twice"),
        (lambda r: b"[" * 100000, 400, "needs a JSON body"),
    ],
    ids=[
        "not-json",
        "no-board",
        "no-cells",
        "10000-cells",
        "off-board",
        "no-body",
        "unknown-ruleset",
        "over-1mb",
        "ruleset-a-string",
        "huge-turn",
        "food-off-board",
        "snake-twice",
        "nested-deep",
    ],
)
def test_a_bad_request_gets_a_4xx_with_one_line_and_the_server_goes_on(champion, make, status, said):
    request = requests()[0]
    got, body = post(champion, "/move", make(request))
    line = body.decode()
    assert got == status and said in line and line.count("\n") == 1, (got, line)
    assert post(champion, "/move", request)[0] == 200  # still serving


def test_a_board_the_arena_cannot_play_gets_safe_moves_and_says_so(champion):
    request = _bad(requests()[0], lambda d: d["board"].update(width=13))  # 13x11: the arena plays squares
    status, body = post(champion, "/move", request)
    answer = json.loads(body)
    assert status == 200 and answer["move"] in MOVES and "square" in answer["shout"]
    assert not back_into_the_neck(request, answer["move"])


def test_a_bot_is_served_and_bad_targets_and_settings_are_one_line(capsys):
    bot = serve("greedy", port=0, block=False, quiet=True, warm=False)
    try:
        request = requests()[5]
        status, body = post(bot, "/move", request)
        assert status == 200 and json.loads(body)["move"] in MOVES
    finally:
        bot.stop()
    from jaxrl.cli.battlesnake import main

    for args, said in (
        (["serve", "greedy", "port=70000"], "port=70000 is invalid"),
        (["serve", "greedy", "colour=red"], "unknown setting colour="),
        (["serve", "greedy", "warm=chess"], "warm=chess is invalid"),
        (["serve", "greedy", "most_boards=0"], "most_boards=0 is invalid"),
        (["serve"], "serve takes one TARGET"),
    ):
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1, (args, err)
    proc = subprocess.run(  # the command itself, in its own process
        [sys.executable, "-m", "jaxrl.battlesnake", "serve", "no/such/run"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2 and "no/such/run" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_a_run_is_served_at_the_checkpoint_named(tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(ROOT / "tests" / "data" / "runs" / "format-3" / "arena-selfplay-v2", run)
    served = serve(f"{run}@4096", port=0, block=False, quiet=True, warm=False)
    try:
        assert post(served, "/move", requests()[0])[0] == 200
        assert served.snake.who.name == str(run)
    finally:
        served.stop()
    with pytest.raises(UsageError, match="@999"):
        serve(f"{run}@999", port=0, block=False, quiet=True, warm=False)


def test_a_host_beyond_this_machine_is_said(capsys):
    served = serve("greedy", port=0, host="0.0.0.0", block=False, quiet=True, warm=False)
    try:
        assert served.url.startswith("http://127.0.0.1:")
        assert post(served, "/move", requests()[0])[0] == 200
    finally:
        served.stop()
    assert "warning: host=0.0.0.0 answers engines beyond this machine" in capsys.readouterr().err


def test_each_board_compiles_once_and_past_most_boards_a_new_board_gets_safe_moves():
    bot = serve("greedy", port=0, block=False, quiet=True, warm="standard", most_boards=4)
    try:
        assert len(bot.snake._compiled) == 3  # 7x7, 11x11 and 19x19 under the standard ruleset
        standard = next(
            r for r in requests() if r["game"]["ruleset"]["name"] == "standard" and r["board"]["width"] == 11
        )
        assert post(bot, "/move", standard)[0] == 200 and len(bot.snake._compiled) == 3
        royale = board_example(11, "royale")
        assert post(bot, "/move", royale)[0] == 200 and len(bot.snake._compiled) == 4
        status, body = post(bot, "/move", board_example(9, "standard"))  # a fifth board: none compiled
        assert status == 200 and "most_boards" in json.loads(body)["shout"] and len(bot.snake._compiled) == 4
        assert json.loads(post(bot, "/move", standard)[1])["shout"] == ""  # the boards it has still play
    finally:
        bot.stop()
    recorded = next(r for r in requests() if r["board"]["width"] == 19 and len(r["board"]["snakes"]) == 8)
    same = [bot.snake.who.env.board_game(r)["env"] for r in (recorded, board_example(19, "standard"))]
    assert program_of(same[0]) == program_of(same[1])  # two games on one board: one program
    with pytest.raises(UsageError, match="warm=chess is invalid"):
        serve("greedy", port=0, block=False, quiet=True, warm="standard,chess")


def test_moves_on_compiled_boards_go_on_while_a_new_board_compiles():
    import threading

    bot = serve("greedy", port=0, block=False, quiet=True, warm="none", workers=1)
    go_on, compiling = threading.Event(), threading.Event()
    compile_board = bot.snake._compile

    def slow(table, args):
        compiling.set()
        go_on.wait(60)
        return compile_board(table, args)

    try:
        known = board_example(11, "standard")
        assert post(bot, "/move", known)[0] == 200
        bot.snake._compile = slow
        new = threading.Thread(target=post, args=(bot, "/start", board_example(7, "royale")))
        new.start()
        assert compiling.wait(60)
        status, body = post(bot, "/move", known)  # one worker, and the compile holds it not
        assert status == 200 and json.loads(body)["move"] in MOVES and new.is_alive()
        go_on.set()
        new.join(60)
        assert len(bot.snake._compiled) == 2
    finally:
        go_on.set()
        bot.stop()
