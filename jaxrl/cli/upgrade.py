"""`python -m jaxrl.upgrade RUN_DIR`: write a run of an earlier run format again in this jaxrl's format,
beside the old files, never over them (`jaxrl.trained.upgrade`). Loading a run without upgrading it migrates
it in memory and changes nothing on disk; a resume upgrades it first."""

from __future__ import annotations

from jaxrl.cli import command
from jaxrl.config.compose import UsageError

USAGE = """usage: python -m jaxrl.upgrade RUN_DIR

  RUN_DIR    a run directory written by python -m jaxrl.train, of any run format this jaxrl migrates

Each checkpoint of an earlier format is loaded through its migrations and written again in this
format; the old ones stay beside them as checkpoints/<step>.format-<N>, and config.yaml as
config.format-<N>.yaml. A run already of this format is left as it is.
"""


def run(argv: list[str]) -> int:
    if len(argv) != 1 or "=" in argv[0] and not argv[0].startswith("run_dir="):
        shown = " ".join(argv) or "nothing"
        raise UsageError(f"expected one RUN_DIR, got {shown} (python -m jaxrl.upgrade --help)")
    from jaxrl.trained.upgrade import upgrade_run

    upgrade_run(argv[0].removeprefix("run_dir="))
    return 0


main = command(__name__)
