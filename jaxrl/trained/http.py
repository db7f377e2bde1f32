"""A player behind HTTP: a Battlesnake API v1 server (anyone's snake), asked as the engine asks it. Head to head,
ratings (`trained/headtohead.py`) and jaxrl's game host (`battlesnake/host.py`) seat it like any other player,
through `trained/hosted.py` and the env's `board_request` and `board_action` hooks."""

from __future__ import annotations

import dataclasses
import http.client
import json
import socket
import threading
import time
import urllib.parse
from typing import Any

import numpy as np

from jaxrl.config.compose import UsageError

ENGINE_MOVES = ("up", "down", "left", "right")
TIMEOUT_MS = 500  # the engine's default wait for a move
MOST_ANSWER = 1 << 16  # bytes read of an answer: a move and a shout fit many times over


def is_url(text: Any) -> bool:
    return isinstance(text, str) and text.startswith(("http://", "https://"))


@dataclasses.dataclass
class Answers:
    """One player's answers: latencies (s) of the requests that came back, and how many did not in time."""

    times: list[float] = dataclasses.field(default_factory=list)
    late: int = 0
    failed: int = 0
    invalid: int = 0

    def mark(self) -> tuple[int, int, int, int]:
        """Where the answers stand now, to summarize what comes after (`summary(since=)`)."""
        return len(self.times), self.late, self.failed, self.invalid

    def summary(self, since: tuple[int, int, int, int] = (0, 0, 0, 0)) -> dict[str, Any]:
        """Answers since `since` (a `mark()`): how many came back, their p50, p99 and max in ms, and how many
        were late, failed or invalid."""
        ms = np.asarray(self.times[since[0] :]) * 1000
        shown = lambda f: float(f(ms)) if ms.size else None
        return {
            "answered": int(ms.size),
            "p50_ms": shown(lambda x: np.percentile(x, 50)),
            "p99_ms": shown(lambda x: np.percentile(x, 99)),
            "max_ms": shown(np.max),
            "late": self.late - since[1],
            "failed": self.failed - since[2],
            "invalid": self.invalid - since[3],
        }


def latency_line(summary: dict[str, Any]) -> str:
    """An `Answers.summary()` in a line for the terminal."""
    if not summary["answered"]:
        times = "no answer in time"
    else:
        times = f"p50 {summary['p50_ms']:.1f} ms, p99 {summary['p99_ms']:.1f} ms, max {summary['max_ms']:.0f} ms"
    return f"{times}; {summary['late']} late, {summary['failed']} failed, {summary['invalid']} invalid"


def latency_lines(latency: dict[str, dict[str, Any]]) -> list[str]:
    """Each HTTP snake's summary (by name) under a table: how many moves it answered in time, and how."""
    return [f"  {name} answered {s['answered']} moves: {latency_line(s)}" for name, s in latency.items()]


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
        self._lock = threading.Lock()

    def _post(self, path: str, body: dict[str, Any], timeout: float) -> tuple[int, bytes]:
        """(status, body) of a POST, given up on `timeout` s after it began however slowly the answer trickles."""
        t0 = time.perf_counter()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.connect()
            left = timeout - (time.perf_counter() - t0)
            if left <= 0:
                raise TimeoutError(f"{self.url} took {timeout * 1000:.0f} ms to connect")
            cut = threading.Timer(left, _cut, (conn,))
            cut.daemon = True
            cut.start()
            try:
                conn.request("POST", self.base + path, json.dumps(body), {"Content-Type": "application/json"})
                answer = conn.getresponse()
                return answer.status, answer.read(MOST_ANSWER)
            finally:
                cut.cancel()
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
        except (OSError, http.client.HTTPException):
            return self._count("late" if time.perf_counter() - t0 >= self.timeout else "failed")
        took = time.perf_counter() - t0
        if took > self.timeout:
            return self._count("late")
        with self._lock:
            self.answers.times.append(took)
        try:
            move = json.loads(body).get("move") if status == 200 else None
        except (ValueError, AttributeError):
            move = None
        return move if move in ENGINE_MOVES else self._count("invalid")

    def _count(self, what: str) -> None:
        """One more answer that did not count (its seat repeats its last move): late, failed or invalid."""
        with self._lock:  # several games and seats ask one snake at once
            setattr(self.answers, what, getattr(self.answers, what) + 1)

    def end(self, request: dict[str, Any]) -> None:
        try:
            self._post("/end", request, self.timeout)
        except (OSError, http.client.HTTPException):
            pass


def _cut(conn: http.client.HTTPConnection) -> None:
    """Stop a request at its deadline: its socket shut, so a read waiting on it returns at once."""
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed
