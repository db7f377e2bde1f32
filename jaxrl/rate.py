"""`python -m jaxrl.rate`: the command in `jaxrl.cli.rate` (its --help says what it takes)."""

import sys

from jaxrl.cli.rate import main

if __name__ == "__main__":
    sys.exit(main())
