"""The play server: one page, a websocket per page, a game per websocket (Starlette on uvicorn).

Routes: `/` the page, `/play.js` and `/play.css` its files (read from the package, never from a path a request
names), `/status` (JSON: sessions open and the most allowed), `/ws` the game.

The websocket, from the page (JSON objects; anything else is answered with an error and the game goes on):
- {"type": "new", "seed": int | null, "person": bool}: a new game (null: the next seed);
- {"type": "pause"}, {"type": "resume"}, {"type": "step"} (one step while paused);
- {"type": "speed", "fps": 0..60} (0: as fast as it goes);
- {"type": "move", "move": a name in `controls.MOVES`}: the person's next move (up to 3 queued);
- {"type": "save"}: the game so far as an episode file and a GIF in the games folder.
To the page: {"type": "hello", ...} once, {"type": "frame", ...} after each step, {"type": "saved", ...},
{"type": "error", "message": ...}.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import time
from collections import deque
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.play import controls
from jaxrl.play.game import WALL, Game, Table

FILES = {"/play.js": "application/javascript", "/play.css": "text/css"}
MAX_FPS = 60
QUEUED_MOVES = 3


def page_files() -> dict[str, bytes]:
    """The page and its files, read once from the package."""
    web = resources.files("jaxrl.web")
    found = {"/": web.joinpath("play.html").read_bytes()}
    found.update({route: web.joinpath(route[1:]).read_bytes() for route in FILES})
    return found


def check_message(raw: Any) -> dict[str, Any]:
    """A page's message as a dict with the fields its type needs; ValueError naming what is wrong."""
    if not isinstance(raw, str) or len(raw) > 1000:
        raise ValueError("a message is one JSON object (text) of at most 1000 characters")
    try:
        message = json.loads(raw)
    except ValueError:
        raise ValueError("a message must be JSON") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ValueError('a message is a JSON object with a "type"')
    kind = message["type"]
    if kind == "new":
        seed, person = message.get("seed"), message.get("person", False)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31):
            raise ValueError(f"seed {seed!r} is invalid: an integer from 0 to 2^31 - 1, or null")
        if not isinstance(person, bool):
            raise ValueError(f"person {person!r} is invalid: true or false")
    elif kind == "speed":
        fps = message.get("fps")
        if isinstance(fps, bool) or not isinstance(fps, int | float) or not 0 <= fps <= MAX_FPS:
            raise ValueError(f"fps {fps!r} is invalid: a number from 1 to {MAX_FPS}, or 0 for as fast as it goes")
    elif kind == "move":
        if message.get("move") not in controls.MOVES:
            raise ValueError(f"move {message.get('move')!r} is invalid: allowed {', '.join(controls.MOVES)}")
    elif kind not in ("pause", "resume", "step", "save"):
        raise ValueError(f"type {kind!r} is unknown: allowed new, pause, resume, step, speed, move, save")
    return message


