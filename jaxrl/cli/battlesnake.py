"""`python -m jaxrl.battlesnake replay FILE...`: games the official Battlesnake engine played, replayed
through the arena's own step (`jaxrl.battlesnake.replay`); exit 1 on any divergent turn."""

from __future__ import annotations

from pathlib import Path

from jaxrl.cli import command
from jaxrl.config.compose import UsageError

USAGE = """usage: python -m jaxrl.battlesnake serve TARGET [port=8000] [host=127.0.0.1] [color=#3cdc5a]
                                 [head=default] [tail=default] [workers=4] [forget_s=600]
                                 [warm=all] [most_boards=64] [compile_cache=PATH]
       python -m jaxrl.battlesnake play TARGET TARGET ... [games=1] [ruleset=standard] [size=11]
                                 [timeout=500] [seed=0] [out=battlesnake-games]
       python -m jaxrl.battlesnake replay FILE [FILE ...] [boards=3]

serve: TARGET (a run directory, RUN_DIR@STEP for one checkpoint, pretrained:NAME, a bot: greedy |
space | lookahead | random_safe, or an arena policy exported by python -m jaxrl.export as FILE.onnx, which
onnxruntime plays without jax) as a Battlesnake, answering
Battlesnake API v1 (GET /, POST /start, /move, /end) for any engine, the official CLI's
`battlesnake play --url http://127.0.0.1:8000` included. Each /move is the policy's greedy move on the
request's board and ruleset, as the run's own view sees it. It binds 127.0.0.1 unless host= says otherwise
(host=0.0.0.0 lets any machine that reaches the port make this one play). workers= requests answered at
once; forget_s= seconds after which a game with no request is forgotten. warm= the rulesets whose 7x7, 11x11
and 19x19 boards are compiled before it serves (a comma list, all or none; another board compiles at a game's
/start); most_boards= boards it compiles at most (past them, a new board gets safe moves by rule);
compile_cache= keeps the compiled boards on disk for the next start. docs/battlesnake.md.

play: jaxrl hosts games under the engine's rules between any mix of HTTP snakes (http://host:port), runs,
pretrained:NAME and bots (greedy, space, lookahead, random_safe); seats rotate game by game. An HTTP snake gets
/start, /move and /end as the engine sends them; a late (past timeout= ms), failed or invalid answer repeats its
last move. Each game is written as the official CLI writes it (OUT/game-<i>.jsonl, which replay reads back);
prints wins, draws and losses per player, and each HTTP snake's latency.

replay: games the official engine played: battlesnake-oracle/1 records (JSONL, gzip or not), or the
official CLI's log of one game (battlesnake play ... -o FILE), whose moves are read from the heads;
boards= how many of the first divergent turns to draw, the engine's board beside the arena's.
Every recorded turn is stepped by the arena (env=arena, the game's ruleset and settings) from the
engine's board before it, and compared with the engine's board after it: deaths, causes and who
was credited, every body cell, health, the food eaten, the hazards, and the food that appeared
(by the engine's law: how many, and where it may land). Prints games, turns and divergent turns
by kind and by ruleset. Exit status: 0 when no turn diverges, 1 when one does, 2 on bad input.
"""


def _board_pair(left: str, right: str) -> str:
    a, b = left.splitlines(), right.splitlines()
    width = max(len(line) for line in a)
    lines = [f"{'engine':<{width}}   arena"]
    lines += [f"{x:<{width}}   {y}" for x, y in zip(a, b)]
    return "\n".join(lines)


