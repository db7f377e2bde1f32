"""A trained agent (or one of the env's bots) as a Battlesnake: an API v1 server any engine can call.

    python -m jaxrl.battlesnake serve pretrained:arena-selfplay-v2 port=8000

The engine sends `GET /` (who the snake is), then per game `POST /start`, a `POST /move` per turn (answered
within its timeout, 500 ms by default) and `POST /end`. Each `/move` body becomes the env's own observation for
`you` through the env contract (`board_game`, `board_move` in envs/base.py): the board and ruleset the request
names, the player's own view. The policy's greedy move is the answer, never the certain suicide of turning back
into one's own neck. A board the env cannot play as the engine does (a rectangular one, for the arena) gets a
safe move by a plain rule instead, with a warning in the server's log and in the move's `shout`.

One server plays many games at once, told apart by their game ids; a game's state (a recurrent policy's
memory) is kept from `/start` to `/end`, or until `forget_s` seconds pass without a request. Each board the env
makes of a request (its size, seats and ruleset) is compiled once, one compile at a time, while moves on boards
already compiled go on: `warm` compiles the common boards (7x7, 11x11, 19x19) of every ruleset as the server
starts, `/start` compiles a game's board, and past `most_boards` boards a new one gets safe moves by rule (a
server others can reach cannot be made to compile without end).

Bad requests get a 4xx with one line (a body that is not JSON, missing fields, a board out of range, a point
off the board, a snake with no body, a ruleset the env does not play, a body over 1 MB) and the server goes on.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.battlesnake import onnx
from jaxrl.battlesnake.cli_log import STEPS
from jaxrl.config.compose import UsageError

# jax and the env's hooks are imported where they are used: an exported (.onnx) policy is served without jax.

API_VERSION = "1"
# The engine's rulesets: a request naming another is refused; one the env does not play gets safe moves by rule.
ENGINE_RULESETS = ("standard", "solo", "royale", "squad", "constrictor", "wrapped", "wrapped_constrictor")
MOST_SIDE = 64  # the longest board side a request may name (4,096 cells)
WARM_SIDES = (11, 7, 19)  # the engine's board sizes compiled as a server starts (for up to 8 snakes)
MOST_BOARDS = 64  # boards a server compiles at most
MAX_BODY = 1 << 20  # bytes a request body may hold


class Unplayable(ValueError):
    """A board this server answers with safe moves by rule: the env cannot play it, or (`full`) no board may be
    compiled any more."""

    def __init__(self, why: str, full: bool = False):
        super().__init__(why)
        self.full = full


class BadRequest(ValueError):
    """A request the server cannot answer: `status` and one line."""

    def __init__(self, status: int, line: str):
        super().__init__(line)
        self.status = status


@dataclasses.dataclass
class Player:
    """What answers the moves: a run's greedy policy (`agent`, a `jaxrl.play.game.Agent`) or a bot `kind` of
    `env` (the env the run trained in, or the env a bot plays)."""

    name: str
    env: Any
    agent: Any = None
    bot: str | None = None

    def exact_view(self) -> str:
        """What this player sees of a served game, for `GET /`'s version."""
        view = getattr(self.env, "view", None)
        return f"{self.env.name}, view {view}" if view else self.env.name


def player(target: str) -> Player:
    """A Player of a run directory (its newest checkpoint, or `RUN_DIR@STEP`), `pretrained:NAME`, or a bot of the
    arena (`greedy`, `space`, `lookahead`, `random_safe`); UsageError, one line, otherwise."""
    from jaxrl import envs
    from jaxrl.battlesnake import ENV
    from jaxrl.envs.base import hook, offers

    arena, _ = envs.make(ENV)
    if target in hook(arena, "bot_kinds"):
        return Player(name=target, env=arena, bot=target)
    from jaxrl.api import load
    from jaxrl.errors import ConfigError
    from jaxrl.play.game import run_agent

    path, at, when = target.rpartition("@")
    step = int(when) if at and when.isdigit() and not Path(target).expanduser().exists() else None
    try:
        run = load(path if step is not None else target)
        agent, env, _, _ = run_agent(run, step)
    except ConfigError as e:
        raise UsageError(f"{target}: {e}") from None
    if not (offers(env, "board_game") and offers(env, "board_move")):
        raise UsageError(f"{target} trained on env={env.name}, which reads no Battlesnake board (board_game)")
    return Player(name=agent.name, env=env, agent=agent)


