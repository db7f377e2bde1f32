"""Where a run writes: never over another run, and only where writing works.

A fresh run refuses a `run_dir` that already holds a run (its config, metrics, summary or
checkpoints); `overwrite=true` moves that run aside to a timestamped sibling first and never
deletes it. The directory is checked for writing before anything is compiled.
"""

from __future__ import annotations

import itertools
import os
import uuid
from datetime import datetime
from pathlib import Path

from jaxrl.config.schema import ConfigError

RUN_FILES = ("config.yaml", "metrics.csv", "summary.json", "checkpoints")  # any of them marks a run


def run_files(path: Path) -> list[str]:
    """The run files `path` holds (an empty `checkpoints/` counts as none)."""
    found = []
    for name in RUN_FILES:
        item = path / name
        if item.is_dir() and name == "checkpoints":
            if any(item.iterdir()):
                found.append(name + "/")
        elif item.exists():
            found.append(name)
    return found


def refuse_taken(path: Path, overwrite: bool) -> None:
    """ConfigError when a fresh run may not start in `path`: a file, or a run's directory without `overwrite`."""
    try:
        if path.exists() and not path.is_dir():
            raise ConfigError(f"run_dir={path} is a file, not a directory: pick a directory for the run's outputs")
        taken = run_files(path) if path.is_dir() else []
    except OSError as e:  # e.g. a parent the user may not read
        raise ConfigError(f"run_dir={path} cannot be read ({e.strerror or type(e).__name__})") from None
    if taken and not overwrite:
        if "checkpoints/" in taken:
            how = f"continue it with resume={path}, or start in a fresh run_dir"
        else:  # stopped before its first checkpoint: nothing to resume
            how = "it saved no checkpoint to resume; start in a fresh run_dir"
        raise ConfigError(
            f"run_dir={path} already holds a run ({', '.join(taken)}): {how}"
            " (overwrite=true moves the old run aside, it is never deleted)"
        )


def free_name(path: Path, stem: str, suffix: str = "") -> Path:
    """The first of `<stem><suffix>`, `<stem>-2<suffix>`, `<stem>-3<suffix>`, ... beside `path` that does not exist."""
    names = (f"{stem}{'' if k == 1 else f'-{k}'}{suffix}" for k in itertools.count(1))
    return next(path.with_name(name) for name in names if not path.with_name(name).exists())


def move_aside(path: Path) -> Path | None:
    """Rename the run in `path` to a timestamped sibling (None when there is none); ConfigError when it cannot."""
    if not (path.is_dir() and run_files(path)):
        return None
    path = path.resolve()
    here = Path.cwd().resolve()
    if path == here or path in here.parents:
        raise ConfigError(
            f"run_dir={path} overwrite=true would move the current directory aside: give a run_dir below it"
        )
    target = free_name(path, f"{path.name}.old-{datetime.now().strftime('%Y%m%d-%H%M%S')}")
    try:
        path.rename(target)
    except OSError as e:
        raise ConfigError(f"run_dir={path}: the old run could not be moved aside ({e.strerror or e})") from None
    return target


def check_writable(path: Path, name: str = "run_dir") -> None:
    """Create `path` (with parents) and write and remove a probe file; ConfigError naming the reason otherwise.

    Directories created here are removed again when the probe fails, so a refused run leaves nothing.
    """
    missing = []
    probe_dir = path
    while not probe_dir.exists() and probe_dir != probe_dir.parent:
        missing.append(probe_dir)
        probe_dir = probe_dir.parent
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not path.is_dir():
            raise NotADirectoryError(20, "Not a directory")
        probe = path / f".write-probe-{uuid.uuid4().hex[:8]}"
        with open(probe, "wb") as f:
            f.write(b"jaxrl")
            f.flush()
            os.fsync(f.fileno())
        probe.unlink()
    except OSError as e:
        for made in missing:
            try:
                made.rmdir()
            except OSError:
                pass
        raise ConfigError(f"{name}={path} cannot be written ({e.strerror or type(e).__name__})") from None


def fresh_default(path: Path) -> Path:
    """`path`, or `path-2`, `path-3`, ... when a run started in the same second already took it."""
    return free_name(path, path.name)


def keep_previous(path: Path) -> Path | None:
    """Rename an existing file at `path` to `<stem>.<its time><suffix>` so a new one can take its place;
    the new name, or None when there was nothing to keep."""
    if not path.exists():
        return None
    stamp = datetime.fromtimestamp(path.stat().st_mtime).strftime("%Y%m%d-%H%M%S")
    target = free_name(path, f"{path.stem}.{stamp}", path.suffix)
    path.rename(target)
    return target


def claim(path: Path, config_text: str) -> None:
    """Write a fresh run's config.yaml, failing if another process took the directory since it was checked."""
    try:
        with open(path / "config.yaml", "x") as f:
            f.write(config_text)
    except FileExistsError:
        raise ConfigError(f"run_dir={path} was just taken by another run: start in a fresh run_dir") from None
    except OSError as e:
        raise ConfigError(f"run_dir={path} cannot be written ({e.strerror or type(e).__name__})") from None
