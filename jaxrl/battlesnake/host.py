"""jaxrl as the host of Battlesnake games: `python -m jaxrl.battlesnake play TARGET TARGET ...`.

The players are any mix of HTTP snakes (`http://host:port`: anyone's Battlesnake server), runs, shelf agents
(`pretrained:NAME`) and the env's bots. Each game is stepped by the env that plays the engine's rules (the
registry's `jaxrl.battlesnake.ENV`) through `trained/hosted.py`, the loop head-to-head games with HTTP snakes
use too: every snake gets `/start`, a `/move` per turn it is alive in and `/end`, as the engine sends them, all
snakes asked at once; a late (past `timeout` ms), failed or invalid answer repeats that snake's last move (its
first: "up"), the engine's rule. Runs, shelf agents and bots answer in this process, the way
`python -m jaxrl.battlesnake serve` would answer them.

Seats rotate game by game. Each game is written as the official CLI's `battlesnake play -o` log (the game line,
the `/move` body of each turn played, the result line), which `python -m jaxrl.battlesnake replay` reads back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax

from jaxrl.config.compose import UsageError
from jaxrl.trained.hosted import Host
from jaxrl.trained.http import HttpSnake, is_url, latency_line

MAX_TURNS = 100_000  # a game the rules never end (a solo snake that never starves cannot: health falls)


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
    if is_url(target):
        return HttpSnake(target, timeout_ms)
    return LocalSnake(target)


def table(ruleset: str, size: int, snakes: int) -> Host:
    """The host of games of `snakes` snakes on a `size` board under `ruleset` (UsageError: one the env cannot)."""
    from jaxrl.battlesnake import arena_class
    from jaxrl.envs.base import table_params

    try:
        env = arena_class()(size=size, num_snakes=snakes, num_agents=snakes, view=3, ruleset=ruleset)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return Host(env, table_params(env, env.default_params))


def play_game(host: Host, players: list[Any], seed: int, timeout_ms: int, game_id: str, log: Path | None) -> dict:
    """One game of `players` (seat k is players[k]); its result: the winner's seat (None: a draw), turns."""
    names = [p.name for p in players]
    game = {"id": game_id, "timeout": timeout_ms, "source": "jaxrl"}
    out = host.play(players, jax.random.key(seed), MAX_TURNS, game, names, log=True)  # to the env's end alone
    alive = [int(k) for k in out["alive"].nonzero()[0]]
    winner = alive[0] if len(alive) == 1 and len(players) > 1 else None
    lines = out["lines"]
    if winner is not None:
        you = host.request(out["state"], winner, game, names)["you"]
        result = {"winnerId": you["id"], "winnerName": you["name"], "isDraw": False}
    else:
        result = {"winnerId": "", "winnerName": "", "isDraw": len(players) > 1}
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        game_line = lines[0]["game"] if lines else game
        log.write_text("".join(json.dumps(line) + "\n" for line in [game_line, *lines, result]))
    return {"winner": winner, "turns": out["length"], "alive": alive}


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
    host = table(ruleset, size, len(players))
    for g in range(games):
        order = [players[(s + g) % len(players)] for s in range(len(players))]
        result = play_game(host, order, seed + g, timeout_ms, f"jaxrl-{seed}-{g}", out / f"game-{g}.jsonl")
        for k, p in enumerate(order):
            if result["winner"] == k or (len(order) == 1 and k in result["alive"]):
                tally[p.name]["wins"] += 1
            elif result["winner"] is None and (k in result["alive"] or not result["alive"]):
                tally[p.name]["draws"] += 1
            else:
                tally[p.name]["losses"] += 1
        won = order[result["winner"]].name if result["winner"] is not None else "a draw"
        say(f"  game {g}: {result['turns']} turns, {won}")
    latency = {p.name: p.answers.summary() for p in players if p.answers is not None}
    return {"games": games, "ruleset": ruleset, "size": size, "out": str(out), "table": tally, "latency": latency}


def report(result: dict[str, Any]) -> None:
    """The table for the terminal."""
    width = max(len(n) for n in result["table"])
    print(f"{result['games']} games, {result['ruleset']} on {result['size']}x{result['size']}, logs in {result['out']}")
    print(f"  {'player':<{width}}  {'wins':>5} {'draws':>5} {'losses':>6}   latency (HTTP snakes)")
    for name, row in result["table"].items():
        lat = result["latency"].get(name)
        shown = latency_line(lat) if lat else ""
        print(f"  {name:<{width}}  {row['wins']:>5} {row['draws']:>5} {row['losses']:>6}   {shown}")
