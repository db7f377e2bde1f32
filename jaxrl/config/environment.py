"""The env a run config names: its settings, built (`make_env`) or applied to params of one already built,
each refusal of the env's a `ConfigError` of one line naming the env setting. `cfg` is a
`jaxrl.config.schema.TrainConfig`, not imported: the schema keeps these names' old paths for a release."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

from jaxrl.errors import ConfigError


def env_settings(cfg: Any) -> dict[str, Any]:
    """The env group's settings but its name (constructor arguments and EnvParams overrides).

    An env with potential-based shaping (`shaping_gamma`, e.g. Snake) gets the learner's `algo.gamma`
    there unless the config sets it: with the same discount the shaping leaves the best policy unchanged.
    """
    settings = {f.name: getattr(cfg.env, f.name) for f in dataclasses.fields(cfg.env) if f.name != "name"}
    if "shaping_gamma" in settings and settings["shaping_gamma"] is None:
        settings["shaping_gamma"] = float(cfg.algo.gamma)
    return settings


def make_env(cfg: Any) -> tuple[Any, Any]:
    """(env, env_params) the config names, with its settings applied and checked; ConfigError otherwise."""
    from jaxrl import envs

    with _env_errors():
        return envs.spec(cfg.env.name).make(**env_settings(cfg))


def env_params(cfg: Any, env: Any, params: Any) -> Any:
    """The env params `cfg` sets over `params` of an env already built with cfg's constructor settings (a
    sweep member's); ConfigError otherwise. No env is built."""
    from jaxrl import envs

    with _env_errors():
        return envs.spec(cfg.env.name).with_params(env, params, **env_settings(cfg))


@contextlib.contextmanager
def _env_errors() -> Any:
    """An env's ValueError as ConfigError, one line naming the env setting."""
    from jaxrl import envs

    try:
        yield
    except envs.EnvSettingError as e:  # "name=value is invalid: must be ..."
        raise ConfigError(f"env.{e}") from None
    except ValueError as e:  # an unknown name, or a constructor refusing a setting
        raise ConfigError(f"env: {e}") from None