class Session:
    """One page's game and its pace: steps on a worker thread, so other pages and messages are not held up."""

    def __init__(self, table: Table, send: Any, games_dir: Path, fps: float, seed: int, person: bool):
        self.table, self.send, self.games_dir = table, send, games_dir
        self.fps, self.running = float(fps), True
        self.moves: deque[str] = deque(maxlen=QUEUED_MOVES)
        self.lock = asyncio.Lock()
        self.wake = asyncio.Event()
        self.game_index = 0
        self.game: Game = table.new_game(seed, person and table.can_play, 0)

    def hello(self) -> dict[str, Any]:
        t = self.table
        return {
            "type": "hello",
            "env": t.env_name,
            "target": t.label,
            "can_play": t.can_play,
            "person": self.game.person,
            "versus": getattr(t.versus, "name", t.versus),
            "actions": list(t.mode_of(self.game.person).actions),
            "turns": self.game.takes_turns(),  # whether a key may mean a turn (relative keys)
            "fps": self.fps,
            "max_fps": MAX_FPS,
            "wall": list(WALL),
            "seed": self.game.seed,
        }

    def frame(self) -> dict[str, Any]:
        """The board and everything beside it."""
        g = self.game
        picture = np.ascontiguousarray(g.picture(), np.uint8)
        return {
            "type": "frame",
            "game": self.game_index,
            "seed": g.seed,
            "person": g.person,
            "running": self.running,
            "width": int(picture.shape[1]),
            "height": int(picture.shape[0]),
            "pixels": base64.b64encode(picture.tobytes()).decode("ascii"),
            "status": g.status(),
            "readout": g.readout(),
            "actions": list(g.mode.actions),
            "last_action": g.actions[-1] if g.actions else None,
        }

    async def advance(self) -> None:
        """One step of the game and its frame."""
        async with self.lock:
            if self.game.over:
                return
            move = self.moves.popleft() if self.moves else None
            await asyncio.to_thread(self.game.step, move)
            frame = await asyncio.to_thread(self.frame)
        await self.send(frame)

    async def pace(self) -> None:
        """Steps while running, `fps` a second (0: as fast as they go); sleeps while paused or over."""
        while True:
            if not self.running or self.game.over:
                self.wake.clear()
                await self.wake.wait()
                continue
            started = time.perf_counter()
            await self.advance()
            wait = 0.0 if self.fps <= 0 else 1.0 / self.fps - (time.perf_counter() - started)
            await asyncio.sleep(max(wait, 0.0))

    async def handle(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "new":
            seed = message.get("seed")
            async with self.lock:
                self.game_index += 1
                seed = self.game.seed + 1 if seed is None else seed
                person = bool(message.get("person")) and self.table.can_play
                self.game = await asyncio.to_thread(self.table.new_game, seed, person, self.game_index)
                self.moves.clear()
                hello, frame = self.hello(), await asyncio.to_thread(self.frame)
            await self.send(hello)
            await self.send(frame)
        elif kind in ("pause", "resume"):
            self.running = kind == "resume"
            await self.send({"type": "paused" if not self.running else "resumed"})
        elif kind == "step":
            if self.running:
                self.running = False
                await self.send({"type": "paused"})
            await self.advance()
        elif kind == "speed":
            self.fps = float(message["fps"])
        elif kind == "move":
            self.moves.append(message["move"])
        elif kind == "save":
            await self.send(await asyncio.to_thread(self.save))
        self.wake.set()

    def save(self) -> dict[str, Any]:
        """The game so far as an episode file and its GIF in the games folder."""
        from jaxrl.trained.episodes import simulate
        from jaxrl.trained.evaluation import save_gif

        g = self.game
        if not g.actions:
            return {"type": "error", "message": "nothing to save yet: the game has not moved"}
        stamp = time.strftime("%Y%m%d-%H%M%S")
        stem = self.games_dir / f"{self.table.env_name}-{stamp}-seed{g.seed}-game{self.game_index}"
        try:
            episode = g.episode().write(stem.with_suffix(".json"))
            played = simulate(g.mode.env, g.mode.env_params, g.chain, g.actions)
            captions = [f"step {t + 1}/{g.t}" for t in range(g.t)]
            save_gif(np.asarray(played["frames"][: g.t]), stem.with_suffix(".gif"), 10, captions)
        except OSError as e:
            return {"type": "error", "message": f"{stem}.json cannot be written ({e.strerror or e})"}
        return {"type": "saved", "episode": str(episode), "gif": str(stem.with_suffix(".gif")), "steps": g.t}


class Server:
    """The app and its sessions: at most `max_sessions` games at once, each its own state."""

    def __init__(
        self, table: Table, games_dir: Path, max_sessions: int = 4, fps: float = 8, seed: int = 0, person: bool = False
    ):
        self.table, self.games_dir, self.max_sessions = table, Path(games_dir), int(max_sessions)
        self.fps, self.seed, self.person = fps, seed, person
        self.sessions: dict[int, Session] = {}
        self._ids = itertools.count()
        self.files = page_files()
        self.app = self._app()

    def _app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse, Response
        from starlette.routing import Route, WebSocketRoute

        async def page(request: Any) -> Response:
            path = request.url.path
            kind = FILES.get(path, "text/html; charset=utf-8")
            return Response(self.files[path], media_type=kind, headers={"Cache-Control": "no-store"})

        async def status(request: Any) -> JSONResponse:
            return JSONResponse(
                {"sessions": len(self.sessions), "max_sessions": self.max_sessions, "target": self.table.label}
            )

        async def nothing(request: Any) -> Response:
            return Response(status_code=204)

        routes = [Route(path, page) for path in self.files] + [Route("/favicon.ico", nothing)]
        routes += [Route("/status", status), WebSocketRoute("/ws", self.websocket)]
        return Starlette(routes=routes)

    async def websocket(self, ws: Any) -> None:
        from starlette.websockets import WebSocketDisconnect

        await ws.accept()
        if len(self.sessions) >= self.max_sessions:
            message = f"this server plays {self.max_sessions} games at once (sessions=); close another page"
            await ws.send_text(json.dumps({"type": "error", "message": message, "fatal": True}))
            await ws.close(code=1013)
            return
        ident = next(self._ids)
        send = lambda data: ws.send_text(json.dumps(data))
        session = Session(self.table, send, self.games_dir, self.fps, self.seed, self.person)
        self.sessions[ident] = session
        pace = None
        try:
            await send(session.hello())
            await send(await asyncio.to_thread(session.frame))
            pace = asyncio.create_task(session.pace())
            while True:
                received = await ws.receive()
                if received["type"] == "websocket.disconnect":
                    break
                try:
                    message = check_message(received.get("text"))
                except ValueError as e:
                    await send({"type": "error", "message": str(e)})
                    continue
                await session.handle(message)
        except (WebSocketDisconnect, RuntimeError):
            pass  # the page closed (a send to a closed socket raises RuntimeError)
        finally:
            self.sessions.pop(ident, None)
            if pace is not None:
                pace.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await pace
