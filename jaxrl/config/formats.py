"""Run formats: what a run directory and its checkpoints hold, by version, and the migrations between them.

A run directory names its format in `run.json` (`{"format": 3, "jaxrl": "0.2.0"}`; a run without one was
written before format 3), and every checkpoint's meta names it again. Each change to what a run holds raises
`FORMAT` by one and adds `MIGRATIONS[N]`, a pure function from format N's saved data to format N+1's (new
fields get their defaults). Loading chains them: a run of any format from `OLDEST` on loads with this jaxrl.
Loading migrates in memory and changes nothing on disk; `python -m jaxrl.upgrade RUN_DIR` (and a resume)
writes the migrated checkpoints beside the old ones (jaxrl/trained/upgrade.py). A run of a newer format than
this jaxrl knows gets one line naming both formats and the jaxrl that wrote it. docs/checkpoints.md.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.config.schema import ConfigError

FORMAT = 4  # 3: run.json, the env's version in each checkpoint's meta; 4: a self-play pool's bot counts
OLDEST = 2  # the first format with a way forward: earlier runs predate versioned layouts
RUN_FILE = "run.json"
UNVERSIONED = 2  # the format of a run directory without run.json


class FormatError(ConfigError):
    """A run or checkpoint this jaxrl cannot read or migrate; the message is one line."""


@dataclasses.dataclass(frozen=True)
class Saved:
    """What one checkpoint holds, as plain data: `tree` is the training state as orbax restores it without
    a target (nested dicts by field name, lists by index, numpy arrays; PRNG keys as their uint32 data),
    `meta` its JSON meta and `config` the run's resolved config (config.yaml's content, a plain dict)."""

    tree: Any
    meta: dict[str, Any]
    config: dict[str, Any]


def _2_to_3(saved: Saved) -> Saved:
    """Format 3 names the version of the env a run trained on; every env was at version 1 under format 2."""
    env = dict(saved.meta.get("env") or {})
    env.setdefault("version", 1)
    return dataclasses.replace(saved, meta={**saved.meta, "env": env})


POOL_KEYS = {"params", "active", "filled", "wins", "games", "pushed_at"}  # a self-play pool's fields in format 3
ARENA_PARAMS = {"num_bots", "greedy_share", "policy_share", "start_length", "food_chance", "hazard_damage"}
ADDED_ENV_PARAMS = {4: {"fewest_bots": -1}}  # format -> the arena params it added, with the value that keeps old runs


def _3_to_4(saved: Saved) -> Saved:
    """Format 4's self-play pool keeps running win counts for its scripted opponents (`bot_wins`, `bot_games`,
    one per league kind); a format-3 pool played the env's own bots, one kind, with no counts kept. The arena's
    params gain `fewest_bots` (-1: every game plays num_bots bots, as before)."""

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            node = {k: walk(v) for k, v in node.items()}
            if POOL_KEYS <= node.keys() and "bot_wins" not in node:
                zero = np.zeros((*np.shape(node["wins"])[:-1], 1), np.float32)  # a leading seeds axis kept
                node = {**node, "bot_wins": zero, "bot_games": zero.copy()}
            if ARENA_PARAMS <= node.keys():
                for name, value in ADDED_ENV_PARAMS[4].items():
                    node.setdefault(name, np.full_like(np.asarray(node["num_bots"]), value))
            return node
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return dataclasses.replace(saved, tree=walk(saved.tree))


# MIGRATIONS[N] turns format N's saved data into format N+1's: pure, new fields filled with their defaults
MIGRATIONS: dict[int, Callable[[Saved], Saved]] = {2: _2_to_3, 3: _3_to_4}


def migrate(saved: Saved, found: int, to: int = FORMAT) -> Saved:
    """`saved` of format `found` migrated to format `to`, one step at a time."""
    for version in range(found, to):
        saved = MIGRATIONS[version](saved)
        saved = dataclasses.replace(saved, meta={**saved.meta, "format": version + 1})
    return saved


def check(found: Any, where: str, writer: str | None = None) -> int:
    """`found` when this jaxrl reads that format (itself or through migrations); FormatError, one line, naming
    both formats and the jaxrl that wrote it, otherwise."""
    import jaxrl

    by = f"jaxrl {writer}" if writer else "another jaxrl"
    if isinstance(found, bool) or not isinstance(found, int):
        raise FormatError(f"{where} names no run format ({found!r}): it was not written by jaxrl")
    if found > FORMAT:
        raise FormatError(
            f"{where} has run format {found}, written by {by}; this jaxrl {jaxrl.__version__} reads formats"
            f" {OLDEST} to {FORMAT}: upgrade jaxrl{f' to {writer} or newer' if writer else ''} to load it"
        )
    if found < OLDEST:
        raise FormatError(
            f"{where} has run format {found}; this jaxrl {jaxrl.__version__} migrates formats {OLDEST} to {FORMAT}"
            f" (train it again, or evaluate it with the jaxrl version that wrote it{f', {writer}' if writer else ''})"
        )
    return found


def run_info(run_dir: Path) -> dict[str, Any]:
    """run.json of `run_dir` ({"format": 2} for a run written before run.json); FormatError when damaged."""
    path = Path(run_dir) / RUN_FILE
    if not path.exists():
        return {"format": UNVERSIONED}
    try:
        info = json.loads(path.read_text())
        if not isinstance(info, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as e:
        raise FormatError(f"{path} is damaged ({type(e).__name__}: {str(e)[:120]})") from None
    return info


def run_format(run_dir: Path, where: str | None = None) -> int:
    """The format of `run_dir`, checked readable (FormatError otherwise)."""
    info = run_info(run_dir)
    return check(info.get("format"), where or f"run_dir={run_dir}", info.get("jaxrl"))


def write_run_file(run_dir: Path) -> None:
    import jaxrl

    (Path(run_dir) / RUN_FILE).write_text(json.dumps({"format": FORMAT, "jaxrl": jaxrl.__version__}) + "\n")


def migrate_config(config: dict[str, Any], found: int) -> dict[str, Any]:
    """A run's config (config.yaml as a plain dict) of format `found`, migrated to this format."""
    return migrate(Saved(None, {}, config), found).config


def env_label(name: str, version: int) -> str:
    return f"{name}-v{version}"


def check_env(meta: dict[str, Any], where: str) -> None:
    """FormatError when the checkpoint's env is at another version than this jaxrl's (its rules or
    observations changed since): its policy would play another game."""
    from jaxrl.envs.registry import PluginError, UnknownEnvError, spec

    env = meta.get("env") or {}
    if not env:  # written before checkpoints named their env's version (run format 2): every env was at 1
        name = ((meta.get("config") or {}).get("env") or {}).get("name")
        env = {"name": name, "version": 1} if name else {}
    try:
        current = spec(str(env.get("name"))).version
    except PluginError as e:
        raise FormatError(str(e)) from None
    except UnknownEnvError:
        return  # the run's config names the env; loading that config already says it is unknown
    saved = env.get("version", 1)
    if saved != current:
        raise FormatError(
            f"{where} trained on {env_label(env['name'], saved)}; this jaxrl's {env['name']} is"
            f" {env_label(env['name'], current)} (its rules or observations changed): evaluate it with the jaxrl"
            " version that wrote it, or train it again"
        )


def key_name(key: Any) -> Any:
    """The name orbax gives a pytree key in the tree it restores without a target."""
    for attr in ("name", "key", "idx"):  # GetAttrKey, DictKey / FlattenedIndexKey, SequenceKey
        if hasattr(key, attr):
            return getattr(key, attr)
    return str(key)
