"""Compose a run's config from the packaged Hydra configs and command-line overrides."""

from __future__ import annotations

import re
from typing import Any

from jaxrl.config.schema import ConfigError, TrainConfig

PRESETS = ("fast", "heavy", "beast")
DEFAULT_ENV = "snake"  # configs/config.yaml's env default


def _register(env_name: str) -> None:
    """Put the base schema, every algorithm's schema and this env's schema (and tuned defaults) in Hydra's store."""
    from hydra.core.config_store import ConfigStore

    from jaxrl import envs
    from jaxrl.config.registry import ALGORITHMS

    cs = ConfigStore.instance()
    cs.store(name="base_config", node=TrainConfig)
    for name, spec in ALGORITHMS.all().items():
        cs.store(group="algo", name=name, node=spec.config)
    spec = envs.spec(env_name)
    cs.store(group="env", name=env_name, node=spec.schema())
    packaged = _packaged_tuned()
    for algo, overrides in spec.tuned.items():
        if f"{algo}_{env_name}" not in packaged:  # a shipped tuned file wins over a registration's
            cs.store(group="tuned", name=f"{algo}_{env_name}", node=dict(overrides), package="_global_")


def _packaged(group: str) -> dict[str, Any]:
    """{name: file} of a packaged config group's yaml files (`tuned`, `preset`, `experiment`)."""
    from importlib.resources import files

    return {p.name[: -len(".yaml")]: p for p in files(f"jaxrl.configs.{group}").iterdir() if p.name.endswith(".yaml")}


def _packaged_tuned() -> set[str]:
    return set(_packaged("tuned"))


def experiments() -> list[str]:
    """Names of the shipped recipes (`experiment=NAME`)."""
    return sorted(_packaged("experiment"))


def experiment_groups(name: str) -> dict[str, str]:
    """The env and algo an experiment's defaults list picks (`override /env: snake`), by group."""
    from omegaconf import OmegaConf

    picks = {}
    for item in OmegaConf.create(_packaged("experiment")[name].read_text()).get("defaults", []):
        for key, value in item.items() if hasattr(item, "items") else []:
            group = str(key).removeprefix("override ").strip().lstrip("/")
            if group in ("env", "algo"):
                picks[group] = str(value)
    return picks


def env_schema(env_name: str) -> Any:
    """A default instance of the env group's schema (UsageError for an unknown or unbuildable env)."""
    from jaxrl import envs

    try:
        return envs.spec(env_name).schema()()
    except envs.registry.PluginError as e:
        raise UsageError(str(e)) from None
    except envs.UnknownEnvError:
        raise UsageError(f"unknown env '{env_name}'; valid: {', '.join(envs.registered_names())}") from None
    except ValueError as e:
        raise UsageError(f"env={env_name}: {e}") from None


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


class UsageError(ConfigError):
    """Bad command-line input; the message is one line."""


def integer_setting(key: str, value: Any, low: int) -> int:
    """A command-line `key=value` as an integer >= `low`; UsageError naming it otherwise."""
    try:
        number = int(value)
    except ValueError:
        raise UsageError(f"{key}={value} is invalid: must be an integer") from None
    if number < low:
        raise UsageError(f"{key}={number} is invalid: must be >= {low}")
    return number


def _sweep_override(item: str) -> str:
    """`sweep.algo.lr=[...]` as the override Hydra takes (`++`: the sweep dict takes new keys); UsageError for
    Hydra's own multirun syntax (`sweep.algo.lr=1,2`), which is not a sweep as one program."""
    key, _, value = item.partition("=")
    bare = key.lstrip("+~")
    if bare != "sweep" and not bare.startswith("sweep."):
        return item
    if bare == "sweep" or bare.count(".") != 2:
        raise UsageError(
            f"{item}: a sweep key is sweep.algo.<setting> or sweep.env.<field>, e.g. sweep.algo.lr=[1e-4,3e-4]"
        )
    text = value.strip()
    if "," in text and not text.startswith("["):
        raise UsageError(f"{item} is invalid: a sweep takes a list in brackets, e.g. {bare}=[{text}]")
    return f"++{bare}={value}"


