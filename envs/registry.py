"""One descriptor per env: `register(name, factory)` is the whole registration.

From the factory alone the library derives what it needs of an env:
- its constructor settings (the factory's keyword arguments): they fix array shapes, so they
  are compiled in and cannot change between curriculum phases or on resume (`shape_keys`);
- its `EnvParams` fields with their defaults: traced values, settable from the command line
  (`env.<field>=...`) and per curriculum phase (`param_fields`);
- its value checks (`check_params`, when the env has one);
- the command line's schema for the `env` group (`schema()`), and tuned defaults per
  algorithm (`tuned`), beside the packaged `configs/tuned/<algo>_<env>.yaml` files.

Every gymnax id is registered the same way, through `gymnax.make`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
from collections.abc import Callable, Mapping
from typing import Any, Optional

import gymnax

from jaxrl.envs.base import hook
from jaxrl.envs.checks import INT32_MAX, finite32


class UnknownEnvError(ValueError):
    """An env name that is neither registered nor a gymnax id."""


class PluginError(UnknownEnvError):
    """A module of $JAXRL_ENVS or a `jaxrl.envs` entry point that fails to load: one line naming it."""


class EnvSettingError(ValueError):
    """An env setting out of range; the message is "name=value is invalid: must be ..."."""


SETTABLE = (bool, int, float, str)  # value types a command line can set


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """A registered env: its name, how to build it, and tuned run defaults per algorithm."""

    name: str
    factory: Callable[..., Any]  # keyword settings -> env (a gymnax Environment), or (env, env_params)
    tuned: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)  # algo -> config overrides
    version: int = 1  # raised when the rules or observations change: `snake-v2` (a run names the one it trained on)

    @property
    def label(self) -> str:
        return f"{self.name}-v{self.version}"

    def build(self, **settings: Any) -> tuple[Any, Any]:
        """(env, default env_params) for these constructor settings; ValueError when it cannot be built."""
        try:
            made = self.factory(**settings)
        except ValueError:
            raise
        except Exception as e:  # noqa: BLE001  (e.g. a gymnax env that downloads data, offline)
            reason = (str(e).strip().splitlines() or [""])[0][:200]
            raise ValueError(f"{self.name} could not be built ({type(e).__name__}: {reason})") from None
        env, params = made if isinstance(made, tuple) else (made, made.default_params)
        return env, params

    @functools.cached_property
    def _defaults(self) -> tuple[Any, Any]:
        return self.build()

    @functools.cached_property
    def shape_keys(self) -> dict[str, Any]:
        """Constructor settings and their defaults: compiled in, they fix array shapes."""
        target = type(self._defaults[0]) if _is_gymnax(self.factory) else self.factory
        keys = {}
        for p in inspect.signature(target).parameters.values():
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is not p.empty:
                keys[p.name] = p.default
        return keys

    @functools.cached_property
    def param_fields(self) -> dict[str, Any]:
        """`EnvParams` fields a config can set, with the defaults of the default env (traced values)."""
        params = self._defaults[1]
        values = {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}
        return {k: v for k, v in values.items() if isinstance(v, SETTABLE) and k not in self.shape_keys}

    def schema(self) -> type:
        """The `env` config group's dataclass: name, constructor settings (with their defaults), and every
        EnvParams field as optional (None keeps the env's own default, which may depend on the settings).
        One class per descriptor, so configs built from it compare equal."""
        return self._schema

    @functools.cached_property
    def _schema(self) -> type:
        fields: list[tuple[str, Any, Any]] = [("name", str, dataclasses.field(default=self.name))]
        for key, default in self.shape_keys.items():
            fields.append((key, Optional[_type_of(default)], dataclasses.field(default=default)))  # noqa: UP045
        for key, default in self.param_fields.items():
            fields.append((key, Optional[_type_of(default)], dataclasses.field(default=None)))  # noqa: UP045
        title = "".join(c for c in self.name.title() if c.isalnum()) + "EnvConfig"
        return dataclasses.make_dataclass(title, fields, namespace={"__doc__": f"Settings of the {self.name} env."})

    def make(self, **settings: Any) -> tuple[Any, Any]:
        """(env, env_params) with constructor settings and EnvParams overrides (None: the default) applied
        and checked: ValueError from the constructor, EnvSettingError for a parameter out of range."""
        env, params = self.build(**{k: v for k, v in settings.items() if k in self.shape_keys})
        return env, self.with_params(env, params, **settings)

    def with_params(self, env: Any, params: Any, **settings: Any) -> Any:
        """`params` of a built `env` with the EnvParams settings among `settings` (None: keep) applied and
        checked; constructor settings are skipped (they fixed `env`). No env is built."""
        overrides = {k: v for k, v in settings.items() if k not in self.shape_keys and v is not None}
        unknown = [k for k in overrides if not hasattr(params, k)]
        if unknown:
            raise EnvSettingError(f"{unknown[0]} is not a parameter of {self.name}")
        params = params.replace(**overrides)
        self.check(env, params)
        return params

    @staticmethod
    def check(env: Any, params: Any) -> None:
        """EnvSettingError naming the first parameter out of range: the env's `check_params` hook, then for
        every env the rules any traced parameter obeys (see `check_numbers`)."""
        try:
            hook(env, "check_params")(params)
            check_numbers(params)
        except ValueError as e:
            raise EnvSettingError(str(e)) from None


def check_numbers(params: Any) -> None:
    """ValueError for a parameter no env can run with: a float that is not a finite float32, an
    integer beyond int32, or a `max_steps_in_episode` below 1 (they are float32 and int32 inside the step)."""
    for f in dataclasses.fields(params):
        value = getattr(params, f.name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if isinstance(value, float) and not finite32(value):
            raise ValueError(f"{f.name}={value!r} is invalid: must be a finite float32")
        if isinstance(value, int) and abs(value) > INT32_MAX:
            raise ValueError(f"{f.name}={value!r} is invalid: must be at most {INT32_MAX} in size")
        if f.name == "max_steps_in_episode" and value < 1:
            raise ValueError(f"{f.name}={value!r} is invalid: must be an integer from 1 to {INT32_MAX}")


def _type_of(value: Any) -> type:
    return bool if isinstance(value, bool) else type(value) if isinstance(value, SETTABLE) else Any


def _is_gymnax(factory: Callable[..., Any]) -> bool:
    return isinstance(factory, functools.partial) and factory.func is gymnax.make


_ENVS: dict[str, EnvSpec] = {}  # registered, in registration order
_GYMNAX: dict[str, EnvSpec] = {}  # gymnax ids described on first use


def register(
    name: str,
    factory: Callable[..., Any],
    tuned: Mapping[str, Mapping[str, Any]] | None = None,
    version: int = 1,
) -> EnvSpec:
    """Register an env under `name` for `make`, `python -m jaxrl.train env=<name>` and `jaxrl.train(env=...)`.

    `factory(**settings)` returns a gymnax `Environment` (or `(env, env_params)`); its keyword
    arguments become the env's constructor settings. `tuned` maps an algorithm name to config
    overrides used as that pair's defaults (`{"ppo": {"num_envs": 256, "algo": {"lr": 3e-4}}}`).
    `version` goes up by one whenever the env's rules or observations change (a run and a trained
    agent name the version they played; another version refuses them in one line).
    """
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"version={version!r} is invalid: an integer from 1")
    if not isinstance(name, str) or not name or any(c in name for c in "=,[]{}' \""):
        raise ValueError(f"env name {name!r} is invalid: a non-empty string without spaces, quotes, = , [ ] {{ }}")
    found = EnvSpec(name, factory, types.MappingProxyType(dict(tuned or {})), version)
    _ENVS[name] = found
    return found


PLUGINS = "JAXRL_ENVS"  # modules (comma-separated) that register envs, imported before a name is looked up
ENTRY_POINTS = "jaxrl.envs"  # an installed package's entry points in this group: loading one registers its envs
_plugins_loaded = False
_plugin_error: PluginError | None = None  # the first plugin that failed: said again on every later look-up


def load_plugins() -> None:
    """Import the env modules named in $JAXRL_ENVS and load the `jaxrl.envs` entry points, once per process,
    so that every command (train, eval, rate, play) knows a user's envs. PluginError, one line, for a
    module that cannot be imported."""
    global _plugins_loaded, _plugin_error
    if _plugin_error is not None:
        raise _plugin_error
    if _plugins_loaded:
        return
    _plugins_loaded = True
    import importlib
    import importlib.metadata
    import os

    for module in filter(None, (m.strip() for m in os.environ.get(PLUGINS, "").split(","))):
        try:
            importlib.import_module(module)
        except Exception as e:  # noqa: BLE001  (a user's module: whatever it raises is said in one line)
            _plugin_error = PluginError(f"{PLUGINS}={module} cannot be imported ({_reason(e)})")
            raise _plugin_error from None
    for entry in importlib.metadata.entry_points(group=ENTRY_POINTS):
        try:
            loaded = entry.load()
            if callable(loaded) and not isinstance(loaded, type):
                loaded()
        except Exception as e:  # noqa: BLE001
            _plugin_error = PluginError(f"entry point {entry.name} ({entry.value}) failed: {_reason(e)}")
            raise _plugin_error from None


def _reason(e: Exception) -> str:
    return f"{type(e).__name__}: " + (str(e).strip().splitlines() or [""])[0][:160]


def registered_names() -> list[str]:
    """Registered names (ours first, in registration order), then every other gymnax id."""
    load_plugins()
    return list(_ENVS) + [n for n in gymnax.registered_envs if n not in _ENVS]


def spec(name: str) -> EnvSpec:
    """The descriptor of `name` (gymnax ids are described on first use); UnknownEnvError otherwise."""
    if name in _ENVS:
        return _ENVS[name]
    load_plugins()
    if name in _ENVS:
        return _ENVS[name]
    if name in gymnax.registered_envs:
        return _GYMNAX.setdefault(name, EnvSpec(name, functools.partial(gymnax.make, name)))
    raise UnknownEnvError(f"unknown env {name!r}; valid names: {', '.join(registered_names())}")


def make(name: str, **kwargs: Any) -> tuple[Any, Any]:
    """Build `(env, env_params)` for a registered env or any gymnax id (constructor settings as kwargs)."""
    return spec(name).build(**kwargs)
