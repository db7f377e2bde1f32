"""Every command of jaxrl, over one `main`: `python -m jaxrl.train | eval | rate | play | upgrade | pretrained |
battlesnake ...` (the modules of those names start the ones here).

A command is a module here with `USAGE` (its --help; or `usage(argv)`) and `run(argv) -> int`, which raises
the project's errors; `command(__name__)` makes its `main(argv=None)`. That `main` answers --help, prints
any error as one line, and sets the exit status: 0 done, 2 bad input (a setting, a file, a run that cannot
be read), 3 a non-finite loss or parameter, 4 outputs that could not be saved, 130 Ctrl-C.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import ModuleType

from jaxrl.errors import ConfigError, NonFiniteError, SaveError

HELP = ("-h", "--help", "help")


def run_command(module: ModuleType, argv: list[str] | None = None) -> int:
    """`module`'s command on `argv` (default: the process's arguments), every error one line on stderr."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in HELP for a in argv):
        print(module.usage(argv) if hasattr(module, "usage") else module.USAGE)
        return 0
    try:
        return int(module.run(argv))
    except NonFiniteError as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    except SaveError as e:
        print(f"error: {e}", file=sys.stderr)
        return 4
    except ConfigError as e:  # UsageError, CheckpointError, ShelfError, EpisodeError: one line each
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        said = f"{e.filename} cannot be used ({e.strerror or e})" if e.filename else str(e.strerror or e)
        print(f"error: {said}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nstopped", file=sys.stderr)
        return 130


def command(name: str) -> Callable[[list[str] | None], int]:
    """The `main(argv=None) -> int` of the command module `name` (a module passes its own `__name__`)."""

    def main(argv: list[str] | None = None) -> int:
        return run_command(sys.modules[name], argv)

    main.__doc__ = f"`python -m {name.replace('.cli', '')}`: see {name}.USAGE."
    return main