def replay_main(argv: list[str]) -> int:
    from jaxrl.battlesnake.replay import KINDS, RecordError, replay

    files, boards = [], 3
    for item in argv:
        key, eq, value = item.partition("=")
        if not eq:
            files.append(Path(item))
        elif key == "boards":
            if not value.isdigit():
                raise UsageError(f"boards={value!r} must be a whole number from 0 (boards drawn)")
            boards = int(value)
        else:
            raise UsageError(f"unknown setting {key}= (replay takes FILE... and boards=N)")
    if not files:
        raise UsageError("replay needs at least one FILE (python -m jaxrl.battlesnake --help)")
    for f in files:
        if not f.is_file():
            raise UsageError(f"{f} is not a file")
    try:
        report = replay(files, boards=boards)
    except RecordError as e:
        raise UsageError(str(e)) from None
    for _, why in report.skipped:
        print(f"skipped: {why}")
    rulesets = sorted(report.games)
    print(f"{'ruleset':<22}{'games':>7}{'turns':>9}{'divergent':>11}")
    for r in rulesets:
        print(f"{r:<22}{report.games[r]:>7,}{report.turns[r]:>9,}{report.divergent[r]:>11,}")
    total = sum(report.divergent.values())
    print(f"{'all':<22}{sum(report.games.values()):>7,}{sum(report.turns.values()):>9,}{total:>11,}")
    if total:
        print("\ndivergent turns by kind:")
        for r in rulesets:
            kinds = ", ".join(f"{k} {report.kinds[r][k]}" for k in KINDS if report.kinds[r][k])
            if kinds:
                print(f"  {r}: {kinds}")
    draws = {w: report.spawns[f"{w} draws"] for w in ("engine", "arena")}
    if draws["engine"]:
        rates = ", ".join(f"{w} {report.spawns[f'{w} spawns'] / max(draws[w], 1):.1%}" for w in draws)
        print(f"\nfood with the minimum met ({draws['engine']:,} turns): one more appeared on {rates}")
    for first in report.first:
        print(f"\n{first['where']}:")
        for kind, detail in first["found"]:
            print(f"  {kind}: {detail}")
        print(_board_pair(first["engine"], first["arena"]))
    if not report.games:
        raise UsageError("no game could be replayed")
    return 1 if total else 0


def run(argv: list[str]) -> int:
    if not argv:
        print(USAGE)
        return 2
    name, rest = argv[0], argv[1:]
    if name == "serve":
        return serve_main(rest)
    if name == "play":
        return play_main(rest)
    if name != "replay":
        raise UsageError(f"unknown command {name!r}: python -m jaxrl.battlesnake serve | play | replay ...")
    return replay_main(rest)


SERVE = {
    "port": 8000,
    "host": "127.0.0.1",
    "color": "#3cdc5a",
    "head": "default",
    "tail": "default",
    "workers": 4,
    "forget_s": 600,
    "warm": "all",
    "most_boards": 64,
    "compile_cache": "",
}
SERVE_NUMBERS = {"port": (0, 65535), "workers": (1, 256), "forget_s": (1, 86400), "most_boards": (1, 4096)}


PLAY = {"games": 1, "ruleset": "standard", "size": 11, "timeout": 500, "seed": 0, "out": "battlesnake-games"}
PLAY_NUMBERS = {"games": (1, 100_000), "size": (5, 32), "timeout": (1, 60_000), "seed": (0, 2**31 - 1)}


def play_main(argv: list[str]) -> int:
    from jaxrl.battlesnake import arena_class
    from jaxrl.battlesnake.host import play, report
    from jaxrl.trained.http import is_url

    settings: dict = dict(PLAY)
    targets = []
    for item in argv:
        key, eq, value = item.partition("=")
        if not eq or is_url(item):
            targets.append(item)
            continue
        if key not in settings:
            raise UsageError(f"unknown setting {key}=; play takes {', '.join(settings)}")
        settings[key] = number(key, value, PLAY_NUMBERS) if key in PLAY_NUMBERS else value
    if len(targets) < 1:
        raise UsageError("play needs a TARGET or more: http://host:port, a run, pretrained:NAME or a bot")
    rulesets = arena_class().rulesets
    if settings["ruleset"] not in rulesets:
        raise UsageError(f"ruleset={settings['ruleset']} is invalid: allowed {', '.join(rulesets)}")
    result = play(
        targets,
        games=settings["games"],
        ruleset=settings["ruleset"],
        size=settings["size"],
        timeout_ms=settings["timeout"],
        seed=settings["seed"],
        out=settings["out"],
    )
    report(result)
    return 0


def number(key: str, value: str, ranges: dict) -> int:
    low, high = ranges[key]
    if not value.isdigit() or not low <= int(value) <= high:
        raise UsageError(f"{key}={value} is invalid: a whole number from {low} to {high}")
    return int(value)


def serve_main(argv: list[str]) -> int:
    from jaxrl.battlesnake.server import serve

    plain = [a for a in argv if "=" not in a]
    if len(plain) != 1:
        got = " ".join(plain) or "none"
        raise UsageError(f"serve takes one TARGET, got {got} (python -m jaxrl.battlesnake --help)")
    settings: dict = dict(SERVE)
    for item in argv:
        key, eq, value = item.partition("=")
        if not eq:
            continue
        if key not in settings:
            raise UsageError(f"unknown setting {key}=; serve takes {', '.join(settings)}")
        settings[key] = number(key, value, SERVE_NUMBERS) if key in SERVE_NUMBERS else value
    try:
        serve(plain[0], **settings)
    except KeyboardInterrupt:  # the way a server is stopped
        return 0
    return 0


main = command(__name__)
