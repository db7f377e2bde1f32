"""A player behind HTTP: a Battlesnake API v1 server (anyone's snake), asked as the engine asks it. Head to head,
ratings (`trained/headtohead.py`) and jaxrl's game host (`battlesnake/host.py`) seat it like any other player,
through the env's `board_request` and `board_action` hooks."""

from __future__ import annotations

import dataclasses
import http.client
import json
import time
import urllib.parse
from typing import Any

from jaxrl.config.compose import UsageError

ENGINE_MOVES = ("up", "down", "left", "right")
TIMEOUT_MS = 500  # the engine's default wait for a move


def is_url(text: Any) -> bool:
    return isinstance(text, str) and text.startswith(("http://", "https://"))


@dataclasses.dataclass
class Answers:
    """One player's answers: latencies (s) of the requests that came back, and how many did not in time."""

    times: list[float] = dataclasses.field(default_factory=list)
    late: int = 0
    failed: int = 0
    invalid: int = 0


class HttpSnake:
    """A Battlesnake server at `url`, asked as the engine asks it."""

    def __init__(self, url: str, timeout_ms: int):
        parts = urllib.parse.urlsplit(url)
        try:
            port = parts.port or 80
        except ValueError:
            port = None
        if parts.scheme != "http" or not parts.hostname or port is None:
            raise UsageError(f"{url} is invalid: an HTTP snake is http://host:port (a port from 1 to 65535)")
        self.name, self.url, self.timeout = url, url.rstrip("/"), timeout_ms / 1000
        self.host, self.port, self.base = parts.hostname, port, parts.path.rstrip("/")
        self.answers = Answers()

    def _post(self, path: str, body: dict[str, Any], timeout: float) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request("POST", self.base + path, json.dumps(body), {"Content-Type": "application/json"})
            answer = conn.getresponse()
            return answer.status, answer.read()
        finally:
            conn.close()

    def start(self, request: dict[str, Any]) -> None:
        try:
            self._post("/start", request, self.timeout)
        except (OSError, http.client.HTTPException):
            pass  # the engine goes on without a snake's /start answer

    def move(self, request: dict[str, Any]) -> str | None:
        t0 = time.perf_counter()
        try:
            status, body = self._post("/move", request, self.timeout)
        except TimeoutError:
            self.answers.late += 1
            return None
        except (OSError, http.client.HTTPException):
            self.answers.failed += 1
            return None
        took = time.perf_counter() - t0
        if took > self.timeout:
            self.answers.late += 1
            return None
        self.answers.times.append(took)
        try:
            move = json.loads(body).get("move") if status == 200 else None
        except (ValueError, AttributeError):
            move = None
        if move not in ENGINE_MOVES:
            self.answers.invalid += 1
            return None
        return move

    def end(self, request: dict[str, Any]) -> None:
        try:
            self._post("/end", request, self.timeout)
        except (OSError, http.client.HTTPException):
            pass
