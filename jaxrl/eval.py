"""`python -m jaxrl.eval`: the command in `jaxrl.cli.eval` (its --help says what it takes)."""

import sys

from jaxrl.cli.eval import main

if __name__ == "__main__":
    sys.exit(main())
