"""`python -m jaxrl.play TARGET [key=value ...]`: the play page (see jaxrl/play/__init__.py)."""

from __future__ import annotations

from typing import Any

from jaxrl.cli import command
from jaxrl.config.compose import UsageError, integer_setting

USAGE = """usage: python -m jaxrl.play TARGET [key=value ...]

  TARGET               a run directory, pretrained:NAME (python -m jaxrl.pretrained list), or env=NAME with
                       env.KEY=VALUE settings (a person plays; no agent): any registered env that draws itself
  port=0               the port (0: a free one); the URL is printed
  host=127.0.0.1       where it listens; another host serves the page beyond this machine (a warning says so)
  sessions=4           games at once (a page each)
  fps=8                steps per second at the start (the page sets 1 to 60, or as fast as it goes)
  seed=0               the first game's seed (the page's seed field replays any game exactly)
  person=false         start with a person seated (the page's Play button seats one too)
  opponents=KIND       games of several seats: who sits beside the run when a person plays: one of the env's
                       bots (the arena's greedy | space | lookahead | random_safe) | a run directory |
                       pretrained:NAME (default: the env's first bot)
  num_bots=N           envs whose bots can be set (the arena): how many bots (default: as trained)
  vs=OPPONENT          games of two seats or more: head-to-head games of the run against another run,
                       pretrained:NAME or one of the env's bots, seats rotated each game
  step=N               the run's checkpoint (default the newest); member=K a sweep's member
  games=DIR            where saved games go (default RUN_DIR/games)

Keys on the page: arrows or WASD move (E collects in the grid); space pauses; . steps; N a new game; P plays,
V watches; H shows the agent's move; K keeps the game (an episode file and a GIF in games=: replay it with
python -m jaxrl.eval replay=FILE).
"""

DEFAULTS: dict[str, Any] = {
    "target": None,
    "port": 0,
    "host": "127.0.0.1",
    "sessions": 4,
    "fps": 8,
    "seed": 0,
    "person": False,
    "opponents": None,
    "num_bots": None,
    "vs": None,
    "step": None,
    "member": None,
    "games": None,
}


def parse_args(argv: list[str]) -> dict[str, Any]:
    """key=value arguments checked against DEFAULTS; `env=` and `env.*=` gather into the env settings."""
    args: dict[str, Any] = dict(DEFAULTS)
    env: dict[str, Any] = {}
    if argv and "=" not in argv[0]:
        args["target"] = argv[0]
        argv = argv[1:]
    for item in argv:
        key, eq, value = item.partition("=")
        if not eq:
            raise UsageError(
                f"bad argument '{item}': expected key=value after the target (python -m jaxrl.play --help)"
            )
        if key == "env":
            env["name"] = value
        elif key.startswith("env."):
            env[key[4:]] = value
        elif key not in DEFAULTS or key == "target" and args["target"] is not None:
            raise UsageError(f"unknown setting '{key}'; valid: env=, env.KEY=, {', '.join(k for k in DEFAULTS)}")
        else:
            args[key] = value
    if env and "name" not in env:
        raise UsageError("env.KEY= settings need env=NAME (a registered env: snake, grid, arena, ...)")
    if env and args["target"] is not None:
        raise UsageError(f"give a run or env=, not both: {args['target']} and env={env['name']}")
    if not env and args["target"] is None:
        raise UsageError("a target is required: python -m jaxrl.play RUN_DIR | pretrained:NAME | env=NAME")
    for key, low in (("port", 0), ("sessions", 1), ("seed", 0), ("step", 0), ("member", 0), ("num_bots", 0)):
        if args[key] is not None:
            args[key] = integer_setting(key, args[key], low)
    if args["port"] > 65535:
        raise UsageError(f"port={args['port']} is invalid: 0 (a free port) to 65535")
    try:
        args["fps"] = float(args["fps"])
    except ValueError:
        raise UsageError(f"fps={args['fps']} is invalid: a number from 1 to 60, or 0 for as fast as it goes") from None
    if not 0 <= args["fps"] <= 60:
        raise UsageError(f"fps={args['fps']:g} is invalid: a number from 1 to 60, or 0 for as fast as it goes")
    person = str(args["person"]).lower()
    if person not in ("true", "false"):
        raise UsageError(f"person={args['person']} is invalid: allowed true, false")
    args["person"] = person == "true"
    args["env"] = _typed(env) if env else None
    return args


def _typed(env: dict[str, str]) -> dict[str, Any]:
    """env.KEY=VALUE settings as YAML reads them on the train command line (8 -> 8, true -> True)."""
    import yaml

    return {k: (v if k == "name" else yaml.safe_load(v)) for k, v in env.items()}


def run(argv: list[str]) -> int:
    from jaxrl.play import serve

    args = parse_args(argv)
    try:
        serve(**args)
    except KeyboardInterrupt:  # the way a server is stopped
        return 0
    return 0


main = command(__name__)
