"""The registries a config names entries of: `algo=` (algorithms) and `logger=` (loggers).

They sit here, on the config's floor, so that composing and validating a config can read them without
importing the floors above (jaxrl/algos, jaxrl/run). An entry registers itself from its own module; the
built-in entries are found by module name the first time a registry is read (importlib, the way entry
points find plugins), so a registry names where its built-ins live and never uses their code.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any


class Registry:
    """Entries by name, in the order they registered (or `first`, then the rest by name); `builtins` (module
    or package names) are imported once, on the first read, so that the entries they register are there."""

    def __init__(self, what: str, builtins: tuple[str, ...], first: str = "") -> None:
        self.what = what  # the config key, for messages: "algo", "logger"
        self.builtins = builtins
        self.first = first
        self._entries: dict[str, Any] = {}
        self._loaded = False

    def add(self, name: str, entry: Any) -> None:
        self._entries[name] = entry

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for name in self.builtins:
            module = importlib.import_module(name)
            for child in pkgutil.iter_modules(getattr(module, "__path__", [])):  # a package: each of its modules
                importlib.import_module(f"{name}.{child.name}")

    def all(self) -> dict[str, Any]:
        """Every entry by name."""
        self._load()
        if not self.first:
            return dict(self._entries)
        return dict(sorted(self._entries.items(), key=lambda kv: (kv[0] != self.first, kv[0])))

    def get(self, name: str) -> Any:
        """The entry registered as `name`; KeyError naming the valid ones otherwise."""
        found = self.all().get(name)
        if found is None:
            raise KeyError(f"unknown {self.what} '{name}'; valid: {', '.join(self.all())}")
        return found


ALGORITHMS = Registry("algo", ("jaxrl.algos",), first="ppo")
LOGGERS = Registry("logger", ("jaxrl.run.loggers",))
