"""An exported arena policy served with numpy and onnxruntime alone: its view of every recorded `/move` body is
the env's own, and over real sockets, in a process where jax cannot be imported, it answers as the served run."""

import gzip
import json
import os
import socket
import subprocess
import sys

import jax
import numpy as np
import pytest

from jaxrl import envs
from jaxrl.battlesnake.onnx import Unplayable, arena_view
from tests.battlesnake.test_server import DATA, ROOT, post, requests


def variant_requests() -> list[dict]:
    """A `/move` body for each live snake of every 5th turn of the recorded games of the other rulesets."""
    found = []
    with gzip.open(DATA / "official-variants-dev.jsonl.gz", "rt") as f:
        for game in map(json.loads, f):
            for turn in game["turns"][::5]:
                point = lambda p: {"x": p[0], "y": p[1]}
                snakes = [
                    {"id": s["id"], "health": s["health"], "body": [point(p) for p in s["body"]]}
                    for s in turn["snakes"]
                    if not s["eliminatedCause"]
                ]
                board = {
                    "width": game["width"],
                    "height": game["height"],
                    "snakes": snakes,
                    "food": [point(p) for p in turn["food"]],
                    "hazards": [point(p) for p in turn["hazards"]],
                }
                rules = {"id": game["seed"], "ruleset": {"name": game["ruleset"]}}
                found += [{"game": rules, "turn": turn["turn"], "board": board, "you": s} for s in snakes]
    return found


@pytest.mark.parametrize(
    ("view", "every", "tails"),  # the tails channel adds a plane to the same eight
    [
        (11, 4, True),
        pytest.param(7, 1, False, marks=pytest.mark.slow),
        pytest.param(25, 1, True, marks=pytest.mark.slow),
    ],
)
def test_the_numpy_view_of_each_recorded_board_is_the_envs(view, every, tails):
    from jaxrl.battlesnake.onnx import ENV_VERSION

    assert envs.spec("arena").version == ENV_VERSION  # a new arena version is a new view to port here
    arena, _ = envs.make("arena", view=view, tails=tails)
    seen_rulesets, compared, jitted = set(), 0, {}
    for request in (requests() + variant_requests())[::every]:
        try:
            obs, heading, allowed = arena_view(request, view, tails)
        except Unplayable:
            with pytest.raises(ValueError):
                arena.board_game(request)
            continue
        board = arena.board_game(request)
        env, state = board["env"], board["state"]
        key = (env.ruleset, env.size, env.num_snakes)  # one compile per kind of board, not op by op
        views = jitted.setdefault(key, jax.jit(lambda s, env=env: env.views(s, (0,))))
        want = np.asarray(views(state))[0]
        np.testing.assert_array_equal(obs, want)
        assert obs.shape[-1] == 8 + tails
        assert heading == int(np.asarray(state.heading)[0])
        np.testing.assert_array_equal(allowed, board["allowed"])
        seen_rulesets.add(env.ruleset)
        compared += 1
    assert compared > 2000 // every and seen_rulesets == {
        "standard",
        "solo",
        "wrapped",
        "constrictor",
        "wrapped_constrictor",
        "royale",
    }


@pytest.mark.parametrize(("side", "snakes"), [(4, 2), (33, 2), (40, 8), (19, 33)])
def test_a_board_the_arena_does_not_play_is_refused_by_both_views(side, snakes):
    from jaxrl.battlesnake.server import board_example

    request = board_example(side, "standard", snakes=snakes)
    with pytest.raises(Unplayable):
        arena_view(request, 11)
    with pytest.raises(ValueError):
        envs.make("arena")[0].board_game(request)


def answer(port: int, request: dict) -> str:
    status, body = post(type("S", (), {"port": port})(), "/move", request)
    assert status == 200, body
    return json.loads(body)["move"]


@pytest.mark.slow
def test_a_served_onnx_file_needs_no_jax_and_moves_as_the_run(tmp_path):
    pytest.importorskip("jax2onnx")
    pytest.importorskip("onnxruntime")
    from jaxrl.battlesnake.server import serve
    from jaxrl.cli.export import main as export_main

    model = tmp_path / "champion.onnx"
    assert export_main(["pretrained:arena-champion-v2", str(model), "check=1000"]) == 0
    # The server in a process where importing jax fails: a served .onnx file must not need it.
    code = (
        "import sys; sys.modules['jax'] = None; sys.modules['jaxlib'] = None\n"
        "from jaxrl.cli.battlesnake import main\n"
        f"sys.exit(main(['serve', {str(model)!r}, 'port={{port}}', 'host=127.0.0.1']))\n"
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = code.replace("{port}", str(port))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    served = serve("pretrained:arena-champion-v2", port=0, block=False, quiet=True, warm="none")
    try:
        line = proc.stdout.readline()
        while line and "serving" not in line:
            line = proc.stdout.readline()
        assert "serving" in line, proc.stderr.read()
        bodies = [r for r in requests() if r["game"]["ruleset"]["name"] == "standard"][:300]
        same = sum(answer(port, r) == answer(served.port, r) for r in bodies)
        assert same >= 0.99 * len(bodies), (same, len(bodies))
        status, _ = post(type("S", (), {"port": port})(), "/move", b"{not json")
        assert status == 400 and proc.poll() is None  # a bad request gets a 4xx; the server goes on
    finally:
        served.stop()
        proc.terminate()
        proc.wait(timeout=30)


def test_a_file_that_is_not_an_arena_policy_is_refused_in_one_line(tmp_path):
    pytest.importorskip("onnxruntime")
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not a model")
    proc = subprocess.run(
        [sys.executable, "-m", "jaxrl.battlesnake", "serve", str(junk), "port=0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "is not an ONNX model" in lines[0], proc.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "jaxrl.battlesnake", "serve", str(tmp_path / "nope.onnx")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert missing.returncode == 2 and "nope.onnx is not a file" in missing.stderr.strip()
