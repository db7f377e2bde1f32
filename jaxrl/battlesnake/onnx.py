"""An exported arena policy (`python -m jaxrl.export ... OUT.onnx`) served as a Battlesnake with numpy and
onnxruntime alone: no JAX is imported where it runs.

    python -m jaxrl.battlesnake serve champion.onnx port=8000

`arena_view` makes the arena's observation of `you` from a `/move` body as the env does (envs/arena.py:
`board_game`, then `views`): the board of the request's size, `you` first, each cell read as the env reads
it, the crop of the file's view centred on the head and turned so that the heading (from the neck) points
up. tests/battlesnake/test_onnx_serve.py checks it against the env's own view on the official engine's
recorded boards. The answer is the file's greedy move among those the env allows (never back into the
neck). Boards the arena does not play (not square, another ruleset) get safe moves by rule, as `serve`
does for runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.battlesnake import ENV
from jaxrl.config.compose import UsageError

RULESETS = ("standard", "solo", "wrapped", "constrictor", "wrapped_constrictor", "royale")  # the arena's
MOVES_BY_HEADING = ("up", "right", "down", "left")  # headings 0..3; the engine's y axis points up
ENV_VERSION = 2  # the arena's rules and observation this view reproduces (the test holds it to the registry's)
SIDES = (5, 32)  # the board sides the arena plays
MOST_SNAKES = 32  # and the snakes


class Unplayable(ValueError):
    """A board the arena does not play."""


def heading_from(head: tuple[int, int], neck: tuple[int, int], size: int) -> int:
    """The heading that brought a head from its neck (row, col), across an edge too (wrapped rulesets)."""
    dr, dc = head[0] - neck[0], head[1] - neck[1]
    dr = -1 if dr == size - 1 else 1 if dr == 1 - size else dr
    dc = -1 if dc == size - 1 else 1 if dc == 1 - size else dc
    return {(-1, 0): 0, (0, 1): 1, (1, 0): 2, (0, -1): 3}.get((dr, dc), 0)


def arena_view(request: dict[str, Any], view: int, tails: bool = False) -> tuple[np.ndarray, int, np.ndarray]:
    """(observation (view, view, 8) uint8, 9 channels with `tails`, heading, the 4 actions allowed) of `you` in a
    `/move` body, as the arena sees it; Unplayable for a board it does not play, KeyError/TypeError for a missing
    field."""
    board, you = request["board"], request["you"]
    width, height = int(board["width"]), int(board["height"])
    ruleset = str(((request.get("game") or {}).get("ruleset") or {}).get("name") or "standard")
    if ruleset not in RULESETS:
        raise Unplayable(f"ruleset {ruleset!r} is not one the arena plays ({', '.join(RULESETS)})")
    if width != height:
        raise Unplayable(f"the arena plays square boards, not {width}x{height}")
    size = width
    if not SIDES[0] <= size <= SIDES[1]:
        raise Unplayable(f"the arena plays boards of {SIDES[0]} to {SIDES[1]} a side, not {size}x{size}")
    mine = [s for s in board["snakes"] if str(s["id"]) == str(you["id"])]
    if not mine:
        raise Unplayable(f"you ({you['id']!r}) are not among the board's snakes")
    snakes = mine[:1] + [s for s in board["snakes"] if str(s["id"]) != str(you["id"])]
    if len(snakes) > min(MOST_SNAKES, (size * size + 1) // 2 - 1):
        raise Unplayable(f"{len(snakes)} snakes are more than the arena seats on a {size}x{size} board")

    def cell(point: dict[str, Any]) -> tuple[int, int]:
        x, y = int(point["x"]), int(point["y"])
        if not (0 <= x < size and 0 <= y < size):
            raise Unplayable(f"point ({x}, {y}) is off the {size}x{size} board")
        return size - 1 - y, x

    owner = np.full((size, size), -1, np.int32)
    heads = np.zeros((size, size), bool)
    frees = np.zeros((size, size), bool)  # a tail the next move empties: not stacked (the body's last two differ)
    lengths = []
    for k, s in enumerate(snakes):
        body = [cell(p) for p in s["body"]]
        if not body:
            raise Unplayable(f"snake {s['id']!r} has no body")
        for r, c in body:
            if owner[r, c] not in (-1, k):
                raise Unplayable(f"cell {(r, c)} belongs to snakes {owner[r, c]} and {k}")
            owner[r, c] = k
        heads[body[0]] = True
        frees[body[-1]] |= len(body) == 1 or body[-1] != body[-2]
        lengths.append(len(body))
        if k == 0:
            head, neck = body[0], next((c for c in body[1:] if c != body[0]), None)
    food = np.zeros((size, size), bool)
    for p in board.get("food") or ():
        food[cell(p)] = True
    hazard = np.zeros((size, size), bool)
    for p in board.get("hazards") or ():
        hazard[cell(p)] = True
    heading = 0 if neck is None else heading_from(head, neck, size)
    health = int(mine[0].get("health", 100))
    length_of = np.where(owner >= 0, np.asarray(lengths)[np.maximum(owner, 0)], 0)

    half = view // 2
    wrapped = ruleset in ("wrapped", "wrapped_constrictor")
    pad = (lambda a: np.pad(a, half, mode="wrap")) if wrapped else (lambda a: np.pad(a, half))
    layers = {
        "owner": np.pad(owner, half, mode="wrap") if wrapped else np.pad(owner, half, constant_values=-1),
        "head": pad(heads),
        "food": pad(food),
        "hazard": pad(hazard),
        "frees": pad(frees),
        "length": pad(length_of),
        "wall": np.zeros((size + 2 * half,) * 2, bool) if wrapped else ~np.pad(np.ones((size, size), bool), half),
    }
    r, c = head
    crop = {k: np.rot90(v[r : r + view, c : c + view], heading) for k, v in layers.items()}
    is_mine = crop["owner"] == 0
    other = (crop["owner"] > 0) & ~is_mine
    other_head = other & crop["head"]
    planes = [
        is_mine,
        other & ~crop["head"],
        other_head,
        other_head & (np.minimum(crop["length"], 1023) >= lengths[0]),
        crop["food"],
        crop["wall"],
        np.arange(view * view).reshape(view, view) < health,
        crop["hazard"],
    ]
    if tails:
        planes.append(crop["frees"])
    obs = np.stack(planes, axis=-1).astype(np.uint8)
    back_is_neck = lengths[0] > 1 and neck is not None
    allowed = np.array([True, True, True, not back_is_neck])
    return obs, heading, allowed


class OnnxPlayer:
    """An exported arena policy: its onnxruntime session and what its metadata says."""

    def __init__(self, path: str | Path):
        try:
            import onnxruntime as ort
        except ImportError:
            raise UsageError('serving an .onnx file needs onnxruntime: pip install "jaxrl[onnx]"') from None
        path = Path(path).expanduser()
        if not path.is_file():
            raise UsageError(f"{path} is not a file (export one: python -m jaxrl.export TARGET {path.name})")
        try:
            self.session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001  (onnxruntime's errors: a file that is not a model, one line)
            reason = (str(e).strip().splitlines() or [""])[0][:160]
            raise UsageError(f"{path} is not an ONNX model onnxruntime can run ({reason})") from None
        props = self.session.get_modelmeta().custom_metadata_map
        meta = {}
        for key in ("env", "env_version", "obs_shape", "inputs"):
            try:
                meta[key] = json.loads(props[key])
            except (KeyError, ValueError):
                meta[key] = None  # a file jaxrl did not write (or not whole): refused below
        if meta["env"] != ENV or meta["env_version"] != ENV_VERSION:
            found = f"env={meta['env']} v{meta['env_version']}" if meta["env"] else "no jaxrl metadata"
            raise UsageError(f"{path} holds {found}: a Battlesnake is served from a policy of the arena v{ENV_VERSION}")
        shape, inputs = meta["obs_shape"], meta["inputs"]
        if not (isinstance(shape, list) and len(shape) == 3 and shape[-1] in (8, 9) and isinstance(inputs, list)):
            why = "does not say what it sees (obs_shape, inputs)"
            raise UsageError(f"{path} {why}: export it with python -m jaxrl.export")
        if len(inputs) != 1:
            raise UsageError(f"{path} is a recurrent policy: serving one from ONNX keeps no memory (serve its run)")
        self.view = int(shape[0])
        self.tails = shape[-1] == 9  # the arena's tails channel (env.tails=true)
        self.name = path.stem
        self.path = path

    def exact_view(self) -> str:
        return f"arena, view {self.view}, onnxruntime"
