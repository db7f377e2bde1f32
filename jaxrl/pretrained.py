"""Trained agents that ship with jaxrl (`jaxrl.trained.shelf`): `jaxrl.pretrained("snake-v1")` is a `Run` of one,
and `python -m jaxrl.pretrained list` prints the shelf with each agent's measured figures. Anywhere a run
directory goes, `pretrained:NAME` does too (eval, `vs=`, `env.bot_policy=`, `opponents=`, rate)."""

from __future__ import annotations

import sys
import types

from jaxrl.api import PretrainedRun, pretrained


class _CallableModule(types.ModuleType):
    """`jaxrl.pretrained("snake-v1")`: this module, called, is `pretrained` (the CLI keeps its module name)."""

    def __call__(self, name: str) -> PretrainedRun:
        return pretrained(name)


sys.modules[__name__].__class__ = _CallableModule


if __name__ == "__main__":
    from jaxrl.cli.pretrained import main

    sys.exit(main())
