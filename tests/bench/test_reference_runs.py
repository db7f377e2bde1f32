"""What a seed learns is pinned: short versions of the three reference runs must give these figures.

The reference runs (issue 12) are `env=snake total_timesteps=2e6 seed=3`, `env=snake algo=dqn
total_timesteps=1e6 seed=3` and `env=grid env.num_agents=4 total_timesteps=5e5 seed=3`; the
library's reshaping into a core, algorithms and a driver left their metrics rows identical
(bench/results/reference_runs.json). The figures below are those of the short versions after the
overhead work changed the random stream on purpose (rollout randomness drawn once per update,
minibatch shuffles by packed sorts), and after one-seed runs stopped being a vmap of size 1
(the grid's value losses moved in the fourth digit: XLA sums in another order). A change that
moves them changes what a seed learns: say so in its commit, and re-measure the README's
learning figures.

Floats depend on XLA's CPU code generation, which differs by CPU model: on a 2-core Intel Xeon
(AVX-512, AMX) the DQN run's second row counted 1297 episodes against 1296 here. So the pins are
keyed by what they depend on, the CPU model and jax's minor version they were taken with, and
elsewhere the test is skipped with that reason. To see whether a change moved what a seed learns on
any machine, compare two commits side by side there: `python -m bench.reference --against <commit>`.
These are slow tests (about 30 s).
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
from pathlib import Path

import jax
import pytest

import jaxrl
from jaxrl.bench.machine import cpu_signature
from jaxrl.bench.reference import RUNS as REFERENCE  # the settings: one home for the test and the command

ROOT = Path(__file__).resolve().parents[2]
PINNED_ON = "0.10."
PINNED_CPU = "AMD EPYC (family 25, model 17)"  # /proc/cpuinfo on the machine that took them
RUNS = {
    "snake_ppo": (
        REFERENCE["snake_ppo"],
        {
            "episodes": [2816, 2839, 2786],
            "episode_return": [-0.916903, -0.898204, -0.893754],
            "score": [0.0830966, 0.101796, 0.106246],
            "value_loss": [0.17421, 0.0815096, 0.0528646],
        },
    ),
    "snake_dqn": (
        REFERENCE["snake_dqn"],
        {
            "episodes": [2131, 1296, 298],
            "episode_return": [-0.914125, -0.905864, -0.489933],
            "score": [0.0858752, 0.0941358, 0.285235],
            "loss": [math.nan, 0.0926529, 0.0329711],
        },
    ),
    "grid_4_agents": (
        REFERENCE["grid_4_agents"],
        {
            "episodes": [0, 1024, 0, 1024, 0],
            "world_return": [math.nan, 2.125, math.nan, 2.60156, math.nan],
            "episode_return": [math.nan, 0.53125, math.nan, 0.650391, math.nan],
            "value_loss": [0.039121, 0.0286489, 0.0275364, 0.0286897, 0.0414926],
        },
    ),
}


CPU = cpu_signature()


# optimized: the figures were pinned on code compiled as users compile it (XLA's optimizations and fusion emitters)
@pytest.mark.optimized
@pytest.mark.slow
@pytest.mark.skipif(
    not jax.__version__.startswith(PINNED_ON) or jax.default_backend() != "cpu" or CPU != PINNED_CPU,
    reason=f"figures pinned on the {PINNED_CPU} CPU with jax {PINNED_ON}x "
    f"(this is jax {jax.__version__} on {jax.default_backend()}, CPU {CPU!r})",
)
@pytest.mark.parametrize("name", list(RUNS))
def test_short_reference_run_gives_the_pinned_figures(name, tmp_path):
    settings, pinned = RUNS[name]
    run = jaxrl.train(run_dir=tmp_path / "run", progress=False, **settings)
    with open(run.run_dir / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(pinned["episodes"])
    for key, values in pinned.items():
        got = [float(row[key]) for row in rows]
        if key == "episodes":
            assert got == values, key
        else:
            assert got == pytest.approx(values, rel=1e-4, nan_ok=True), key


# -- python -m bench.reference: two commits side by side on one machine ------------------------------


def test_first_difference_names_the_row_and_column_and_ignores_wall_clock():
    from jaxrl.bench.reference import first_difference

    rows = [{"env_steps": "10", "score": "0.5", "loss": "nan", "sps": "100"}]
    assert first_difference(rows, [{**rows[0], "sps": "90", "loss": "nan"}]) is None
    assert first_difference(rows, [{**rows[0], "score": "0.50001"}]) == "row 1, score: 0.5 vs 0.50001"
    assert first_difference(rows, rows * 2) == "1 rows vs 2"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--against", "no-such-commit"], "--against no-such-commit: not a commit of this repository"),
        (["--against", "HEAD", "--runs", "snake_ppo,nope"], "--runs nope is unknown: choose from snake_ppo"),
    ],
)
def test_reference_command_refuses_bad_input_in_one_line(args, message, capsys):
    from jaxrl.bench.reference import main

    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err


@pytest.mark.slow
def test_a_commit_against_itself_gives_the_same_rows(tmp_path):
    """HEAD trained in a git worktree and in this checkout, one after the other: the same bits on one machine
    (when the checkout has uncommitted changes to the hot path, this says whether they moved the rows)."""
    from jaxrl.bench.reference import main

    if subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "jaxrl", "envs"], cwd=ROOT, check=False).returncode:
        pytest.skip("jaxrl/ or envs/ has uncommitted changes: HEAD is not this checkout")
    out = tmp_path / "reference.json"
    assert main(["--against", "HEAD", "--runs", "snake_ppo", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["runs"]["snake_ppo"]["difference"] is None and len(result["runs"]["snake_ppo"]["ours"]) == 3
