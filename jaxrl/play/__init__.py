"""Watch and play: `python -m jaxrl.play TARGET` serves a page where a person watches a run play, step by step,
and takes a seat against it. `serve(...)` is the same from Python (a notebook: `block=False`).

TARGET is a run directory, `pretrained:NAME` (a shelf agent) or `env=NAME` with its `env.KEY=VALUE` settings
(a person plays, no agent). The game runs here, with the env's own jitted step and the run's own policy
(`jaxrl.play.game`); the page only draws the env's picture and sends keys (`jaxrl.play.server`). Needs the
`[play]` extra: `pip install "jaxrl[play]"`.
"""

from __future__ import annotations

import dataclasses
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from jaxrl.config.compose import UsageError

LOCAL = ("127.0.0.1", "localhost", "::1")


def local_url(host: str, port: int, serves: str, exposes: str) -> str:
    """The URL a server on host:port is reached at from this machine; on a host beyond it, a warning (stderr):
    it `serves` beyond this machine, and anyone who reaches the port `exposes` (what they can do)."""
    if host not in LOCAL:
        line = f"warning: host={host} {serves} beyond this machine: anyone who reaches port {port} {exposes}"
        print(line, file=sys.stderr)
    shown = f"[{host}]" if ":" in host else host
    return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else shown}:{port}"


def require_play_extra() -> None:
    """UsageError, one line, when the `[play]` extra is not installed."""
    missing = []
    for module in ("starlette", "uvicorn", "websockets"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise UsageError(f'the play page needs {", ".join(missing)}: pip install "jaxrl[play]"')


def _agent_of(spec: str, flag: str, host: Any) -> Any:
    """An Agent of a run directory or shelf agent that can sit at `host`'s table (other runs at the table)."""
    from jaxrl.api import load
    from jaxrl.play.game import Agent
    from jaxrl.trained.headtohead import check_pair, player

    found = player(spec, load, flag=flag)
    check_pair(host, found, flag=flag)
    policy = found.policy
    return Agent(found.name, policy.apply, policy.params, policy.initial_carry, env=found.env)


def make_table(
    target: str | None = None,
    env: dict[str, Any] | None = None,
    opponents: str | None = None,
    num_bots: int | None = None,
    vs: str | None = None,
    step: int | None = None,
    member: int | None = None,
) -> tuple[Any, Path]:
    """(the Table every page of a server shares, the folder its saved games go to) of a run directory or
    shelf agent `target`, or of `env` settings alone ({"name": "snake", "size": 8}); UsageError otherwise."""
    import jax

    from jaxrl.play.game import Table, run_agent
    from jaxrl.trained.evaluation import with_opponents

    if (target is None) == (env is None):
        raise UsageError("give one target: a run directory, pretrained:NAME, or env=NAME")
    if env is not None:
        from jaxrl.api import make_config
        from jaxrl.config.environment import make_env
        from jaxrl.trained.evaluation import params_for_eval

        settings = dict(env)
        name = settings.pop("name")
        cfg = make_config(env=name, **{f"env.{k}": v for k, v in settings.items()})
        built, params = make_env(cfg)
        params = jax.tree.map(
            lambda x: x[0], params_for_eval(built, jax.tree.map(lambda x: jax.numpy.asarray(x)[None], params))
        )
        agent, seeds, games = None, 1, Path("runs") / f"play-{name}" / "games"
        label = f"env={name}"
    else:
        from jaxrl.api import load
        from jaxrl.config.schema import ConfigError
        from jaxrl.run.checkpoint import CheckpointError

        try:
            run = load(target)
            agent, built, params, info = run_agent(run, step, member)
        except (ConfigError, CheckpointError) as e:
            raise UsageError(str(e)) from None
        cfg, seeds, games, label = info["config"], info["seeds"], Path(run.run_dir) / "games", agent.name
    from jaxrl.envs.base import hook
    from jaxrl.trained.headtohead import Player

    kinds = hook(built, "bot_kinds")
    if (opponents is not None or num_bots is not None) and hook(built, "num_seats") < 2:
        raise UsageError(f"opponents= and num_bots= apply to games of several players; {built.name} seats one")
    as_bots = opponents if opponents in kinds else None
    built, params, _ = with_opponents(built, params, as_bots, num_bots)
    host = Player(name=label, env=built, env_params=params)
    others = as_bots
    if opponents is not None and as_bots is None:
        others = _agent_of(opponents, "opponents", host)
    versus = None
    if vs is not None:
        if hook(built, "num_seats") < 2:
            raise UsageError(f"vs= needs a game of two seats or more; {built.name} seats one")
        versus = vs if vs in kinds else _agent_of(vs, "vs", host)
    seats = hook(built, "game_seats")(params)
    table = Table(built, params, agent, cfg, seeds, others, versus, label, seats)
    return table, games


@dataclasses.dataclass
class Served:
    """A play server running: its `url`; `stop()` ends it (a server started with `block=False`)."""

    url: str
    port: int
    server: Any  # jaxrl.play.server.Server: the app and its sessions
    uvicorn: Any
    thread: threading.Thread | None = None

    def stop(self) -> None:
        self.uvicorn.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=10)

    def _repr_html_(self) -> str:
        return f"<a href='{self.url}' target='_blank'>{self.url}</a>"


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (0: a free port); UsageError naming the port when it is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise UsageError(
            f"port={port} on {host} cannot be used ({e.strerror or e}): give another port=, or port=0 for a free one"
        ) from None
    sock.listen(64)
    return sock


def serve(
    target: str | None = None,
    env: dict[str, Any] | None = None,
    port: int = 0,
    host: str = "127.0.0.1",
    sessions: int = 4,
    fps: float = 8,
    seed: int = 0,
    person: bool = False,
    opponents: str | None = None,
    num_bots: int | None = None,
    vs: str | None = None,
    step: int | None = None,
    member: int | None = None,
    games: str | Path | None = None,
    block: bool = True,
    quiet: bool = False,
) -> Served:
    """Serve the play page of `target` (a run directory or pretrained:NAME) or of `env` alone. Blocks until
    Ctrl-C unless `block=False` (then it serves from a thread and returns at once)."""
    require_play_extra()
    import uvicorn

    from jaxrl.play.server import Server

    table, default_games = make_table(target, env, opponents, num_bots, vs, step, member)
    say = (lambda *a: None) if quiet else (lambda line: print(line, flush=True))
    say(f"compiling the game of {table.label} ...")
    table.new_game(seed, False).step(None)  # compile before the first page asks
    if table.can_play:
        table.new_game(seed, True).step(None)
    sock = bind(host, port)
    port = sock.getsockname()[1]
    app = Server(table, Path(games).expanduser() if games else default_games, sessions, fps, seed, person)
    from uvicorn.config import WS_PROTOCOLS

    ws = "websockets-sansio" if "websockets-sansio" in WS_PROTOCOLS else "websockets"  # the newer, where there is one
    config = uvicorn.Config(app.app, log_level="warning", lifespan="off", ws=ws)
    server = uvicorn.Server(config)
    url = local_url(host, port, "serves this page", "can play and save games here") + "/"
    served = Served(url, port, app, server)
    if block:
        say(f"play {table.label} at {url}  (Ctrl-C stops it)")
        server.run(sockets=[sock])
        return served
    served.thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    served.thread.start()
    say(f"play {table.label} at {url}")
    return served
