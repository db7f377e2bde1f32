"""`python -m jaxrl.export`: the command in `jaxrl.cli.export` (its --help says what it takes)."""

import sys

from jaxrl.cli.export import main

if __name__ == "__main__":
    sys.exit(main())
