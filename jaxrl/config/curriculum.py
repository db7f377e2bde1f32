"""Curriculum: phases of env steps, each with its own `EnvParams`, switched between chunks without recompiling.

`curriculum=[{steps: 2e6, hunger_limit: 30}, {steps: 3e6, reward_step: -0.01}, {}]` runs 2M env
steps (per seed) with `hunger_limit=30`, then 3M with `reward_step=-0.01`, then the rest of the
run with the config's own env settings. Each phase's overrides apply to the config's env
settings (they do not accumulate); the last phase may omit `steps` and runs to the end.

Env params are traced values carried in the runner (`runner.env_params`), so a new phase is a
new input to the same compiled chunk; chunks are cut at phase boundaries, so every update runs
with its phase's params.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from jaxrl.core.rollout import traced
from jaxrl.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Phase:
    index: int  # 1-based
    start_update: int  # first update of the phase
    end_update: int | None  # first update after it; None: runs to the end
    overrides: dict[str, Any]


def _number(phase: int, key: str, value: Any, field_value: Any) -> Any:
    if isinstance(field_value, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"curriculum phase {phase}: {key}={value} is invalid: must be true or false")
        return value
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ConfigError(f"curriculum phase {phase}: {key}={value} is invalid: must be a number")
    if isinstance(field_value, int) and float(value) != int(value):
        raise ConfigError(f"curriculum phase {phase}: {key}={value} is invalid: must be an integer")
    return int(value) if isinstance(field_value, int) else float(value)


def build_phases(
    curriculum: list[Any],
    env_name: str,
    base_params: Any,
    shape_keys: tuple[str, ...],
    steps_per_update: int,
    check: Callable[[Any], None] | None = None,
) -> list[Phase]:
    """Checked phases with their update ranges; ConfigError naming the first bad phase or key.

    `check` (the env's `check_params`) gets each phase's params and raises ValueError on a value out of range.
    """
    fields = [f.name for f in dataclasses.fields(base_params)]
    phases, start_steps = [], 0.0
    for i, raw in enumerate(curriculum, start=1):
        if not isinstance(raw, dict):
            raise ConfigError(
                f"curriculum phase {i} must be a mapping like {{steps: 1e6, hunger_limit: 50}}, got {raw!r}"
            )
        overrides = {}
        for key, value in raw.items():
            if key == "steps":
                continue
            if key in shape_keys:
                raise ConfigError(
                    f"curriculum phase {i}: {key} changes array shapes and cannot change between phases"
                    f" (allowed: {', '.join(fields)})"
                )
            if key not in fields:
                raise ConfigError(
                    f"curriculum phase {i}: {key} is not a parameter of {env_name} (allowed: {', '.join(fields)})"
                )
            overrides[key] = _number(i, key, value, getattr(base_params, key))
        if check is not None:
            try:
                check(base_params.replace(**overrides))
            except ValueError as e:
                raise ConfigError(f"curriculum phase {i}: {e}") from None
        steps = raw.get("steps")
        last = i == len(curriculum)
        if steps is None and not last:
            raise ConfigError(f"curriculum phase {i} needs steps (env steps per seed); only the last may omit it")
        if steps is not None and (
            not isinstance(steps, int | float) or isinstance(steps, bool) or not math.isfinite(steps) or steps <= 0
        ):
            raise ConfigError(f"curriculum phase {i}: steps={steps} is invalid: must be a finite number > 0")
        start = math.ceil(start_steps / steps_per_update)
        end = None if steps is None or last else math.ceil((start_steps + steps) / steps_per_update)
        phases.append(Phase(i, start, end, overrides))
        start_steps += steps or 0
    return phases


class Curriculum:
    """Which phase an update belongs to, and the env params of each phase."""

    def __init__(self, phases: list[Phase], base_params: Any):
        self.phases = phases
        self.base_params = base_params

    def __len__(self) -> int:
        return len(self.phases)

    def phase(self, update: int) -> Phase:
        """The phase running at `update` (the last one once all have passed)."""
        for phase in self.phases:
            if phase.end_update is None or update < phase.end_update:
                return phase
        return self.phases[-1]

    def updates_left(self, update: int) -> int | None:
        """Updates until the phase of `update` ends; None when it runs to the end."""
        end = self.phase(update).end_update
        return None if end is None else max(end - update, 1)

    def params(self, phase: Phase | None) -> Any:
        """Traced env params of a phase (the config's own without a curriculum)."""
        params = self.base_params if phase is None else self.base_params.replace(**phase.overrides)
        return traced(params, like=self.base_params)


def for_config(cfg: Any, env: Any, env_params: Any, steps_per_update: int) -> Curriculum | None:
    """The run's curriculum (None without one); ConfigError naming the first bad phase or key."""
    if not cfg.curriculum:
        return None
    from jaxrl import envs
    from jaxrl.envs.base import hook

    shape_keys = tuple(envs.spec(cfg.env.name).shape_keys)
    check = hook(env, "check_params")
    phases = build_phases(cfg.curriculum, cfg.env.name, env_params, shape_keys, steps_per_update, check)
    return Curriculum(phases, env_params)
