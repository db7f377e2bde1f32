"""PufferLib's C Snake, measured beside the open arena (`bench/parts/arena.py`): its `snake.h` taken from PyPI.

No PufferLib source is kept in the project. `snake.h` is found, in this order:

- at `$JAXRL_PUFFERLIB_SNAKE`: a folder holding snake.h, or the file itself (a PufferLib checkout of your
  own); set but holding none, it is an error, not a reason to download;
- in the cache, `$XDG_CACHE_HOME/jaxrl/pufferlib-3.0.0/` (`~/.cache/jaxrl/pufferlib-3.0.0/` without it);
- else it is downloaded once into that cache: the link to `pufferlib-3.0.0.tar.gz` (60 MB, the sdist: no
  wheel exists, and `pip download` fails building its metadata) is read from the package index's simple
  page (`$PIP_INDEX_URL`, else PyPI's), the archive is streamed through sha256 and must match the pinned
  digest, and only `pufferlib/ocean/snake/snake.h` is kept (written beside its final name, then renamed).

snake.h includes nothing of the sdist but `raylib.h`, for a render client the harness never calls;
`pufferlib_c/raylib.h` stands in for it. The timing harness, `pufferlib_c/snake_bench.c`, is the
project's own: it is built with `cc -O3 -march=native` into the cache and run as one process per core at
once. A results file names the source by `Source.label`, never by a path on this machine.

On its own (downloads on first use): python -m bench.peers.pufferlib_snake [--seconds 2] [--processes N]
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

VERSION = "3.0.0"
SDIST = f"pufferlib-{VERSION}.tar.gz"
SHA256 = "7df3a3e3f5f894d78d2a1f5374097890aec01473183e748abefe4f3faa10eaa9"
MEMBER = f"pufferlib-{VERSION}/pufferlib/ocean/snake/snake.h"
PYPI_LABEL = f"pypi:pufferlib=={VERSION} (sha256 {SHA256[:8]}…)"
ENV_VAR = "JAXRL_PUFFERLIB_SNAKE"
ENV_LABEL = f"${ENV_VAR}"
PYPI_SIMPLE = "https://pypi.org/simple"
HARNESS = Path(__file__).resolve().parent / "pufferlib_c"  # snake_bench.c and the raylib.h stand-in
BUILD = "cc -O3 -march=native snake_bench.c -lm"  # as results record it (the compiler found may be gcc or clang)
TIMEOUT_S = 60  # per network read


class Unavailable(Exception):
    """PufferLib's C Snake cannot be measured here; the message is one line naming why (no machine paths)."""


@dataclass(frozen=True)
class Source:
    header: Path  # snake.h
    label: str  # what results record: PYPI_LABEL or ENV_LABEL


def cache_dir() -> Path:
    """Where the downloaded snake.h and the built harness live: $XDG_CACHE_HOME/jaxrl/pufferlib-3.0.0."""
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "jaxrl" / f"pufferlib-{VERSION}"


def find(download: bool = True) -> Source:
    """snake.h from $JAXRL_PUFFERLIB_SNAKE, else the cache, else PyPI (when `download`); `Unavailable` if none."""
    given = os.environ.get(ENV_VAR)
    if given:
        path = Path(given).expanduser()
        header = path / "snake.h" if path.is_dir() else path
        if header.name != "snake.h" or not header.is_file():
            raise Unavailable(f"{ENV_LABEL} names neither snake.h nor a folder holding it")
        return Source(header, ENV_LABEL)
    cached = cache_dir() / "snake.h"
    if cached.is_file():
        return Source(cached, PYPI_LABEL)
    if not download:
        raise Unavailable(f"{SDIST} is not in the cache and this run downloads nothing")
    fetch(cache_dir())
    return Source(cached, PYPI_LABEL)


class _Links(HTMLParser):
    """The href of every <a> on a PEP 503 simple page."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def sdist_url(page: str, base: str) -> str:
    """The link to SDIST on the simple page `page` (at `base`), its #sha256 (when given) the pinned one."""
    parser = _Links()
    parser.feed(page)
    for href in parser.hrefs:
        url, _, fragment = urllib.parse.urljoin(base, href).partition("#")
        if urllib.parse.urlparse(url).path.rsplit("/", 1)[-1] != SDIST:
            continue
        listed = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else SHA256
        if listed != SHA256:
            raise Unavailable(f"the index lists {SDIST} with sha256 {listed[:8]}…, not the pinned {SHA256[:8]}…")
        return url
    raise Unavailable(f"the index lists no {SDIST}")


class _Hashing(io.RawIOBase):
    """A stream whose every byte read passes through sha256."""

    def __init__(self, stream: Any) -> None:
        self.stream, self.sha = stream, hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.stream.read(len(buffer))
        self.sha.update(data)
        buffer[: len(data)] = data
        return len(data)


