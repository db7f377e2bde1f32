"""Old import paths of modules and names that moved, kept for one release: each old module is the new one, and
each old name the new object, with a DeprecationWarning naming where it went."""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable
from typing import Any


def alias(old: str, new: str) -> None:
    """Make module `old` the module `new` (the same object), warning once that it moved."""
    warnings.warn(f"{old} moved to {new}; the old path goes in the next release", DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)


def names(old: str, moved: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for module `old` whose names in `moved` went to the modules given: the new object,
    with a warning."""

    def getattr_(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(
            f"{old}.{name} moved to {moved[name]}.{name}; the old path goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(moved[name]), name)

    return getattr_
