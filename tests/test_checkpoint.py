"""Checkpoints and resume: bit-identical after SIGKILL, fallback past a damaged checkpoint, Ctrl-C, bad input."""

import csv
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

ROOT = Path(__file__).resolve().parents[1]

RUNS = {
    "ppo": ["env=CartPole-v1", "algo=ppo", "num_envs=4", "algo.num_steps=64", "total_timesteps=20480"],
    "dqn": [
        "env=CartPole-v1",
        "algo=dqn",
        "total_timesteps=8000",
        "algo.learning_starts=1000",
        "algo.buffer_size=2000",
    ],
}


# The Python API with a fault-injection hook: SIGKILL after that many chunks (argv: chunks, then key=value ...).
KILLED_RUN = """
import sys
import jaxrl
from jaxrl.hooks import KillAfterChunks
settings = dict(arg.split("=", 1) for arg in sys.argv[2:])
jaxrl.train(**settings, hooks=[KillAfterChunks(int(sys.argv[1]))])
"""


def train(*args: str, kill_after: int | None = None, check: bool = True) -> subprocess.CompletedProcess:
    command = ["-m", "jaxrl.train"] if kill_after is None else ["-c", KILLED_RUN, str(kill_after)]
    proc = subprocess.run(
        [sys.executable, *command, *args],
        check=False,
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if check:
        assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def steps(run_dir: Path) -> list[int]:
    return sorted(int(p.name) for p in (run_dir / "checkpoints").iterdir() if p.name.isdigit())


def state(run_dir: Path, step: int | None = None) -> list[np.ndarray]:
    manager = ocp.CheckpointManager((run_dir / "checkpoints").absolute())
    step = manager.latest_step() if step is None else step
    restored = manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore()))
    manager.close()
    return [np.asarray(x) for x in jax.tree.leaves(restored["state"])]


def assert_same_state(a: Path, b: Path) -> None:
    left, right = state(a), state(b)
    assert len(left) == len(right) > 0
    for x, y in zip(left, right, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.fixture(scope="module", params=["ppo", "dqn"])
def reference(request, tmp_path_factory):
    """An uninterrupted run checkpointed every chunk: (algo, its settings, run dir)."""
    run_dir = tmp_path_factory.mktemp(request.param) / "reference"
    settings = [*RUNS[request.param], "num_chunks=8", "checkpoint.every_steps=1", "checkpoint.keep=8"]
    train(*settings, f"run_dir={run_dir}")
    return request.param, settings, run_dir


def test_sigkilled_run_resumes_bit_identical(reference, tmp_path):
    _, settings, ref_dir = reference
    run_dir = tmp_path / "killed"
    killed = train(*settings, f"run_dir={run_dir}", kill_after=3, check=False)
    assert killed.returncode == -signal.SIGKILL
    assert steps(run_dir)[-1] < steps(ref_dir)[-1]  # it really stopped early
    resumed = train(f"resume={run_dir}")
    assert "resumed from" in resumed.stdout
    assert_same_state(run_dir, ref_dir)
    with open(run_dir / "metrics.csv") as f, open(ref_dir / "metrics.csv") as g:
        ours, theirs = list(csv.DictReader(f)), list(csv.DictReader(g))
    assert [r["env_steps"] for r in ours] == [r["env_steps"] for r in theirs]  # no row lost or doubled
    assert [r["episode_return"] for r in ours] == [r["episode_return"] for r in theirs]


def test_damaged_latest_checkpoint_falls_back_to_the_previous(reference, tmp_path):
    _, _, ref_dir = reference
    run_dir = tmp_path / "damaged"
    shutil.copytree(ref_dir, run_dir)
    latest = steps(run_dir)[-1]
    for path in (run_dir / "checkpoints" / str(latest) / "state").rglob("*"):
        if path.is_file() and path.parent.name == "d":  # the array data files
            path.write_bytes(b"garbage")
    resumed = train(f"resume={run_dir}")
    assert f"checkpoint {run_dir / 'checkpoints' / str(latest)} is unreadable" in resumed.stderr
    assert f"resumed from {run_dir / 'checkpoints' / str(steps(ref_dir)[-2])}" in resumed.stdout
    assert_same_state(run_dir, ref_dir)  # the last chunk ran again and rewrote the damaged checkpoint


@pytest.mark.parametrize(
    "args, message",
    [
        (["resume={missing}"], "no such directory"),
        (["resume={foreign}"], "is not a jaxrl run directory"),
        (["resume={run}", "num_envs=20"], "would change the shapes of the saved training state"),
        (["resume={run}", "env=snake"], "a resumed run keeps its env"),
        (["resume={run}", "algo.no_such_key=1"], "no_such_key"),
    ],
)
def test_bad_resume_is_one_line_and_loses_nothing(reference, tmp_path, args, message):
    _, _, ref_dir = reference
    run = tmp_path / "run"
    shutil.copytree(ref_dir, run)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("not a run")
    before = sorted((p.relative_to(run), p.stat().st_size) for p in run.rglob("*"))
    formatted = [a.format(missing=tmp_path / "nope", foreign=foreign, run=run) for a in args]
    proc = train(*formatted, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], proc.stderr
    assert sorted((p.relative_to(run), p.stat().st_size) for p in run.rglob("*")) == before
    assert sorted(os.listdir(foreign)) == ["notes.txt"]


def test_ctrl_c_saves_once_and_exits_cleanly(tmp_path):
    run_dir = tmp_path / "interrupted"
    args = [*RUNS["ppo"], "total_timesteps=5e6", "num_chunks=500", f"run_dir={run_dir}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "jaxrl.train", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in proc.stdout:
        if line.startswith("steps "):  # training has started
            proc.send_signal(signal.SIGINT)
            break
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err
    saved = steps(run_dir)
    assert len(saved) == 1 and saved[0] < 5e6
    assert f"checkpoint: {run_dir / 'checkpoints' / str(saved[0])}" in out
    assert f"resume: python -m jaxrl.train resume={run_dir}" in out
