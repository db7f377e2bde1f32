"""`python -m jaxrl.play`: the command in `jaxrl.cli.play`."""

import sys

from jaxrl.cli.play import main

if __name__ == "__main__":
    sys.exit(main())
