"""Old import paths of modules that moved, kept for one release: each old module is the new one, with a
DeprecationWarning naming where it went."""

from __future__ import annotations

import importlib
import sys
import warnings


def alias(old: str, new: str) -> None:
    """Make module `old` the module `new` (the same object), warning once that it moved."""
    warnings.warn(f"{old} moved to {new}; the old path goes in the next release", DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)
