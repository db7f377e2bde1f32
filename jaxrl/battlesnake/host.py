"""jaxrl as the host of Battlesnake games: `python -m jaxrl.battlesnake play TARGET TARGET ...`.

The players are any mix of HTTP snakes (`http://host:port`: anyone's Battlesnake server), runs, shelf agents
(`pretrained:NAME`) and the env's bots. Each game is stepped by the env that plays the engine's rules (the
registry's `jaxrl.battlesnake.ENV`), through the env contract (`board_request`, `board_action`): no second copy
of the rules. Every HTTP snake gets `/start`, a `/move` per turn it is alive in and `/end`, as the engine sends
them, all snakes asked at once; a late (past `timeout` ms), failed or invalid answer repeats that snake's last
move (its first: "up"), the engine's rule. Runs, shelf agents and bots answer in this process, the way
`python -m jaxrl.battlesnake serve` would answer them.

Seats rotate game by game. Each game is written as the official CLI's `battlesnake play -o` log (the game line,
one `/move` body per turn, the result line), which `python -m jaxrl.battlesnake replay` reads back.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.config.compose import UsageError
from jaxrl.trained.http import HttpSnake

FIRST_MOVE = "up"  # the move a snake without one yet repeats (the engine's default)
MAX_TURNS = 100_000  # a game the rules never end (a solo snake that never starves cannot: health falls)
SETTINGS = {"foodSpawnChance": 15, "minimumFood": 1, "hazardDamagePerTurn": 14, "royale": {"shrinkEveryNTurns": 25}}


class LocalSnake:
    """A run, shelf agent or bot answering in this process, as `serve` answers for it."""

    def __init__(self, target: str):
        from jaxrl.battlesnake.server import Snake, player

        self.snake = Snake(player(target))
        self.name = self.snake.who.name
        self.answers = None

    def start(self, request: dict[str, Any]) -> None:
        self.snake.start(request)

    def move(self, request: dict[str, Any]) -> str | None:
        return self.snake.move(request)["move"]

    def end(self, request: dict[str, Any]) -> None:
        self.snake.end(request)


def seat(target: str, timeout_ms: int) -> HttpSnake | LocalSnake:
    """A player of a target: an HTTP snake, a run, pretrained:NAME, or a bot."""
    if target.startswith(("http://", "https://")):
        return HttpSnake(target, timeout_ms)
    return LocalSnake(target)


def game_line(game_id: str, ruleset: str, timeout_ms: int) -> dict[str, Any]:
    """The game object the engine sends in every request (and the CLI writes first)."""
    return {
        "id": game_id,
        "ruleset": {"name": ruleset, "version": "jaxrl", "settings": SETTINGS},
        "map": "royale" if ruleset == "royale" else "standard",
        "timeout": timeout_ms,
        "source": "jaxrl",
    }


def play_game(
    players: list[Any], ruleset: str, size: int, seed: int, timeout_ms: int, game_id: str, log: Path | None
) -> dict[str, Any]:
    """One game of `players` (seat k is players[k]); its result: the winner's seat (None: a draw), turns."""
    import jax

    from jaxrl.battlesnake import arena_class
    from jaxrl.envs.base import hook, table_params

    n = len(players)
    try:
        env = arena_class()(size=size, num_snakes=n, num_agents=n, view=3, ruleset=ruleset)
    except ValueError as e:
        raise UsageError(str(e)) from None
    params = table_params(env, env.default_params)
    step = jax.jit(lambda k, s, a: env.step_env(k, s, a, params)[1:4:2])  # (state, terminated)
    key = jax.random.key(seed)
    key, reset_key = jax.random.split(key)
    _, state = env.reset_env(reset_key, params)
    game = game_line(game_id, ruleset, timeout_ms)
    names = [p.name for p in players]
    lines = [game]

    def request(concrete: Any, k: int) -> dict[str, Any]:
        body = hook(env, "board_request")(concrete, k, game)
        for snake in body["board"]["snakes"]:
            snake["name"] = names[int(snake["id"][1:])]
        return body

    last = [FIRST_MOVE] * n
    asked: dict[int, dict[str, Any]] = {}
    last_you: dict[str, Any] | None = None
    concrete = jax.device_get(state)
    alive = lambda c: [int(k) for k in np.flatnonzero(np.asarray(hook(env, "seat_alive")(c)))]
    with ThreadPoolExecutor(max_workers=n) as pool:
        list(pool.map(lambda k: players[k].start(request(concrete, k)), alive(concrete)))
        over, turns = False, 0
        while True:
            live = alive(concrete)
            lines.append(request(concrete, live[0]) if live else {**request(concrete, 0), "you": last_you})
            if over or not live or turns >= MAX_TURNS:
                break
            asked = {k: request(concrete, k) for k in live}
            last_you = asked[live[0]]["you"]
            moves = dict(zip(live, pool.map(lambda k: players[k].move(asked[k]), live), strict=True))
            for k, move in moves.items():
                last[k] = move or last[k]
            actions = np.array(
                [hook(env, "board_action")(concrete, k, last[k]) if k in moves else 1 for k in range(n)], np.int32
            )
            key, turn_key = jax.random.split(key)
            state, terminated = step(turn_key, state, actions)
            concrete, over, turns = jax.device_get(state), bool(terminated), turns + 1
        board = lines[-1]["board"]  # the final board, as the engine sends it with /end to every snake
        yours = {
            k: (request(concrete, k) if k in alive(concrete) else asked.get(k) or lines[1])["you"] for k in range(n)
        }
        list(pool.map(lambda k: players[k].end({**lines[-1], "board": board, "you": yours[k]}), range(n)))
    winners = alive(concrete)
    winner = winners[0] if len(winners) == 1 and n > 1 else None
    won = winner is not None
    lines.append(
        {
            "winnerId": f"s{winner}" if won else "",
            "winnerName": names[winner] if won else "",
            "isDraw": n > 1 and not won,
        }
    )
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return {"winner": winner, "turns": turns, "alive": winners}