def compose_config(overrides: list[str], values: dict[str, Any] | None = None) -> tuple[TrainConfig, Any]:
    """(typed, validated TrainConfig, resolved DictConfig) for command-line overrides, with `values` (a nested
    dict of Python values, the API's keywords) merged over the composed config; UsageError otherwise."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from jaxrl.config.registry import ALGORITHMS
    from jaxrl.config.schema import ConfigError
    from jaxrl.config.validate import validate

    for item in overrides:
        if "=" not in item:
            raise UsageError(f"bad argument '{item}': expected key=value (see `python -m jaxrl.train --help`)")
    overrides = [_sweep_override(item) for item in overrides]
    env_name = _group_choice(overrides, "env")
    algo = _group_choice(overrides, "algo")
    experiment = _group_choice(overrides, "experiment")
    if experiment is not None:
        if experiment not in experiments():
            raise UsageError(f"unknown experiment '{experiment}'; valid: {', '.join(experiments())}")
        picks = experiment_groups(experiment)
        for group, value in picks.items():
            given = env_name if group == "env" else algo
            if given is not None and given != value:
                raise UsageError(
                    f"experiment={experiment} is a recipe for {group}={value}; it cannot run with {group}={given}"
                )
        env_name, algo = env_name or picks.get("env"), algo or picks.get("algo")
    env_name = env_name or DEFAULT_ENV
    env_schema(env_name)
    if algo is not None and algo not in ALGORITHMS.all():
        raise UsageError(f"unknown algo '{algo}'; valid: {', '.join(ALGORITHMS.all())}")
    preset = _group_choice(overrides, "preset")
    if preset is not None and preset not in PRESETS:
        raise UsageError(f"unknown preset '{preset}'; valid: {', '.join(PRESETS)}")
    if preset is not None and (algo or "ppo") != "ppo":
        raise UsageError(f"preset={preset} sets PPO's rollout and minibatches; it does not apply to algo={algo}")
    _register(env_name)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module="jaxrl.configs", version_base=None):
            cfg = compose("config", overrides=overrides)
        if values:
            cfg = merge(cfg, values)
        typed = OmegaConf.to_object(cfg)
        validate(typed)
    except ConfigError as e:
        raise UsageError(str(e)) from None
    except Exception as e:  # noqa: BLE001  (Hydra and OmegaConf raise many types; all are bad input here)
        raise UsageError(_one_line(e)) from None
    return typed, cfg


RESUME_FIXED = ("env", "algo", "run_dir", "seed", "num_seeds", "overwrite")


def typed_saved(saved: Any) -> tuple[Any, TrainConfig]:
    """(DictConfig, typed config) of a saved resolved config (config.yaml's content) against this jaxrl's schema;
    whatever OmegaConf raises when it is not one."""
    from omegaconf import OmegaConf

    from jaxrl.config.registry import ALGORITHMS

    saved = OmegaConf.create(saved) if isinstance(saved, dict) else saved
    env_name, algo_name = str(saved.env.name), str(saved.algo.name)
    schema = OmegaConf.structured(TrainConfig(env=env_schema(env_name), algo=ALGORITHMS.get(algo_name).config()))
    base = OmegaConf.merge(schema, saved)
    return base, OmegaConf.to_object(base)


def resume_config(
    run_dir, overrides: list[str] | dict[str, Any], flag: str = "resume"
) -> tuple[TrainConfig, Any, TrainConfig]:
    """(typed config, resolved DictConfig, typed saved config) of a run to resume, with `overrides` applied.

    The run's `config.yaml` is the base; overrides may change anything that keeps the saved
    state valid (the caller also compares the state's shapes). UsageError on a missing or
    foreign directory and on bad overrides.
    """
    from pathlib import Path

    from omegaconf import OmegaConf

    from jaxrl.config.schema import ConfigError
    from jaxrl.config.validate import validate

    run_dir = Path(run_dir)
    values = None
    if isinstance(overrides, dict):  # the API's keywords, flat: {"algo.lr": 3e-4}
        values, overrides = overrides, [f"{k}={v}" for k, v in overrides.items()]
    if not run_dir.is_dir():
        raise UsageError(f"{flag}={run_dir}: no such directory")
    if not (run_dir / "config.yaml").is_file() or not (run_dir / "checkpoints").is_dir():
        raise UsageError(f"{flag}={run_dir} is not a jaxrl run directory (it needs config.yaml and checkpoints/)")
    for item in overrides:
        key, eq, _ = item.partition("=")
        if not eq:
            raise UsageError(f"bad argument '{item}': expected key=value (see `python -m jaxrl.train --help`)")
        if key.lstrip("+~") == "overwrite":
            raise UsageError(f"{item}: overwrite= starts a new run in a taken run_dir; resume= continues the run there")
        bare = key.lstrip("+~")
        if bare in RESUME_FIXED or bare.split(".")[0] == "sweep":
            kept = bare.split(".")[0] if bare.startswith("sweep") else key
            raise UsageError(f"{item}: a resumed run keeps its {kept}; start a new run to change it")
    from jaxrl.config.formats import FORMAT, FormatError, migrate_config, run_format

    try:
        found = run_format(run_dir, f"{flag}={run_dir}")
    except FormatError as e:
        raise UsageError(str(e)) from None
    try:
        saved = OmegaConf.load(run_dir / "config.yaml")
        if found != FORMAT:  # in memory: config.yaml stays as it is (python -m jaxrl.upgrade rewrites it)
            saved = OmegaConf.create(migrate_config(OmegaConf.to_container(saved), found))
        base, saved_typed = typed_saved(saved)
    except Exception as e:  # noqa: BLE001  (a damaged or foreign config.yaml)
        raise UsageError(f"{flag}={run_dir}: config.yaml is not a jaxrl run config ({_one_line(e)})") from None
    try:
        merged = (
            merge(base, nest(values))
            if values is not None
            else OmegaConf.merge(base, OmegaConf.from_dotlist(overrides))
        )
        typed = OmegaConf.to_object(merged)
        validate(typed)
    except ConfigError as e:
        raise UsageError(str(e)) from None
    except Exception as e:  # noqa: BLE001
        raise UsageError(f"bad override: {_one_line(e)}") from None
    return typed, merged, saved_typed


# -- the Python API's keywords ------------------------------------------------------------------

GROUPS = ("env", "algo", "preset", "experiment")  # keys whose string value picks a config group


def split_settings(settings: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """(group choices, flat settings) of keyword settings: `{"env": {"name": "grid", "num_agents": 4},
    "algo.lr": 3e-4}` -> `({"env": "grid"}, {"env.num_agents": 4, "algo.lr": 3e-4})`; values are checked and made
    plain (a Path is a string, a tuple a list); a curriculum given as text is read in the command line's grammar."""
    choices: dict[str, str] = {}
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if key in GROUPS and isinstance(value, str):
            choices[key] = value
        elif isinstance(value, dict) and key != "curriculum":
            nested = dict(value)
            if key in GROUPS and "name" in nested:
                choices[key] = str(nested.pop("name"))
            flat.update(split_settings({f"{key}.{k}": v for k, v in nested.items()})[1])
        elif key == "curriculum" and isinstance(value, str):
            flat[key] = _parse_value(key, value)
        else:
            flat[key] = plain(value)
    return choices, flat


def plain(value: Any) -> Any:
    """A keyword's value as a config holds it; ConfigError for a value no setting can take."""
    from pathlib import PurePath

    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    raise ConfigError(f"{value!r} cannot be a setting: use numbers, strings, booleans, lists or dicts")


def nest(flat: dict[str, Any]) -> dict[str, Any]:
    """`{"algo.lr": 3e-4, "num_envs": 8}` -> `{"algo": {"lr": 3e-4}, "num_envs": 8}`."""
    tree: dict[str, Any] = {}
    for key, value in flat.items():
        *path, last = key.split(".")
        node = tree
        for part in path:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise UsageError(f"{key}: '{part}' is a setting, not a group of settings")
        if isinstance(value, dict) and isinstance(node.get(last), dict):
            node[last] = {**node[last], **value}
        else:
            node[last] = value
    return tree


def merge(cfg: Any, values: dict[str, Any]) -> Any:
    """`cfg` with the nested `values` merged over it, checked against the schema; UsageError (one line) naming
    the first unknown key or ill-typed value."""
    from omegaconf import OmegaConf, open_dict
    from omegaconf.errors import ConfigKeyError, OmegaConfBaseException

    try:
        if "sweep" in values and "sweep" in cfg:
            with open_dict(cfg.sweep):  # the sweep dict takes new keys (the command line's `++sweep.`)
                return OmegaConf.merge(cfg, values)
        return OmegaConf.merge(cfg, values)
    except ConfigKeyError as e:
        raise UsageError(f"unknown setting '{e.full_key}' (misspelt key? see `python -m jaxrl.train --help`)") from None
    except OmegaConfBaseException as e:
        text = (str(e.msg).strip().splitlines() or [type(e).__name__])[0]
        raise UsageError(f"bad override '{e.full_key}={_shown(getattr(e, 'value', None))}': {text}") from None


def _shown(value: Any) -> str:
    """A value as the command line writes it (`x`, `1e-3`, `[1,2]`)."""
    from omegaconf import OmegaConf

    if OmegaConf.is_config(value):
        value = OmegaConf.to_container(value)
    return str(value).replace(" ", "") if not isinstance(value, str) else value


def _parse_value(key: str, text: str) -> Any:
    """A value written in the command line's grammar (`[{steps:5e6,hunger_limit:30},{}]`) as Python values."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        return plain(OverridesParser.create().parse_override(f"{key}={text}").value())
    except Exception as e:  # noqa: BLE001  (the parser raises its own types)
        raise UsageError(f"bad value {key}={text}: {_one_line(e)}") from None


def settings_config(settings: dict[str, Any]) -> tuple[TrainConfig, Any]:
    """(typed, validated TrainConfig, resolved DictConfig) of the API's keyword settings: group choices pick the
    packaged defaults (Hydra composes them), then the values are merged over them as Python values."""
    choices, flat = split_settings(settings)
    for key, value in flat.items():
        if key.startswith("sweep"):
            _sweep_override(f"{key}={value}")  # a sweep key's shape, as on the command line
    return compose_config([f"{group}={name}" for group, name in choices.items()], nest(flat))
