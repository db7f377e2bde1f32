"""Replaying games the official Battlesnake engine played through the arena's own step, turn by turn.

Each recorded turn becomes an arena state (bodies, health, food, hazards, who is out); the recorded
moves go through `Arena.advance`, and what comes out is compared with the engine's next turn:
every body cell, health, who was eliminated, why and by whom, which food was eaten, the hazards,
and the food that appeared, judged by the engine's law (how many, and where food may land), since
the arena draws its own random cells. Games come as `battlesnake-oracle/1` records (one per line,
gzip or not) or as the official CLI's `battlesnake play -o` log (one game a file).
"""

from __future__ import annotations

import gzip
import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

MOVES = {"up": 0, "right": 1, "down": 2, "left": 3}  # the arena's directions (up: y + 1, a row up)
KINDS = ("eliminated", "cause", "credit", "body", "health", "food eaten", "food spawned", "hazards")
CHUNK = 128  # turns stepped in one batched call (one compiled shape)


class RecordError(ValueError):
    """A file that is not a game record this replay reads (one line, naming the file and line)."""


@dataclass
class Divergence:
    game: int  # the game's index in its file
    turn: int  # the engine's turn that the arena's step should have reproduced
    kind: str  # one of KINDS
    detail: str


@dataclass
class Report:
    games: Counter = field(default_factory=Counter)  # per ruleset
    turns: Counter = field(default_factory=Counter)  # turns replayed, per ruleset
    divergent: Counter = field(default_factory=Counter)  # divergent turns, per ruleset
    kinds: dict = field(default_factory=lambda: defaultdict(Counter))  # ruleset -> kind -> divergent turns
    spawns: Counter = field(default_factory=Counter)  # chance draws and hits, engine against arena
    skipped: list = field(default_factory=list)  # (file, game, why)
    first: list = field(default_factory=list)  # the first divergent turns, with their boards


def read_games(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, game) for each game in a record file or a CLI log."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            lines = f.readlines()
    except (OSError, UnicodeDecodeError, EOFError) as e:
        raise RecordError(f"{path}: cannot be read as text or gzip text ({e.__class__.__name__}: {e})") from None
    lines = [line for line in lines if line.strip()]
    if not lines:
        raise RecordError(f"{path}: holds no game (an empty file)")
    try:
        first = json.loads(lines[0])
    except json.JSONDecodeError:
        first = None
    if not (isinstance(first, dict) and "format" in first):
        from jaxrl.battlesnake.cli_log import looks_like_cli_log, read_cli_log

        if not looks_like_cli_log(lines[0]):
            raise RecordError(f"{path} line 1: neither a battlesnake-oracle/1 record nor a `battlesnake play -o` log")
        try:
            yield 0, read_cli_log(lines, str(path))
        except ValueError as e:
            raise RecordError(str(e)) from None
        return
    for i, line in enumerate(lines):
        try:
            game = json.loads(line)
        except json.JSONDecodeError as e:
            raise RecordError(f"{path} line {i + 1}: not JSON ({e.msg})") from None
        if not isinstance(game, dict) or game.get("format") != "battlesnake-oracle/1":
            raise RecordError(
                f"{path} line {i + 1}: not a battlesnake-oracle/1 record (its format is"
                f" {game.get('format') if isinstance(game, dict) else type(game).__name__!r}) nor a"
                " `battlesnake play -o` log"
            )
        yield i, game


def _cells(points: Iterable, height: int, where: str) -> list[tuple[int, int]]:
    """(row, col) of [x, y] points: y points up in the engine, rows down in the arena."""
    out = []
    for p in points:
        if not (isinstance(p, list | tuple) and len(p) == 2 and all(isinstance(v, int) for v in p)):
            raise RecordError(f"{where}: a point is not [x, y] integers: {p!r}")
        out.append((height - 1 - p[1], p[0]))
    return out


