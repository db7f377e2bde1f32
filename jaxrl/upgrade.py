"""`python -m jaxrl.upgrade RUN_DIR`: write a run of an earlier run format again in this jaxrl's format,
beside the old files, never over them (`jaxrl.run.upgrade`). Loading a run without upgrading it migrates
it in memory and changes nothing on disk; a resume upgrades it first."""

from __future__ import annotations

import os
import sys

from jaxrl.config.schema import ConfigError

USAGE = """usage: python -m jaxrl.upgrade RUN_DIR

  RUN_DIR    a run directory written by python -m jaxrl.train, of any run format this jaxrl migrates

Each checkpoint of an earlier format is loaded through its migrations and written again in this
format; the old ones stay beside them as checkpoints/<step>.format-<N>, and config.yaml as
config.format-<N>.yaml. A run already of this format is left as it is.
"""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help", "help") for a in argv):
        print(USAGE)
        return 0
    if len(argv) != 1 or "=" in argv[0] and not argv[0].startswith("run_dir="):
        shown = " ".join(argv) or "nothing"
        print(f"error: expected one RUN_DIR, got {shown} (python -m jaxrl.upgrade --help)", file=sys.stderr)
        return 2
    from jaxrl.run.upgrade import upgrade_run

    try:
        upgrade_run(argv[0].removeprefix("run_dir="))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