def play(
    targets: list[str],
    games: int = 1,
    ruleset: str = "standard",
    size: int = 11,
    timeout_ms: int = 500,
    seed: int = 0,
    out: str | Path = "battlesnake-games",
    say: Any = print,
) -> dict[str, Any]:
    """`games` games of `targets` (seats rotated game by game), each written to OUT/game-<i>.jsonl; the table of
    wins, draws and losses per player, with the latency of each HTTP snake."""
    if not targets:
        raise UsageError("play needs at least one TARGET (python -m jaxrl.battlesnake --help)")
    players = [seat(t, timeout_ms) for t in targets]
    names = [p.name for p in players]
    if len(set(names)) != len(names):
        raise UsageError(f"{next(n for n in names if names.count(n) > 1)} is given twice: each player once")
    tally = {name: {"wins": 0, "draws": 0, "losses": 0} for name in names}
    out = Path(out).expanduser()
    for g in range(games):
        order = [players[(s + g) % len(players)] for s in range(len(players))]
        result = play_game(order, ruleset, size, seed + g, timeout_ms, f"jaxrl-{seed}-{g}", out / f"game-{g}.jsonl")
        for k, p in enumerate(order):
            if result["winner"] == k or (len(order) == 1 and k in result["alive"]):
                tally[p.name]["wins"] += 1
            elif result["winner"] is None and (k in result["alive"] or not result["alive"]):
                tally[p.name]["draws"] += 1
            else:
                tally[p.name]["losses"] += 1
        won = order[result["winner"]].name if result["winner"] is not None else "a draw"
        say(f"  game {g}: {result['turns']} turns, {won}")
    latency = {}
    for p in players:
        if p.answers is not None:
            ms = np.asarray(p.answers.times) * 1000
            latency[p.name] = {
                "answered": int(ms.size),
                "p50_ms": float(np.percentile(ms, 50)) if ms.size else None,
                "p99_ms": float(np.percentile(ms, 99)) if ms.size else None,
                "max_ms": float(ms.max()) if ms.size else None,
                "late": p.answers.late,
                "failed": p.answers.failed,
                "invalid": p.answers.invalid,
            }
    return {"games": games, "ruleset": ruleset, "size": size, "out": str(out), "table": tally, "latency": latency}


def report(result: dict[str, Any]) -> None:
    """The table for the terminal."""
    width = max(len(n) for n in result["table"])
    print(f"{result['games']} games, {result['ruleset']} on {result['size']}x{result['size']}, logs in {result['out']}")
    print(f"  {'player':<{width}}  {'wins':>5} {'draws':>5} {'losses':>6}   latency (HTTP snakes)")
    for name, row in result["table"].items():
        lat = result["latency"].get(name)
        shown = ""
        if lat:
            shown = (
                f"p50 {lat['p50_ms'] or 0:.1f} ms, p99 {lat['p99_ms'] or 0:.1f} ms, max {lat['max_ms'] or 0:.0f} ms;"
                f" {lat['late']} late, {lat['failed']} failed, {lat['invalid']} invalid"
            )
        print(f"  {name:<{width}}  {row['wins']:>5} {row['draws']:>5} {row['losses']:>6}   {shown}")