def _sides(game: dict[str, Any]) -> list[int]:
    """Royale's side order as the record shows it: for each shrink, the side its hazards moved in from."""
    width, height = game["width"], game["height"]
    sides, bounds = [], [0, 0, 0, 0]  # cells moved in from the left, right, bottom, top
    for turn in game["turns"]:
        hazards = {tuple(p) for p in turn.get("hazards") or ()}
        if not hazards:
            continue
        safe = [(x, y) for x in range(width) for y in range(height) if (x, y) not in hazards]
        if safe:
            xs, ys = [x for x, _ in safe], [y for _, y in safe]
            now = [min(xs), width - 1 - max(xs), min(ys), height - 1 - max(ys)]
        else:
            now = bounds[:]
        for side in range(4):
            sides += [side] * max(now[side] - bounds[side], 0)
        bounds = now
    return sides


class Replayer:
    """Steps recorded turns through the arena, batched per board, snake count and ruleset."""

    def __init__(self) -> None:
        self._steps: dict[tuple, Any] = {}

    def env(self, size: int, snakes: int, ruleset: str):
        from jaxrl.battlesnake import arena_class

        key = (size, snakes, ruleset)
        if key not in self._steps:
            import jax

            env = arena_class()(size=size, num_snakes=snakes, num_agents=1, view=3, ruleset=ruleset)
            step = jax.jit(jax.vmap(env.advance, in_axes=(0, 0, 0, None)))
            self._steps[key] = (env, step)
        return self._steps[key]

    def game(self, game: dict[str, Any], index: int, report: Report, boards: int) -> None:
        from jaxrl.battlesnake import arena_class

        arena = arena_class()
        ruleset = game.get("ruleset", "standard")
        width, height = game.get("width"), game.get("height")
        turns = game.get("turns") or []
        where = f"game {index} ({ruleset}, {width}x{height})"
        if ruleset not in arena.rulesets:
            report.skipped.append((index, f"{where}: ruleset {ruleset!r} is not one the arena plays"))
            return
        if width != height or not isinstance(width, int) or not 5 <= width <= 32:
            report.skipped.append((index, f"{where}: the arena plays square boards of 5 to 32, not {width}x{height}"))
            return
        if not turns:
            report.skipped.append((index, f"{where}: no turns"))
            return
        ids = [s["id"] for s in turns[0]["snakes"]]
        if not 1 <= len(ids) <= 32:
            report.skipped.append((index, f"{where}: {len(ids)} snakes; the arena seats 1 to 32"))
            return
        env, step = self.env(width, len(ids), ruleset)
        params = self._params(env, game.get("settings") or {})
        sides = _sides(game) if ruleset == "royale" else []
        sides = (sides + [0] * (2 * width))[: 2 * width]
        report.games[ruleset] += 1
        pairs = []
        last = 0 if ruleset == "solo" else 1
        for t in range(len(turns) - 1):
            moves = turns[t + 1].get("moves")
            live = sum(not s.get("eliminatedCause") for s in turns[t]["snakes"])
            if not moves or live <= last:  # the engine's game-over turn: nothing moves
                continue
            pairs.append((turns[t], turns[t + 1], moves))
        # A row per way the moves could have been: a CLI log does not say how a snake that died moved.
        rows = []
        for p, (before, _, moves) in enumerate(pairs):
            unknown = [i for i in ids if i not in moves and not _out(before, i)]
            known = [MOVES.get(moves.get(i), 0) for i in ids]
            options = itertools.product(range(4), repeat=len(unknown)) if len(unknown) <= 3 else [(0,) * len(unknown)]
            for option in options:
                direction = list(known)
                for i, d in zip(unknown, option):
                    direction[ids.index(i)] = d
                rows.append((p, direction))
        results: dict[int, list] = {}
        for start in range(0, len(rows), CHUNK):
            chunk = rows[start : start + CHUNK]
            states = [
                self._state(env, pairs[p][0], ids, width, sides, f"{where} turn {pairs[p][0]['turn']}")
                for p, _ in chunk
            ]
            batch = _pad(states, CHUNK)
            import jax
            import jax.numpy as jnp

            keys = jax.random.split(jax.random.key(index * 7919 + start), CHUNK)
            dirs = jnp.asarray(np.array([d for _, d in chunk] + [[0] * len(ids)] * (CHUNK - len(chunk))), jnp.int32)
            _, new, _, _, info = step(keys, batch, dirs, params)
            new, ate = jax.tree.map(np.asarray, new), np.asarray(info["snake_ate"])
            for j, (p, direction) in enumerate(chunk):
                before, after, _ = pairs[p]
                got = jax.tree.map(lambda a, j=j: a[j], new)
                eaten = _ate_cells(env, states[j], direction, ate[j])
                found = self._compare(env, params, before, after, got, ids, width, arena.causes, eaten)
                if p not in results or (results[p][0] and not found):
                    results[p] = (found, got)
        for p, (found, got) in sorted(results.items()):
            before, after, _ = pairs[p]
            report.turns[ruleset] += 1
            if found:
                report.divergent[ruleset] += 1
                for kind in {k for k, _ in found}:
                    report.kinds[ruleset][kind] += 1
                if len(report.first) < boards:
                    report.first.append(
                        {
                            "where": f"{where} turn {after['turn']}",
                            "found": found,
                            "engine": draw(after, ids, width),
                            "arena": env.render_text(got),
                        }
                    )
            self._count_spawns(report, env, before, after, got, ids, width, params)

    @staticmethod
    def _params(env, settings: dict[str, Any]):
        def number(name: str, default: int) -> int:
            value = settings.get(name, default)
            try:
                return int(value)
            except (TypeError, ValueError):
                raise RecordError(f"setting {name}={value!r} is not an integer") from None

        return env.default_params.replace(
            min_food=number("minimumFood", 1),
            food_chance=number("foodSpawnChance", 15),
            hazard_damage=number("damagePerTurn", number("hazardDamagePerTurn", 14)),
            shrink_every=number("shrinkEveryNTurns", 25),
            max_steps_in_episode=10**9,
        )

    @staticmethod
    def _state(env, turn: dict[str, Any], ids: list[str], size: int, sides: list[int], where: str):
        snakes = {s["id"]: s for s in turn["snakes"]}
        bodies, alive, health = [], [], []
        for i in ids:
            s = snakes.get(i)
            if s is None:
                raise RecordError(f"{where}: snake {i} is missing")
            live = not s.get("eliminatedCause")
            bodies.append(_cells(s["body"], size, where) if live else [(0, 0)])
            alive.append(live)
            health.append(int(s["health"]))
        live_bodies = [b if a else [] for b, a in zip(bodies, alive)]
        for k, body in enumerate(live_bodies):
            if any(not (0 <= r < size and 0 <= c < size) for r, c in body):
                raise RecordError(f"{where}: snake {ids[k]} has a cell off the board")
        return env.make_state(
            live_bodies,
            food=_cells(turn.get("food") or (), size, where),
            hazards=_cells(turn.get("hazards") or (), size, where),
            health=health,
            playing=[True] * len(ids),
            sides=sides,
            time=int(turn["turn"]),
        )

    @staticmethod
    def _compare(env, params, before, after, got, ids, size, causes, eaten) -> list[tuple[str, str]]:
        found = []
        snakes = {s["id"]: s for s in after["snakes"]}
        previously = {s["id"]: not s.get("eliminatedCause") for s in before["snakes"]}
        live_after = []
        for k, i in enumerate(ids):
            if not previously[i]:
                continue
            s = snakes[i]
            live = not s.get("eliminatedCause")
            if live != bool(got.alive[k]):
                said = "lives" if live else f"is out ({s['eliminatedCause']})"
                found.append(("eliminated", f"{i}: the engine's snake {said}, the arena's {_fate(got, k, causes)}"))
                continue
            if live:
                live_after.append(k)
                if int(s["health"]) != int(got.health[k]):
                    found.append(
                        ("health", f"{i}: health {s['health']} in the engine, {int(got.health[k])} in the arena")
                    )
                continue
            cause = causes[int(got.cause[k])]
            if s["eliminatedCause"] == "unknown":  # a CLI log names no cause
                continue
            if s["eliminatedCause"] != cause:
                found.append(("cause", f"{i}: {s['eliminatedCause']} in the engine, {cause} in the arena"))
            by = s.get("eliminatedBy") or ""
            killer = int(got.killer[k])
            theirs = ids[killer] if killer >= 0 else ""
            if by != theirs and s["eliminatedCause"] == cause:
                found.append(
                    ("credit", f"{i} ({cause}): by {by or 'no one'} in the engine, {theirs or 'no one'} in the arena")
                )
        # Bodies: the engine's live bodies as the arena keeps them (owner and count per cell).
        owner = np.full(size * size, -1, np.int8)
        life = np.zeros(size * size, np.int16)
        for k in live_after:
            body = _cells(snakes[ids[k]]["body"], size, "")
            for j, (r, c) in enumerate(body):
                owner[r * size + c], life[r * size + c] = k, max(life[r * size + c], len(body) - j)
        if live_after and (not np.array_equal(owner, got.owner) or not np.array_equal(life, got.life)):
            wrong = sorted({ids[k] for k in live_after if not _same(owner, life, got, k)})
            found.append(("body", f"bodies differ: {', '.join(wrong) or 'cells of snakes out'}"))
        # Food: what was eaten must match; what appeared must follow the engine's law.
        # The arena's eaten cells come from who ate (its food after the turn may have refilled a cell whose
        # eater died on it); the engine's are the food gone, or refilled on a cell no live body holds.
        had = _mask(before.get("food") or (), size)
        engine_food, arena_food = _mask(after.get("food") or (), size), np.asarray(got.food)
        constrictor = env.constrictor
        eaten = eaten & had
        gone = had & ~engine_food
        refillable = engine_food & (owner < 0)
        if not constrictor and (np.any(gone & ~eaten) or np.any(eaten & ~gone & ~refillable)):
            found.append(("food eaten", f"{int(gone.sum())} eaten in the engine, {int(eaten.sum())} in the arena"))
        kept = had & ~eaten if not constrictor else np.zeros_like(had)
        kept_engine, kept_arena = kept, kept
        for who, food, kept in (("arena", arena_food, kept_arena), ("engine", engine_food, kept_engine)):
            problem = _spawn_problem(env, params, got, food, kept, size)
            if problem:
                found.append(("food spawned", f"the {who}'s new food: {problem}"))
        hazards = _mask(after.get("hazards") or (), size)
        if not np.array_equal(hazards, np.asarray(got.hazard)):
            found.append(
                ("hazards", f"{int(hazards.sum())} hazard cells in the engine, {int(np.sum(got.hazard))} in the arena")
            )
        return found

    @staticmethod
    def _count_spawns(report, env, before, after, got, ids, size, params) -> None:
        """Turns where food stood at the minimum or above, and how often one more appeared (the chance)."""
        if env.constrictor:
            return
        had = _mask(before.get("food") or (), size)
        for who, food in (("engine", _mask(after.get("food") or (), size)), ("arena", np.asarray(got.food))):
            kept = had & food
            if kept.sum() >= params.min_food:
                report.spawns[f"{who} draws"] += 1
                report.spawns[f"{who} spawns"] += int((food & ~kept).sum() > 0)


