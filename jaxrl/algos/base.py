"""The algorithm registry the CLI, config checks and driver read, and the `Algorithm` protocol it holds.

An algorithm is one module in `jaxrl/algos/` that defines its config dataclass (fields, one
doc line each, and `validate(cfg)`), a class implementing `Algorithm` (`jaxrl.core.algorithm`), and calls
`register(name, config_cls, factory)`. Every module in `jaxrl.algos` is imported when the
registry is first read (`jaxrl.config.registry`), so a new algorithm needs no edit anywhere else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from jaxrl.config.registry import ALGORITHMS
from jaxrl.core.algorithm import Algorithm, Allocation, PolicyFn

__all__ = ["Algorithm", "AlgorithmSpec", "Allocation", "PolicyFn", "algorithms", "get", "register"]


@dataclasses.dataclass(frozen=True)
class AlgorithmSpec:
    """A registered algorithm: its config schema and how to build it."""

    name: str
    config: type  # dataclass with `name` and `validate(cfg)`; the `algo` config group's schema
    factory: Callable[[Any, Any, Any], Algorithm]  # (TrainConfig, env, env_params) -> Algorithm
    doc: str = ""  # one line for --help


def register(name: str, config: type, factory: Callable[[Any, Any, Any], Algorithm], doc: str = "") -> None:
    """Make `algo=<name>` available to the CLI, the Python API, config checks and the driver."""
    ALGORITHMS.add(name, AlgorithmSpec(name, config, factory, doc))


def algorithms() -> dict[str, AlgorithmSpec]:
    """Every registered algorithm by name (PPO first)."""
    return ALGORITHMS.all()


def get(name: str) -> AlgorithmSpec:
    """The algorithm registered as `name`; KeyError naming the valid ones otherwise."""
    found: AlgorithmSpec = ALGORITHMS.get(name)
    return found
