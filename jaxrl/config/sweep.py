"""Sweeps as one program: `sweep.algo.lr=[1e-4,3e-4,1e-3]` trains every value in one compiled program.

A sweep key names a float hyperparameter of the algorithm (`algo.lr`, `algo.ent_coef`,
`algo.gamma`, the epsilon settings, ...) or a number of the env's `EnvParams` (`env.reward_apple`,
`env.shaping`, ...): values that change no array shape. Several keys form a grid; its points are
the sweep's members, ordered by the keys (the `algo` keys, then the `env` keys, each in the order
given; the last varies fastest).

Members ride the vmapped seed axis beside the seeds: the axis holds members x num_seeds entries,
member-major (entry m * num_seeds + s is member m's seed s, which starts from seed s's key). A
member's algorithm values reach the compiled program as traced inputs, and its env values as the
env params its envs start with, so a member trains exactly as a separate run with its settings
would, and every member shares one compile.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

import numpy as np

from jaxrl.config.schema import ConfigError, TrainConfig, float32

GROUPS = ("algo", "env")


@dataclasses.dataclass(frozen=True)
class Sweep:
    """A run's sweep: the swept keys and each member's values (one member with no keys: no sweep)."""

    keys: tuple[str, ...] = ()  # "algo.lr", "env.reward_apple", in the order given
    members: tuple[dict[str, Any], ...] = ({},)  # each member's value per key

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def algo_keys(self) -> tuple[str, ...]:
        """The swept algorithm fields (without the `algo.` prefix)."""
        return tuple(k.partition(".")[2] for k in self.keys if k.startswith("algo."))

    def label(self, member: int) -> str:
        """`algo.lr=0.001 env.shaping=0.2` for member `member` (empty without a sweep)."""
        return settings_label(self.members[member])

    def algo_values(self, num_seeds: int) -> dict[str, np.ndarray]:
        """{field: (members * num_seeds,) float32}: the swept algorithm values of every entry of the seed axis."""
        return {
            name: np.repeat(np.array([m[f"algo.{name}"] for m in self.members], np.float32), num_seeds)
            for name in self.algo_keys
        }


def settings_label(settings: dict[str, Any]) -> str:
    """A member's settings as the command line writes them: `algo.lr=0.001 env.shaping=0.2`."""
    return " ".join(f"{k}={v:g}" for k, v in settings.items())


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """`{"algo": {"lr": [...]}}` -> `{"algo.lr": [...]}` (a dotted key stays as it is)."""
    if not isinstance(tree, dict):
        return {prefix: tree}
    out: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        out.update(flatten(value, name) if isinstance(value, dict) else {name: value})
    return out


def _float_fields(config: Any) -> list[str]:
    """The float fields of an algorithm config (declared `float`): the hyperparameters a sweep may trace."""
    return [f.name for f in dataclasses.fields(config) if str(f.type) == "float"]


def _env_numbers(cfg: TrainConfig) -> list[str]:
    """The env's numeric `EnvParams` fields (traced values; booleans are switches, not hyperparameters)."""
    from jaxrl import envs

    fields = envs.spec(cfg.env.name).param_fields
    return [k for k, v in fields.items() if isinstance(v, int | float) and not isinstance(v, bool)]


def _check_key(cfg: TrainConfig, key: str) -> None:
    """ConfigError unless `key` (e.g. "algo.lr") can be swept in this run."""
    from jaxrl import envs

    group, _, name = key.partition(".")
    if group not in GROUPS or not name or "." in name:
        raise ConfigError(
            f"sweep.{key} cannot be swept: a sweep key is algo.<float setting> or env.<EnvParams number>"
            " (num_seeds already trains seeds side by side)"
        )
    if group == "algo":
        allowed = _float_fields(cfg.algo)
        if name in allowed:
            return
        known = {f.name for f in dataclasses.fields(cfg.algo)}
        why = (
            "it fixes array shapes or the compiled program"
            if name in known
            else f"algo={cfg.algo.name} has no such setting"
        )
        raise ConfigError(f"sweep.{key} cannot be swept: {why}; sweepable for {cfg.algo.name}: {', '.join(allowed)}")
    allowed = _env_numbers(cfg)
    if name in allowed:
        return
    spec = envs.spec(cfg.env.name)
    if name in spec.shape_keys:
        why = f"it is a constructor setting of {cfg.env.name} and fixes array shapes"
    elif name in spec.param_fields:
        why = "it is a switch, not a number"
    else:
        why = f"{cfg.env.name} has no such EnvParams field"
    raise ConfigError(
        f"sweep.{key} cannot be swept: {why}; sweepable for {cfg.env.name}: {', '.join(allowed) or 'none'}"
    )


def _check_values(key: str, values: Any) -> list[float | int]:
    """The values of one key as a list of numbers; ConfigError for anything else."""
    if not isinstance(values, list | tuple):
        raise ConfigError(
            f"sweep.{key}={values} is invalid: a sweep takes a list of values in brackets, e.g. sweep.{key}=[a,b,c]"
        )
    if not values:
        raise ConfigError(f"sweep.{key}=[] is invalid: give at least one value")
    for v in values:
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(float32(v)):
            raise ConfigError(f"sweep.{key}={list(values)} is invalid: every value must be a finite number")
    return list(values)


def parse(cfg: TrainConfig) -> Sweep:
    """The run's `Sweep` from `cfg.sweep`; ConfigError (one line) naming a bad key, value or member."""
    flat = flatten(cfg.sweep or {})
    if not flat:
        return Sweep()
    grid = []
    for key, values in flat.items():
        _check_key(cfg, key)
        values = _check_values(key, values)
        if key.startswith("algo."):
            values = [float(v) for v in values]
        grid.append(values)
    keys = tuple(flat)
    members = tuple(dict(zip(keys, point, strict=True)) for point in itertools.product(*grid))
    return Sweep(keys, members)


def member_config(cfg: TrainConfig, sweep: Sweep, member: int) -> TrainConfig:
    """The config of one member as a run of its own: its values set, no sweep."""
    values = sweep.members[member]
    algo = {k.partition(".")[2]: v for k, v in values.items() if k.startswith("algo.")}
    env = {k.partition(".")[2]: v for k, v in values.items() if k.startswith("env.")}
    return dataclasses.replace(
        cfg,
        algo=dataclasses.replace(cfg.algo, **algo),
        env=dataclasses.replace(cfg.env, **env),
        sweep={},
    )


def member_env_params(cfg: TrainConfig, sweep: Sweep, env: Any, base: Any) -> tuple[Any, tuple[str, ...]]:
    """(env params of every entry of the seed axis (members * num_seeds, ...), the fields that differ
    among members), or (None, ()) when every member's envs start with `base`.

    Each member's own config sets them over `base` (the params of the built `env`), so settings derived
    from a swept one follow it (Snake's `shaping_gamma` is the learner's `gamma` unless set); a sweep
    sweeps EnvParams alone, so no env is built again.
    """
    import jax

    from jaxrl.config.environment import env_params
    from jaxrl.core.rollout import traced

    if not sweep.keys:  # no sweep: nothing to build
        return None, ()
    members = [env_params(member_config(cfg, sweep, m), env, base) for m in range(sweep.size)]
    base = traced(base)
    params = [traced(p, like=base) for p in members]
    names = [f.name for f in dataclasses.fields(base)]
    differ = tuple(n for n in names if any(not np.array_equal(getattr(p, n), getattr(base, n)) for p in params))
    if not differ:
        return None, ()
    stacked = jax.tree.map(lambda *xs: np.repeat(np.stack(xs), cfg.num_seeds, axis=0), *params)
    return stacked, differ