def _ate_cells(env, state, direction: list[int], ate: np.ndarray) -> np.ndarray:
    """(cells,) the cells the snakes that ate moved onto (the arena's own `snake_ate`)."""
    size = env.size
    out = np.zeros(size * size, bool)
    for k, (d, fed) in enumerate(zip(direction, ate)):
        if not fed:
            continue
        row = int(state.head[k]) // size + (-1, 0, 1, 0)[d]
        col = int(state.head[k]) % size + (0, 1, 0, -1)[d]
        if env.wrapped:
            row, col = row % size, col % size
        if 0 <= row < size and 0 <= col < size:
            out[row * size + col] = True
    return out


def _out(turn: dict[str, Any], snake: str) -> bool:
    return any(s["id"] == snake and s.get("eliminatedCause") for s in turn["snakes"])


def _same(owner, life, got, k) -> bool:
    return bool(
        np.array_equal(owner == k, np.asarray(got.owner) == k)
        and np.array_equal(life[owner == k], np.asarray(got.life)[owner == k])
    )


def _fate(got, k: int, causes) -> str:
    return "lives" if bool(got.alive[k]) else f"is out ({causes[int(got.cause[k])]})"


def _mask(points, size: int) -> np.ndarray:
    out = np.zeros(size * size, bool)
    for r, c in _cells(points, size, "food"):
        if 0 <= r < size and 0 <= c < size:
            out[r * size + c] = True
    return out


