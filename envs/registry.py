"""One `make(name, **kwargs)` for our envs and every gymnax id."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnax

from envs.grid import GridWorld
from envs.snake import Snake

OUR_ENVS: dict[str, Callable[..., Any]] = {"snake": Snake, "grid": GridWorld}


class UnknownEnvError(ValueError):
    """An env name that is neither ours nor a gymnax id."""


def registered_names() -> list[str]:
    """Our env names first, then every gymnax id."""
    return list(OUR_ENVS) + [n for n in gymnax.registered_envs if n not in OUR_ENVS]


def make(name: str, **kwargs: Any) -> tuple[Any, Any]:
    """Build `(env, env_params)` for one of our envs or any gymnax id."""
    if name in OUR_ENVS:
        env = OUR_ENVS[name](**kwargs)
        return env, env.default_params
    if name in gymnax.registered_envs:
        return gymnax.make(name, **kwargs)
    raise UnknownEnvError(f"unknown env {name!r}; valid names: {', '.join(registered_names())}")
