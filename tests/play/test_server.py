"""The play server (jaxrl/play/server.py, __init__.py, __main__.py) on a real uvicorn, spoken to over a real
websocket: it serves its own files and nothing else, answers a malformed message with an error and plays on,
keeps each page's game apart, refuses pages beyond its limit, frees a closed page's game within a second, and
refuses bad command lines in one line."""

import json
import shutil
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from websockets.sync.client import connect

from jaxrl.cli.play import main as play_main
from jaxrl.play import bind, serve
from jaxrl.play.server import check_message
from tests.helpers import one_line_error

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "runs" / "format-3"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("server")
    shutil.copytree(FIXTURES / "dqn-snake", root / "dqn-snake")
    served = serve(str(root / "dqn-snake"), block=False, quiet=True, sessions=2, fps=30, games=root / "games")
    yield served
    served.stop()


def ws_url(served) -> str:
    return served.url.replace("http://", "ws://") + "ws"


def receive(ws, kind: str, limit: int = 400, **fields) -> dict:
    """The next message of type `kind` (whose `fields` have these values: frames of the old game may come first)."""
    for _ in range(limit):
        message = json.loads(ws.recv(timeout=30))
        if message["type"] == kind and all(message.get(k) == v for k, v in fields.items()):
            return message
    raise AssertionError(f"no {kind} message with {fields} in {limit}")


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


def wait_for_sessions(served, count: int, seconds: float) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        if json.loads(get(served.url + "status")[1])["sessions"] == count:
            return time.perf_counter() - start
        time.sleep(0.02)
    raise AssertionError(f"sessions did not reach {count} within {seconds}s")


def test_it_serves_its_page_and_files_and_nothing_else(server):
    status, page = get(server.url)
    assert status == 200 and b"/play.js" in page
    assert get(server.url + "play.js")[0] == 200 and get(server.url + "play.css")[0] == 200
    for path in ("../pyproject.toml", "%2e%2e/%2e%2e/etc/passwd", "jaxrl/web/play.html", "config.yaml"):
        assert get(server.url + path)[0] == 404, path


def test_a_malformed_message_is_answered_and_the_game_goes_on(server):
    with connect(ws_url(server)) as ws:
        assert receive(ws, "hello")["env"] == "snake"
        receive(ws, "frame")
        for bad, said in (
            ("not json", "must be JSON"),
            ("[1, 2]", 'a JSON object with a "type"'),
            ('{"type": "jump"}', "type 'jump' is unknown"),
            ('{"type": "move", "move": "sideways"}', "move 'sideways' is invalid"),
            ('{"type": "speed", "fps": 500}', "fps 500 is invalid"),
            ('{"type": "new", "seed": -3}', "seed -3 is invalid"),
            ("x" * 2000, "at most 1000 characters"),
        ):
            ws.send(bad)
            assert said in receive(ws, "error")["message"], bad
        ws.send(b"\x00\x01")  # a binary message
        assert "one JSON object (text)" in receive(ws, "error")["message"]
        ws.send(json.dumps({"type": "new", "seed": 5}))
        receive(ws, "frame", seed=5)
        assert receive(ws, "frame", seed=5)["status"]["step"] >= 1  # still playing


def test_each_page_has_its_own_game_and_the_limit_refuses_one_more(server):
    with connect(ws_url(server)) as a, connect(ws_url(server)) as b:
        receive(a, "frame"), receive(b, "frame")
        a.send(json.dumps({"type": "new", "seed": 11}))
        b.send(json.dumps({"type": "pause"}))
        receive(a, "frame", seed=11)
        b.send(json.dumps({"type": "step"}))
        assert receive(b, "frame")["seed"] == 0  # b's own game
        with connect(ws_url(server)) as c:
            refused = receive(c, "error")
            assert refused["fatal"] and "plays 2 games at once" in refused["message"]
        assert json.loads(get(server.url + "status")[1])["sessions"] == 2


def test_a_closed_page_frees_its_game_within_a_second(server):
    wait_for_sessions(server, 0, 5)
    with connect(ws_url(server)) as ws:
        receive(ws, "frame")
        wait_for_sessions(server, 1, 5)
        ws.close()
        assert wait_for_sessions(server, 0, 1.0) < 1.0


def test_a_paused_game_steps_once_and_a_kept_game_is_written_where_the_command_line_said(server):
    with connect(ws_url(server)) as ws:
        receive(ws, "frame")
        ws.send(json.dumps({"type": "new", "seed": 2, "person": True}))
        ws.send(json.dumps({"type": "pause"}))
        receive(ws, "paused")
        ws.send(json.dumps({"type": "move", "move": "left"}))
        ws.send(json.dumps({"type": "step"}))
        receive(ws, "frame", seed=2, person=True)
        ws.send(json.dumps({"type": "save"}))
        saved = receive(ws, "saved")
    assert Path(saved["episode"]).parent == server.server.games_dir and Path(saved["gif"]).is_file()
    assert json.loads(Path(saved["episode"]).read_text())["seats"] == ["you"]


def test_check_message_takes_what_the_page_sends():
    assert check_message('{"type": "new", "seed": null, "person": true}')["person"] is True
    assert check_message('{"type": "speed", "fps": 0}')["fps"] == 0
    with pytest.raises(ValueError, match="person 'yes' is invalid"):
        check_message('{"type": "new", "person": "yes"}')


def test_a_port_in_use_an_unknown_run_and_bad_settings_are_one_line_each(tmp_path, capsys):
    taken = bind("127.0.0.1", 0)
    port = taken.getsockname()[1]
    try:
        for argv, said in (
            (["env=snake", f"port={port}"], f"port={port} on 127.0.0.1 cannot be used"),
            ([str(tmp_path / "nothing")], "nothing"),
            (["pretrained:nothing"], "pretrained:nothing"),
            (["env=CartPole-v1"], "CartPole-v1 cannot be drawn"),
            (["env=snake", "port=70000"], "port=70000 is invalid"),
            (["env=snake", "fps=100"], "fps=100 is invalid"),
            (["env=snake", "colour=blue"], "unknown setting 'colour'"),
            (["env.size=8"], "env.KEY= settings need env=NAME"),
            ([], "a target is required"),
        ):
            assert said in one_line_error(capsys, play_main(argv)), argv
    finally:
        taken.close()
    assert not (tmp_path / "nothing").exists()


def test_another_host_is_served_with_a_warning(capsys):
    served = serve(env={"name": "snake", "size": 6}, host="0.0.0.0", block=False, quiet=True)
    try:
        assert "warning: host=0.0.0.0 serves this page beyond this machine" in capsys.readouterr().err
        with socket.create_connection(("127.0.0.1", served.port), timeout=5):
            pass
    finally:
        served.stop()
