"""The main command's learning check: `python -m jaxrl.train env=snake` (seed 0), as shipped, leaves the 17-apple
plateau behind: a final training score of 30 or more and a greedy score of 40 or more. Its bars and the draws
they stand on: jaxrl.bench.checks and docs/reliability.md."""

import pytest

from jaxrl.bench import checks


@pytest.mark.optimized
def test_the_default_snake_run_learns_as_its_draws_did():
    checks.run_test_draw("snake_default")  # the final training score and the greedy score over 100 episodes
