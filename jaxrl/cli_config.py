"""Compose a run's config from the packaged Hydra configs and command-line overrides."""

from __future__ import annotations

import re
from typing import Any

from jaxrl.config import DQNConfig, EnvConfig, PPOConfig, SnakeEnvConfig, TrainConfig, validate

ALGOS = {"ppo": PPOConfig, "dqn": DQNConfig}
ENV_SCHEMAS = {"snake": SnakeEnvConfig}


def _register(env_names: list[str]) -> None:
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    cs.store(name="base_config", node=TrainConfig)
    for name, schema in ALGOS.items():
        cs.store(group="algo", name=name, node=schema)
    for name in env_names:
        node = ENV_SCHEMAS[name]() if name in ENV_SCHEMAS else EnvConfig(name=name)
        cs.store(group="env", name=name, node=node)


def _group_choice(overrides: list[str], group: str) -> str | None:
    for item in overrides:
        key, _, value = item.partition("=")
        if key.lstrip("+~") == group:
            return value
    return None


def _one_line(error: Exception) -> str:
    """Hydra/OmegaConf errors as one line naming the bad key or value."""
    cause = error.__cause__ or error
    text = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    outer = str(error).strip().splitlines()[0]
    m = re.match(r"Could not override '([^']+)'", outer)
    if m:
        return f"unknown setting '{m.group(1)}' (misspelt key? see `python -m jaxrl.train --help`)"
    m = re.match(r"Error merging override (.+)", outer)
    if m:
        return f"bad override '{m.group(1)}': {text}"
    if "Could not find" in outer or "In 'config'" in outer:
        return outer
    return f"{outer}{': ' + text if text != outer else ''}"


class UsageError(ValueError):
    """Bad command-line input; the message is one line."""


def compose_config(overrides: list[str]) -> tuple[TrainConfig, Any]:
    """(typed, validated TrainConfig, resolved DictConfig) for these overrides; UsageError otherwise."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    import envs
    from jaxrl.config import ConfigError

    names = envs.registered_names()
    env_name = _group_choice(overrides, "env")
    if env_name is not None and env_name not in names:
        raise UsageError(f"unknown env '{env_name}'; valid: {', '.join(names)}")
    algo = _group_choice(overrides, "algo")
    if algo is not None and algo not in ALGOS:
        raise UsageError(f"unknown algo '{algo}'; valid: {', '.join(ALGOS)}")
    for item in overrides:
        if "=" not in item:
            raise UsageError(f"bad argument '{item}': expected key=value (see `python -m jaxrl.train --help`)")
    _register(names)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module="jaxrl.configs", version_base=None):
            cfg = compose("config", overrides=overrides)
        typed = OmegaConf.to_object(cfg)
        validate(typed)
    except ConfigError as e:
        raise UsageError(str(e)) from None
    except Exception as e:  # noqa: BLE001  (Hydra and OmegaConf raise many types; all are bad input here)
        raise UsageError(_one_line(e)) from None
    return typed, cfg
