"""`python -m jaxrl.rate RUN_DIR [RUN_DIR ...] [key=value ...]`: a rating table of runs of one env (of two seats
or more) and the env's bots, from head-to-head games (`jaxrl.trained.rating`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jaxrl.cli import command
from jaxrl.config.compose import UsageError, integer_setting

USAGE = """usage: python -m jaxrl.rate RUN_DIR [RUN_DIR ...] [key=value ...]

  RUN_DIR              a run (its newest checkpoint), RUN_DIR@STEP for one checkpoint, a shelf agent
                       (pretrained:NAME), one of the env's bots (the arena's greedy / space / lookahead /
                       random_safe), or an HTTP snake (http://host:port, Battlesnake API v1)
  games=200            games per pair of players (seats rotated, greedy policies)
  checkpoints=latest   latest: each run's newest checkpoint | all: every checkpoint it kept
                       (a rating curve over training; keep more with checkpoint.keep=N when training)
  bots=true            add the env's bots (the arena's greedy, space, lookahead and random_safe; any env's random)
  seed=0               the games' seed
  out=DIR              where ratings.json and ratings.png go (default: the first run directory)

Every pair plays a round robin; one Bradley-Terry model on the Elo scale is fitted to all the
games (the env's weakest bot = 0: the arena's random_safe), with a standard error per rating. Same games, same table.
"""

DEFAULTS: dict[str, Any] = {"games": 200, "checkpoints": "latest", "bots": "true", "seed": 0, "out": None}


def parse_args(argv: list[str]) -> tuple[list[str], dict[str, Any]]:
    specs, args = [], dict(DEFAULTS)
    for item in argv:
        key, eq, value = item.partition("=")
        if not eq:
            specs.append(item)
            continue
        if key not in DEFAULTS:
            raise UsageError(f"unknown setting '{key}'; valid: {', '.join(DEFAULTS)}")
        args[key] = value
    if not specs:
        raise UsageError("give the runs to rate: python -m jaxrl.rate RUN_DIR [RUN_DIR ...]")
    for key, low in (("games", 1), ("seed", 0)):
        args[key] = integer_setting(key, args[key], low)
    if args["checkpoints"] not in ("latest", "all"):
        raise UsageError(f"checkpoints={args['checkpoints']} is invalid: allowed latest, all")
    if str(args["bots"]).lower() not in ("true", "false"):
        raise UsageError(f"bots={args['bots']} is invalid: allowed true, false")
    args["bots"] = str(args["bots"]).lower() == "true"
    return specs, args


def run(argv: list[str]) -> int:
    specs, args = parse_args(argv)
    from jaxrl.api import load
    from jaxrl.run.loggers import write_json
    from jaxrl.trained import rating

    found = rating.players(specs, load, args["checkpoints"], args["bots"])
    first_run = next((p.run_dir for p in found if p.run_dir), None)
    out = Path(args["out"]).expanduser() if args["out"] else Path(first_run or ".")
    if out.exists() and not out.is_dir():
        raise UsageError(f"out={args['out']} is a file: give a directory")
    print(f"rating {len(found)} players, {len(found) * (len(found) - 1) // 2} pairs x {args['games']} games")
    result = rating.rate(found, args["games"], args["seed"])
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "ratings.json", result)
    rating.plot(result, out / "ratings.png")
    rating.report(result)
    print(f"saved {out / 'ratings.json'} and {out / 'ratings.png'}")
    return 0


main = command(__name__)
