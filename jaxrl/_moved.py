"""The one list of old import paths a user could have (from the docs or a notebook), each the new module itself
for one more release, with a DeprecationWarning naming where it went and the version that drops it. Nothing
else keeps an old name: the modules no release or page named moved without one."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from typing import Any

# old module -> (new module, the version that drops the old path)
MOVED = {
    "jaxrl.run.build": ("jaxrl.build", "0.3.0"),  # docs/command-line.md, notebooks/throughput.ipynb up to 0.2.0
    "jaxrl.opponents.headtohead": ("jaxrl.trained.headtohead", "0.3.0"),  # notebooks/arena.ipynb up to 0.2.0
    "jaxrl.opponents.rating": ("jaxrl.trained.rating", "0.3.0"),  # notebooks/arena.ipynb up to 0.2.0
    "jaxrl.opponents": ("jaxrl.trained", "0.3.0"),  # the package of the two above
}


class _Loader(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: Any) -> Any:
        module = importlib.import_module(self.new)
        self.spec = module.__spec__  # the import system sets the old name's spec on it next: put this one back
        return module

    def exec_module(self, module: Any) -> None:
        module.__spec__ = self.spec  # the new module, already imported, keeps its own spec (reload, resources)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds each old path of MOVED as its new module, warning once per import."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in MOVED:
            return None
        new, drop = MOVED[name]
        warnings.warn(f"{name} moved to {new}; the old path goes in jaxrl {drop}", DeprecationWarning, stacklevel=2)
        return importlib.util.spec_from_loader(name, _Loader(new))


def install() -> None:
    """Put the finder on `sys.meta_path` (once)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())  # before the path finder, which would load a second copy