def _spawn_problem(env, params, got, food: np.ndarray, kept: np.ndarray, size: int) -> str:
    """What breaks the engine's law in the food that appeared this turn ('' when nothing does)."""
    new = food & ~kept
    alive = np.asarray(got.alive)
    bodies = np.asarray(got.owner) >= 0  # the live bodies after the turn (the arena's, checked apart)
    heads = np.zeros(size * size, bool)
    for k in np.flatnonzero(alive):
        heads[int(got.head[k])] = True
    board = heads.reshape(size, size)
    near = np.zeros_like(board)
    near[:-1] |= board[1:]
    near[1:] |= board[:-1]
    near[:, :-1] |= board[:, 1:]
    near[:, 1:] |= board[:, :-1]
    free = ~bodies & ~kept & ~near.reshape(-1)
    if np.any(new & ~free):
        return f"{int(np.sum(new & ~free))} on a body or beside a live head"
    need = int(params.min_food) - int(kept.sum())
    count = int(new.sum())
    if need > 0:
        want = min(need, int(free.sum()))
        return "" if count == want else f"{count} appeared where the minimum asks for {want}"
    return "" if count <= 1 else f"{count} appeared with the minimum met (at most 1)"


def _pad(states: list, n: int):
    import jax
    import jax.numpy as jnp

    states = states + [states[-1]] * (n - len(states))
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def draw(turn: dict[str, Any], ids: list[str], size: int) -> str:
    """The engine's board as the arena's render_text draws its own (a letter per snake, upper case its head)."""
    from jaxrl.battlesnake import arena_class

    letters = arena_class().letters

    chars = [["." for _ in range(size)] for _ in range(size)]
    for r, c in _cells(turn.get("food") or (), size, "food"):
        if 0 <= r < size and 0 <= c < size:
            chars[r][c] = "*"
    for k, i in enumerate(ids):
        s = next(s for s in turn["snakes"] if s["id"] == i)
        if s.get("eliminatedCause"):
            continue
        for j, (r, c) in reversed(list(enumerate(_cells(s["body"], size, "body")))):
            if 0 <= r < size and 0 <= c < size:
                chars[r][c] = letters[k].upper() if j == 0 else letters[k]
    edge = "+" + "-" * size + "+"
    return "\n".join([edge, *("|" + "".join(row) + "|" for row in chars), edge])


def replay(paths: list[Path], boards: int = 3) -> Report:
    report, replayer = Report(), Replayer()
    for path in paths:
        for index, game in read_games(path):
            try:
                replayer.game(game, index, report, boards)
            except (KeyError, TypeError) as e:
                raise RecordError(f"{path} game {index}: not a game record ({e.__class__.__name__}: {e})") from None
            except RecordError as e:
                raise RecordError(f"{path} {e}") from None
    return report
