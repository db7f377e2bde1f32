"""`python -m jaxrl.battlesnake`: the command in `jaxrl.cli.battlesnake`."""

import sys

from jaxrl.cli.battlesnake import main

if __name__ == "__main__":
    sys.exit(main())
