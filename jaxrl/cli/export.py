"""`python -m jaxrl.export TARGET OUT.onnx [key=value ...]`: a trained policy as an ONNX file, checked with
onnxruntime (`jaxrl.trained.export`)."""

from __future__ import annotations

from typing import Any

from jaxrl.cli import command
from jaxrl.config.compose import UsageError, integer_setting

USAGE = """usage: python -m jaxrl.export TARGET OUT.onnx [key=value ...]

  TARGET               a run directory (its newest checkpoint), or a shelf agent (pretrained:NAME)
  OUT.onnx             the file to write; OUT.json beside it says what it holds
  step=                the checkpoint to export (default: the newest)
  seed=0               which of the run's seeds
  member=              a sweep's member (default: the best)
  check=10000          observations from greedy episodes that JAX and onnxruntime must agree on (0: no check)
  check_seed=0         the seed of those episodes

The file maps a batch of observations (the env's own dtype and shape) to per-action scores: logits
(PPO, A2C, recurrent PPO) or Q-values (DQN, PQN); the greedy action is their argmax. A recurrent policy
also takes its carry and gives the next one. It is written only if at least 99.9% of the greedy actions
agree with JAX's and every score is within 1e-4. Needs the [onnx] extra: pip install "jaxrl[onnx]".
"""

DEFAULTS: dict[str, Any] = {"step": None, "seed": 0, "member": None, "check": 10_000, "check_seed": 0}


def parse_args(argv: list[str]) -> tuple[list[str], dict[str, Any]]:
    paths, args = [], dict(DEFAULTS)
    for item in argv:
        key, eq, value = item.partition("=")
        if not eq:
            paths.append(item)
            continue
        if key not in DEFAULTS:
            raise UsageError(f"unknown setting '{key}'; valid: {', '.join(DEFAULTS)}")
        args[key] = value
    if len(paths) != 2:
        raise UsageError("give what to export and where: python -m jaxrl.export TARGET OUT.onnx")
    for key in ("step", "seed", "member", "check", "check_seed"):
        if args[key] is not None:
            args[key] = integer_setting(key, args[key], 0)
    return paths, args


def run(argv: list[str]) -> int:
    (target, out), args = parse_args(argv)
    if not out.endswith(".onnx"):
        raise UsageError(f"{out} is invalid: the output is a file name ending in .onnx")
    from jaxrl.api import load
    from jaxrl.trained.export import export, need_onnx

    need_onnx()  # before a run is read: the extra's absence is the first thing to say
    export(load(target), out, **args)
    return 0


main = command(__name__)
