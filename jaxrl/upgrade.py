"""`python -m jaxrl.upgrade`: the command in `jaxrl.cli.upgrade` (its --help says what it takes)."""

import sys

from jaxrl.cli.upgrade import main

if __name__ == "__main__":
    sys.exit(main())