def header_from_archive(stream: Any) -> bytes:
    """MEMBER's bytes from the gzipped tar `stream`, read to its end; `Unavailable` unless its sha256 is SHA256.
    Nothing of the archive is written anywhere, and its header is kept only once the whole archive matched."""
    hashing = _Hashing(stream)
    reader = io.BufferedReader(hashing, 1 << 20)
    header = None
    try:
        with tarfile.open(fileobj=reader, mode="r|gz") as archive:
            for member in archive:
                if member.name == MEMBER and member.isfile():
                    header = archive.extractfile(member).read()
                    break
        while reader.read(1 << 20):  # the rest, through the digest
            pass
    except (tarfile.TarError, OSError, EOFError, zlib.error, http.client.HTTPException) as e:
        raise Unavailable(f"{SDIST} could not be read ({type(e).__name__}: {e})") from None
    digest = hashing.sha.hexdigest()
    if digest != SHA256:
        raise Unavailable(f"{SDIST} has sha256 {digest[:8]}…, not the pinned {SHA256[:8]}…: refused")
    if header is None:
        raise Unavailable(f"{SDIST} holds no {MEMBER}")
    return header


def fetch(folder: Path, index: str | None = None) -> Path:
    """Download SDIST from the index and keep only its snake.h in `folder` (written aside, then renamed)."""
    index = (index or os.environ.get("PIP_INDEX_URL") or PYPI_SIMPLE).rstrip("/")
    page_url = f"{index}/pufferlib/"
    print(f"  PufferLib's C Snake: downloading {SDIST} (60 MB, once) for its snake.h", flush=True)
    try:
        with urllib.request.urlopen(page_url, timeout=TIMEOUT_S) as page:
            url = sdist_url(page.read().decode("utf-8", "replace"), page.geturl())
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            header = header_from_archive(response)
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as e:
        reason = getattr(e, "reason", None) or e
        raise Unavailable(f"{SDIST} could not be downloaded ({type(e).__name__}: {reason})") from None
    target = folder / "snake.h"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".snake.h.")
        with os.fdopen(fd, "wb") as f:
            f.write(header)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError as e:
        raise Unavailable(f"the cache cannot be written ({e.strerror or e})") from None
    return target


def build(source: Source, folder: Path | None = None) -> Path:
    """The harness compiled against `source` into the cache (built aside, then renamed); `Unavailable` on failure."""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        raise Unavailable("no C compiler (cc) for PufferLib's C Snake")
    if not (HARNESS / "snake_bench.c").is_file():
        raise Unavailable("the timing harness (bench/peers/pufferlib_c/) is not installed with this jaxrl")
    folder = folder or cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise Unavailable(f"the cache cannot be written ({e.strerror or e})") from None
    binary = folder / "snake_bench"
    tmp = folder / f".snake_bench.{os.getpid()}"
    cmd = [compiler, "-O3", "-march=native", "-I", str(HARNESS), "-I", str(source.header.parent)]
    cmd += ["-o", str(tmp), str(HARNESS / "snake_bench.c"), "-lm"]
    made = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if made.returncode != 0:
        last = (made.stderr.strip().splitlines() or ["?"])[-1].replace(str(folder), "<cache>")
        raise Unavailable(f"PufferLib's C Snake did not build: {last.replace(str(HARNESS), '<harness>')[:160]}")
    os.replace(tmp, binary)
    return binary


def rate(line: str) -> float:
    """The snake-steps/s of one harness line."""
    found = re.search(r":\s*([0-9.eE+]+) snake-steps/s", line)
    if found is None:
        raise Unavailable(f"the harness printed no rate: {line.strip()[:120]!r}")
    return float(found.group(1))


def one_round(binary: Path, processes: int, seconds: float) -> list[float]:
    """Each process's snake-steps/s, `processes` of them started at once (each with its own seed)."""
    procs = [
        subprocess.Popen([str(binary), f"{seconds:g}", str(seed)], stdout=subprocess.PIPE, text=True)
        for seed in range(processes)
    ]
    return [rate(p.communicate()[0]) for p in procs]


def measure(processes: int, seconds: float, rounds: int, download: bool = True) -> dict[str, Any]:
    """PufferLib's C Snake, `processes` processes at once, best of `rounds`: the arena part's `pufferlib_c`
    record (source, build, processes, snake_sps in all, each round's sum, the best round's per process)."""
    source = find(download)
    binary = build(source)
    singles = [one_round(binary, processes, seconds) for _ in range(rounds)]
    totals = [sum(r) for r in singles]
    best = max(range(rounds), key=totals.__getitem__)
    return {
        "source": source.label,
        "build": BUILD,
        "processes": processes,
        "snake_sps": totals[best],
        "rounds": totals,
        "per_process": singles[best],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peers.pufferlib_snake", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="how long each process steps (default 2)")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="at once (default: one per core)")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        out = measure(args.processes, args.seconds, args.rounds)
    except Unavailable as e:
        print(f"PufferLib source not available ({e})")
        return 1
    print(f"{out['snake_sps']:.4g} snake-steps/s in all, {out['processes']} processes ({out['source']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
