"""The main command's learning check: `python -m jaxrl.train env=snake` (seed 0), as shipped, gets off the
17-apple plateau. Its bars and the draws they stand on: jaxrl.bench.checks and docs/snake.md."""

import pytest

from jaxrl.bench import checks


@pytest.mark.optimized
def test_the_default_snake_run_gets_off_the_plateau():
    checks.run_test_draw("snake_default")  # the final training score and the greedy score over 100 episodes