class Snake:
    """The games one server plays: each game's memory by game id and snake, and each board's compiled step."""

    def __init__(
        self, who: Player, forget_s: float = 600.0, seed: int = 0, workers: int = 4, most_boards: int = MOST_BOARDS
    ):
        self.who, self.forget_s, self.most_boards = who, forget_s, most_boards
        self.gate = threading.BoundedSemaphore(workers)  # moves computed at once; the other requests wait
        self.games: dict[tuple[str, str], dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.compiling = threading.Lock()  # one compile at a time: moves on compiled boards go on meanwhile
        import jax

        self.key = jax.random.key(seed)
        self._compiled: dict[tuple, Any] = {}
        self.warnings: list[str] = []

    # -- one move ---------------------------------------------------------------------------

    def move(self, request: dict[str, Any]) -> dict[str, Any]:
        """The answer to a `/move` body: {"move", "shout"}."""
        import jax

        from jaxrl.envs.base import hook

        game = self._game(game_key(request))
        try:
            step, args, seen = self._board(request, game.get("carry"))
        except Unplayable as e:
            return self._fallback(request, game, str(e))
        with self.gate:  # `workers` moves computed at once; a compile waits for no gate
            numbers, game["carry"] = jax.block_until_ready(step(*args))
        numbers = np.where(np.asarray(seen["allowed"]), np.asarray(numbers, np.float64), -np.inf)
        action = int(np.argmax(numbers))
        shout = "" if seen.get("exact", True) else "jaxrl: this board is not played exactly as the engine plays it"
        return {"move": hook(seen["env"], "board_move")(seen["state"], int(seen["seat"]), action), "shout": shout}

    def _board(self, request: dict[str, Any], carry: Any) -> tuple[Any, tuple, dict[str, Any]]:
        """(the board's compiled step, its arguments, what the env made of the request: `board_game`), the
        board compiled first if it is new; Unplayable when the env cannot play it or no board may be added."""
        import jax
        import jax.numpy as jnp

        from jaxrl.envs.base import hook

        try:
            seen = hook(self.who.env, "board_game")(request)
        except (KeyError, TypeError) as e:
            raise BadRequest(400, f"the request lacks a field the board needs: {e}") from None
        except ValueError as e:
            raise Unplayable(str(e)) from None
        agent = self.who.agent
        if carry is None and agent is not None:
            carry = agent.initial_carry(1)
        with self.lock:
            self.key, key = jax.random.split(self.key)
        args = (agent.params if agent is not None else None, carry, seen["state"], jnp.int32(seen["seat"]), key)
        step = self._step(seen["env"], args)
        if step is None:
            why = f"this server compiled its {self.most_boards} boards (most_boards=) and plays no new one"
            raise Unplayable(why, full=True)
        return step, args, seen

    def _step(self, table: Any, args: tuple) -> Any:
        """The compiled (params, carry, state, seat, key) -> (numbers per action, carry) of a board's env,
        compiled at its first request (None past `most_boards`)."""
        signature = program_of(table)
        found = self._compiled.get(signature)
        if found is not None:
            return found
        with self.compiling:
            found = self._compiled.get(signature)  # compiled while this request waited
            if found is None and len(self._compiled) < self.most_boards:
                found = self._compile(table, args)
                with self.lock:
                    self._compiled[signature] = found
        return found

    def _compile(self, table: Any, args: tuple) -> Any:
        import jax

        return jax.jit(self._program(table)).lower(*args).compile()

    def _program(self, table: Any) -> Any:
        """A board's (params, carry, state, seat, key) -> (numbers, carry): the bot's move as 1, or the policy's
        numbers for the seat and its memory carried on."""
        import jax
        import jax.numpy as jnp

        from jaxrl.envs.base import hook

        agent, bot = self.who.agent, self.who.bot

        def step(params, carry, state, seat, key):
            if bot is not None:
                action = hook(table, "bot_actions")(key, state, bot)[seat]
                return jax.nn.one_hot(action, table.num_actions), carry
            obs = hook(table, "seat_obs")(state)
            mine = jax.lax.dynamic_index_in_dim(obs, seat, keepdims=True)
            numbers, _ = agent.read(params, carry, mine)
            if carry is not None:  # a recurrent policy: its memory goes on (a feed-forward one has none)
                carry, _ = agent.act(params, carry, mine, key)
            return numbers.reshape(-1, table.num_actions)[0].astype(jnp.float32), carry

        return step

    def _fallback(self, request: dict[str, Any], game: dict[str, Any], why: str) -> dict[str, Any]:
        """A safe move by a plain rule for a board the env cannot play (said once per game in the log)."""
        if not game.get("warned"):
            game["warned"] = True
            line = f"warning: game {request['game']['id']}: {why}; answering with safe moves by rule"
            self.warnings.append(line)
            print(line, file=sys.stderr, flush=True)
        return {"move": safe_move(request), "shout": f"jaxrl: {why}"}

    # -- games ------------------------------------------------------------------------------

    def _game(self, key: tuple[str, str]) -> dict[str, Any]:
        now = time.monotonic()
        with self.lock:
            for gone in [g for g, v in self.games.items() if now - v["seen"] > self.forget_s]:
                del self.games[gone]
            game = self.games.setdefault(key, {"seen": now})
            game["seen"] = now
        return game

    def warm(self, rulesets: tuple[str, ...] = ("standard",), sides: tuple[int, ...] = WARM_SIDES) -> list[str]:
        """Compile the boards of `rulesets` on `sides` (up to 8 snakes) before any game asks; the rulesets the
        env could not play (a safe move by rule answers those)."""
        unplayed = []
        for ruleset in rulesets:
            for side in sides:
                try:
                    self._board(board_example(side, ruleset), None)
                except Unplayable as e:
                    if e.full:
                        return unplayed
                    unplayed.append(ruleset)
                    break
        return unplayed

    def start(self, request: dict[str, Any]) -> None:
        """A new game: its memory fresh, its board compiled if it is new (nothing else is computed)."""
        with self.lock:
            self.games.pop(game_key(request), None)
        self._game(game_key(request))  # kept before the compile: a /move that comes meanwhile finds it
        try:
            self._board(request, None)
        except Unplayable:
            pass  # its moves will say why

    def end(self, request: dict[str, Any]) -> None:
        """A game over: forgotten (the engine's /end may name a snake that is out, or no snake at all)."""
        with self.lock:
            self.games.pop(game_key(request), None)


class OnnxSnake:
    """The games one server plays with an exported arena policy (`jaxrl.battlesnake.onnx`): `move`, `start`, `end`
    as `Snake` has them, with numpy and onnxruntime alone."""

    def __init__(self, who: Any, workers: int = 4):
        self.who = who
        self.gate = threading.BoundedSemaphore(workers)
        self.lock = threading.Lock()
        self.warned: set[tuple[str, str]] = set()  # games told once why they get safe moves (until their /end)
        self.warnings: list[str] = []

    def move(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            obs, heading, allowed = onnx.arena_view(request, self.who.view, self.who.tails)
        except (KeyError, TypeError) as e:
            raise BadRequest(400, f"the request lacks a field the board needs: {e}") from None
        except onnx.Unplayable as e:
            key = game_key(request)
            with self.lock:
                first = key not in self.warned
                self.warned.add(key)
            if first:
                line = f"warning: game {key[0]}: {e}; answering with safe moves by rule"
                self.warnings.append(line)
                print(line, file=sys.stderr, flush=True)
            return {"move": safe_move(request), "shout": f"jaxrl: {e}"}
        with self.gate:
            scores = self.session_run(obs)
        scores = np.where(allowed, np.asarray(scores, np.float64), -np.inf)
        return {"move": onnx.MOVES_BY_HEADING[(heading + int(np.argmax(scores)) - 1) % 4], "shout": ""}

    def session_run(self, obs: np.ndarray) -> np.ndarray:
        return self.who.session.run(None, {"obs": obs[None]})[0][0]

    def start(self, request: dict[str, Any]) -> None:
        pass  # a feed-forward policy: no memory to start

    def end(self, request: dict[str, Any]) -> None:
        with self.lock:
            self.warned.discard(game_key(request))


def program_of(env: Any) -> tuple:
    """What tells one env's compiled step from another's: its class and its public settings (size, seats,
    ruleset, view, ...), the plain values among its attributes."""
    plain = lambda v: (
        isinstance(v, bool | int | float | str | None) or (isinstance(v, tuple) and all(plain(x) for x in v))
    )
    settings = sorted((k, v) for k, v in vars(env).items() if not k.startswith("_") and plain(v))
    return type(env).__module__, type(env).__qualname__, tuple(settings)


def board_example(side: int, ruleset: str, snakes: int = 2) -> dict[str, Any]:
    """A `/move` body of `snakes` new snakes (three stacked segments, apart) on a side x side board under
    `ruleset`: what a server compiles before the engine asks."""
    cells = [(x, y) for y in range(1, side, 2) for x in range(1, side, 2)][:snakes]
    bodies = [
        {"id": f"warm-{i}", "name": f"warm-{i}", "health": 100, "body": [{"x": x, "y": y}] * 3, "length": 3}
        for i, (x, y) in enumerate(cells)
    ]
    return {
        "game": {"id": f"warm-{side}-{ruleset}", "ruleset": {"name": ruleset, "version": "jaxrl"}, "timeout": 500},
        "turn": 0,
        "board": {"width": side, "height": side, "food": [], "hazards": [], "snakes": bodies},
        "you": bodies[0],
    }


def game_key(request: dict[str, Any]) -> tuple[str, str]:
    """A game as the server keeps it: its id and the snake answering (one server may hold several seats)."""
    you = request.get("you") if isinstance(request.get("you"), dict) else {}
    return str(request["game"]["id"]), str(you.get("id", ""))


def safe_move(request: dict[str, Any]) -> str:
    """A move that stays on the board and off every body cell that will still be there (tails move on,
    unless stacked), preferring one away from longer snakes' next cells; "up" when none is safe."""
    board, you = request["board"], request["you"]
    width, height = int(board["width"]), int(board["height"])
    wrapped = "wrapped" in str(((request.get("game") or {}).get("ruleset") or {}).get("name") or "")
    head = you["body"][0]
    taken = set()
    for s in board["snakes"]:
        body = [(int(p["x"]), int(p["y"])) for p in s["body"]]
        keep = body if len(body) > 1 and body[-1] == body[-2] else body[:-1]
        taken.update(keep)
    danger = set()
    for s in board["snakes"]:
        if s["id"] != you["id"] and len(s["body"]) >= len(you["body"]):
            x, y = int(s["body"][0]["x"]), int(s["body"][0]["y"])
            danger.update((x + dx, y + dy) for dx, dy in STEPS.values())
    ranked = []
    for move, (dx, dy) in STEPS.items():
        x, y = int(head["x"]) + dx, int(head["y"]) + dy
        if wrapped:
            x, y = x % width, y % height
        if 0 <= x < width and 0 <= y < height and (x, y) not in taken:
            ranked.append(((x, y) in danger, move))
    return min(ranked)[1] if ranked else "up"


# -- HTTP ----------------------------------------------------------------------------------


def _whole(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _points(points: Any, what: str, width: int, height: int) -> list[tuple[int, int]]:
    """(x, y) of a list of {x, y} points on the board; BadRequest naming `what` otherwise."""
    if points is None:
        return []
    if not isinstance(points, list) or len(points) > width * height:
        raise BadRequest(400, f"{what} is not a list of at most {width * height} points")
    out = []
    for p in points:
        if not isinstance(p, dict) or not all(_whole(p.get(k), -(2**31), 2**31) for k in ("x", "y")):
            raise BadRequest(400, f"{what} holds {str(p)[:60]}, not a point {{x, y}}")
        if not (0 <= p["x"] < width and 0 <= p["y"] < height):
            raise BadRequest(400, f"{what} has a point ({p['x']}, {p['y']}) off the {width}x{height} board")
        out.append((p["x"], p["y"]))
    return out


def read_json(body: bytes, path: str) -> dict[str, Any]:
    """The request body as a JSON object with a game id; BadRequest otherwise."""
    if len(body) > MAX_BODY:
        raise BadRequest(413, f"the body holds {len(body):,} bytes: at most {MAX_BODY:,}")
    try:
        request = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise BadRequest(400, f"{path} needs a JSON body (Battlesnake API v1)") from None
    if not isinstance(request, dict):
        raise BadRequest(400, f"{path} needs a JSON object with game, turn, board and you")
    if not isinstance(request.get("game"), dict) or not isinstance(request["game"].get("id"), str | int):
        raise BadRequest(400, "the request has no game object with an id (Battlesnake API v1: game, turn, board, you)")
    return request


def check_request(body: bytes, path: str) -> dict[str, Any]:
    """The request body as JSON with what the API's game requests hold, every point on the board and no two
    snakes on one cell; BadRequest otherwise."""
    request = read_json(body, path)
    for field in ("board", "you"):
        if not isinstance(request.get(field), dict):
            raise BadRequest(400, f"the request has no {field} object (Battlesnake API v1: game, turn, board, you)")
    if not _whole(request.get("turn", 0), 0, 2**31 - 1):
        raise BadRequest(400, f"turn={str(request.get('turn'))[:40]} is invalid: a whole number from 0")
    board = request["board"]
    for field in ("width", "height"):
        value = board.get(field)
        if not _whole(value, 1, MOST_SIDE):
            raise BadRequest(400, f"board {field}={str(value)[:40]} is invalid: a whole number from 1 to {MOST_SIDE}")
    width, height = board["width"], board["height"]
    ruleset = request["game"].get("ruleset", {})
    if not isinstance(ruleset, dict):
        raise BadRequest(400, f"the game's ruleset is {str(ruleset)[:40]}, not an object with a name")
    name = ruleset.get("name", "standard")
    if name not in ENGINE_RULESETS:
        raise BadRequest(400, f"ruleset {str(name)[:40]!r} is not one of the engine's: {', '.join(ENGINE_RULESETS)}")
    _points(board.get("food"), "food", width, height)
    _points(board.get("hazards"), "hazards", width, height)
    if not isinstance(board.get("snakes"), list) or not board["snakes"]:
        raise BadRequest(400, "the board has no snakes")
    owner: dict[tuple[int, int], str] = {}
    ids = set()
    for s in [*board["snakes"], request["you"]]:
        if not isinstance(s, dict) or not isinstance(s.get("id"), str | int) or not s.get("body"):
            raise BadRequest(400, f"snake {s.get('id') if isinstance(s, dict) else str(s)[:40]!r} has no body")
        if not _whole(s.get("health", 100), 0, 10**6):
            raise BadRequest(400, f"snake {s['id']!r}'s health {str(s.get('health'))[:40]} is not a whole number")
        cells = _points(s["body"], f"snake {s['id']!r}'s body", width, height)
        if s is request["you"]:
            continue
        if s["id"] in ids:
            raise BadRequest(400, f"snake {s['id']!r} is on the board twice")
        ids.add(s["id"])
        for cell in cells:
            if owner.setdefault(cell, s["id"]) != s["id"]:
                raise BadRequest(400, f"snakes {owner[cell]!r} and {s['id']!r} both hold {cell}")
    if request["you"]["id"] not in ids:
        raise BadRequest(400, f"you ({request['you']['id']!r}) are not among the board's snakes")
    return request


def handler(snake: Snake, info: dict[str, str]) -> type[BaseHTTPRequestHandler]:
    """The request handler of a server answering for `snake`."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "jaxrl-battlesnake"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (the base class's name)
            pass  # a line per request would flood the log at one request per turn per game

        def setup(self) -> None:
            super().setup()
            # an answer goes out at once: with Nagle's algorithm a kept-alive connection waited for the
            # client's delayed ACK (tens of ms) before the body left
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _send(self, status: int, payload: Any) -> None:
            body = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json" if status < 400 else "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the engine stopped waiting (past its timeout): nothing to answer

        def do_GET(self) -> None:  # noqa: N802  (http.server's name)
            if self.path.split("?")[0] != "/":
                self._send(404, f"no such path {self.path}: GET / and POST /start, /move, /end\n".encode())
                return
            self._send(200, info)

        def do_POST(self) -> None:  # noqa: N802
            path = self.path.split("?")[0]
            try:
                if path not in ("/start", "/move", "/end"):
                    raise BadRequest(404, f"no such path {path}: POST /start, /move or /end")
                length = self.headers.get("Content-Length")
                if length is None or not (length.isascii() and length.isdigit()):
                    raise BadRequest(411, "the request needs a Content-Length")
                if int(length) > MAX_BODY:
                    raise BadRequest(413, f"the body holds {int(length):,} bytes: at most {MAX_BODY:,}")
                body = self.rfile.read(int(length))
                request = read_json(body, path) if path == "/end" else check_request(body, path)
                if path == "/move":
                    self._send(200, snake.move(request))
                elif path == "/start":
                    snake.start(request)
                    self._send(200, {})
                else:
                    snake.end(request)
                    self._send(200, {})
            except BadRequest as e:
                self.close_connection = e.status in (404, 411, 413)  # the body may be unread: no next request
                self._send(e.status, f"{e}\n".encode())
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            except Exception as e:  # noqa: BLE001  (one request's failure is its own: the server goes on)
                line = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
                print(f"error: {path}: {line}", file=sys.stderr, flush=True)
                self._send(500, f"{line}\n".encode())

    return Handler


@dataclasses.dataclass
class Served:
    """A running server: its `url`; `stop()` ends it."""

    url: str
    port: int
    snake: Any  # a Snake, or an OnnxSnake for an .onnx file
    server: ThreadingHTTPServer
    thread: threading.Thread | None = None

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self.thread is not None:
            self.thread.join(timeout=10)


def serve(
    target: str,
    port: int = 8000,
    host: str = "127.0.0.1",
    color: str = "#3cdc5a",
    head: str = "default",
    tail: str = "default",
    workers: int = 4,
    forget_s: float = 600.0,
    warm: tuple[str, ...] | str = "all",
    most_boards: int = MOST_BOARDS,
    compile_cache: str | None = None,
    block: bool = True,
    quiet: bool = False,
) -> Served:
    """Serve `target` (a run directory, pretrained:NAME, a bot kind, or an exported arena policy FILE.onnx,
    played by onnxruntime without jax: `jaxrl.battlesnake.onnx`) on host:port (0: a free port), the common
    boards of the `warm` rulesets ("all": every one the engine has; "none") compiled first, at most `most_boards`
    boards in all, kept in jax's persistent cache at `compile_cache` when given (a restart loads them). Blocks
    until Ctrl-C unless `block=False` (then it serves from a thread and returns at once)."""
    from jaxrl import __version__
    from jaxrl.play import local_url

    rulesets = warm_rulesets(warm)
    if str(target).endswith(".onnx"):
        from jaxrl.battlesnake.onnx import OnnxPlayer

        who: Any = OnnxPlayer(target)
        snake: Any = OnnxSnake(who, workers=workers)
        rulesets = ()  # nothing compiles
    elif compile_cache:
        from jaxrl.run.compiling import use_persistent_cache

        try:
            use_persistent_cache(compile_cache)
        except ValueError as e:  # ConfigError: a directory it cannot make
            raise UsageError(str(e)) from None
    if not str(target).endswith(".onnx"):
        who = player(target)
        snake = Snake(who, forget_s, workers=workers, most_boards=most_boards)
    info = {
        "apiversion": API_VERSION,
        "author": "jaxrl",
        "color": color,
        "head": head,
        "tail": tail,
        "version": f"jaxrl {__version__}: {who.name} ({who.exact_view()})",
    }
    try:
        server = ThreadingHTTPServer((host, port), handler(snake, info))
    except OSError as e:
        raise UsageError(f"port={port} on {host} cannot be used ({e.strerror or e}): give another port=") from None
    server.daemon_threads = True
    port = server.server_address[1]
    url = local_url(host, port, "answers engines", "can make this machine play (it reads JSON, writes nothing)")
    say = (lambda *_: None) if quiet else (lambda line: print(line, flush=True))
    served = Served(url, port, snake, server)
    if rulesets:
        t0 = time.perf_counter()
        sides = ", ".join(f"{n}x{n}" for n in sorted(WARM_SIDES))
        say(f"compiling {who.name}'s moves on {len(WARM_SIDES)} board sizes under {', '.join(rulesets)} ...")
        unplayed = snake.warm(rulesets)
        if unplayed:
            say(f"  {', '.join(unplayed)}: not played by {who.env.name}; such games get safe moves by rule")
        say(f"  compiled {len(snake._compiled)} boards ({sides}) in {time.perf_counter() - t0:.0f} s")
    if block:
        say(f"serving {who.name} as a Battlesnake at {url}  (Ctrl-C stops it)")
        try:
            server.serve_forever()
        finally:
            server.server_close()
        return served
    served.thread = threading.Thread(target=server.serve_forever, daemon=True)
    served.thread.start()
    say(f"serving {who.name} as a Battlesnake at {url}")
    return served


def warm_rulesets(warm: tuple[str, ...] | str | bool) -> tuple[str, ...]:
    """The rulesets `warm=` names: a comma list of the engine's, "all" (True) or "none" (False); UsageError
    otherwise."""
    if isinstance(warm, bool) or warm in ("all", "none"):
        return ENGINE_RULESETS if warm in (True, "all") else ()
    names = tuple(n for n in warm.split(",") if n) if isinstance(warm, str) else tuple(warm)
    unknown = [n for n in names if n not in ENGINE_RULESETS]
    if unknown:
        allowed = ", ".join(ENGINE_RULESETS)
        raise UsageError(f"warm={unknown[0]} is invalid: allowed all, none or a comma list of {allowed}")
    return names
