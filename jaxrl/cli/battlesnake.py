"""`python -m jaxrl.battlesnake replay FILE...`: games the official Battlesnake engine played, replayed
through the arena's own step (`jaxrl.battlesnake.replay`); exit 1 on any divergent turn."""

from __future__ import annotations

from pathlib import Path

from jaxrl.cli import command
from jaxrl.config.compose import UsageError

USAGE = """usage: python -m jaxrl.battlesnake replay FILE [FILE ...] [boards=3]

  FILE       games the official engine played: battlesnake-oracle/1 records (JSONL, gzip or not),
             or the official CLI's log of one game (battlesnake play ... -o FILE), whose moves
             are read from the heads
  boards=3   how many of the first divergent turns to draw, the engine's board beside the arena's

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
    if name != "replay":
        raise UsageError(f"unknown command {name!r}: python -m jaxrl.battlesnake replay FILE...")
    return replay_main(rest)


main = command(__name__)
