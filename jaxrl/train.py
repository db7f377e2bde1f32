"""`python -m jaxrl.train`: the command in `jaxrl.cli.train`. This module is also callable:
`jaxrl.train(env="snake", ...)` is `jaxrl.api.train` (the package's `train` attribute becomes this module once
anything imports `jaxrl.train`, so the module itself forwards calls)."""

import sys
import types
from typing import Any

from jaxrl.cli.train import main


class _CallableModule(types.ModuleType):
    """`jaxrl.train(...)` works whether `jaxrl.train` resolves to this module or to the API function."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from jaxrl.api import train

        return train(*args, **kwargs)


if __name__ == "__main__":
    sys.exit(main())
else:
    sys.modules[__name__].__class__ = _CallableModule
