"""The Battlesnake server's answer time: `/move` latency of `python -m jaxrl.battlesnake serve` over real
sockets on 127.0.0.1, several games at once.

The shelf's arena champion is served on a free port. Games of greedy bots are played in the arena first, and
each turn becomes the `/move` body the engine would send (`board_request`); then one client thread per game
starts its game (`/start` compiles the board) and sends its turns one after another, all games at once, timing
each request from send to answer. The engine waits 500 ms by default; the target is a p99 of at most 50 ms on
a 2-core CPU with 4 games at once on 19x19 with 8 snakes.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from typing import Any

import numpy as np

from jaxrl.bench.common import Context

NAME = "serve"
TITLE = "Battlesnake server: /move latency"
TARGET_P99_MS = 50.0
SERVED = "pretrained:arena-selfplay-v2"


def game_requests(size: int, snakes: int, turns: int, seed: int, game_id: str) -> list[dict[str, Any]]:
    """The `/move` bodies of one game of greedy bots (seat 0 answering, while it lives), up to `turns`."""
    import jax

    from jaxrl import envs
    from jaxrl.envs.base import hook, table_params

    arena, params = envs.make("arena", size=size, num_snakes=snakes, view=3)
    table = hook(arena, "table")()
    params = table_params(table, params)
    step = jax.jit(lambda k, s: table.step_env(k, s, table.bot_actions(k, s, "greedy"), params)[1])
    key = jax.random.key(seed)
    _, state = table.reset_env(key, params)
    game = {"id": game_id, "timeout": 500}  # the env writes its ruleset, settings and map
    out = []
    for _ in range(turns):
        concrete = jax.device_get(state)
        if not bool(concrete.alive[0]) or int(concrete.alive.sum()) < 2:
            break
        out.append(table.board_request(concrete, 0, game, params=params))
        key, turn_key = jax.random.split(key)
        state = step(turn_key, state)
    return out


def play(port: int, requests: list[dict[str, Any]], times: list[float]) -> None:
    """One game: /start, every /move in turn (timed), /end, over one kept-alive connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def post(path: str, body: dict) -> None:
        conn.request("POST", path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        answer = conn.getresponse()
        answer.read()
        if answer.status != 200:
            raise RuntimeError(f"{path} answered {answer.status}")

    post("/start", requests[0])
    for request in requests:
        t0 = time.perf_counter()
        post("/move", request)
        times.append(time.perf_counter() - t0)
    post("/end", requests[-1])
    conn.close()


def measure(size: int, snakes: int, games: int, turns: int) -> dict[str, Any]:
    from jaxrl.battlesnake.server import serve

    boards = [game_requests(size, snakes, turns, seed, f"bench-{size}-{snakes}-{seed}") for seed in range(games)]
    served = serve(SERVED, port=0, block=False, quiet=True)
    try:
        times: list[list[float]] = [[] for _ in boards]
        threads = [threading.Thread(target=play, args=(served.port, b, t)) for b, t in zip(boards, times, strict=True)]
        wall = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - wall
    finally:
        served.stop()
    ms = np.concatenate([np.asarray(t) for t in times]) * 1000
    return {
        "size": size,
        "snakes": snakes,
        "games": games,
        "moves": int(ms.size),
        "p50_ms": float(np.percentile(ms, 50)),
        "p99_ms": float(np.percentile(ms, 99)),
        "max_ms": float(ms.max()),
        "wall_s": wall,
    }


def run(ctx: Context) -> dict[str, Any]:
    turns = ctx.pick(8, 60, 150)
    rows = [measure(11, 4, 4, turns), measure(19, 8, 4, turns)]
    headlines = [
        {
            "what": f"`/move` of {SERVED} served, 4 games at once, {r['size']}x{r['size']} with {r['snakes']} snakes",
            "figure": f"p99 {r['p99_ms']:.1f} ms (p50 {r['p50_ms']:.1f}, max {r['max_ms']:.0f}) over {r['moves']:,}"
            f" moves (target p99 {TARGET_P99_MS:g} ms; the engine waits 500 ms)",
        }
        for r in rows
    ]
    return {"rows": rows, "target_p99_ms": TARGET_P99_MS, "headlines": headlines}


def report(result: dict[str, Any]) -> str:
    md = [
        f"`{SERVED}` served by `python -m jaxrl.battlesnake serve` on 127.0.0.1; one client thread per game, each"
        " sending its game's turns in order (games of greedy bots played in the arena first); the time from"
        " sending a `/move` to its answer. Target: p99 at most"
        f" {result['target_p99_ms']:g} ms on 19x19 with 8 snakes and 4 games at once (the engine waits 500 ms).",
        "",
        "| board | snakes | games at once | moves | p50 ms | p99 ms | max ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        md.append(
            f"| {r['size']}x{r['size']} | {r['snakes']} | {r['games']} | {r['moves']:,} | {r['p50_ms']:.1f}"
            f" | {r['p99_ms']:.1f} | {r['max_ms']:.0f} |"
        )
    return "\n".join(md)
