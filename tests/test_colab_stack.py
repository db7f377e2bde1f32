"""jaxrl on Colab's stack: a fresh venv gets a plain (non-editable) `pip install .[notebooks,gymnasium]`
under Colab's pins (tests/colab_pins.txt), then runs the default tier of the fast test files and every
notebook top to bottom there (the only place CI runs the notebooks: they are meant for Colab), and the
CLI both from the repository root (where ./jaxrl shadows the install) and from another folder.

The venv is built by uv when it is on PATH (the [test] extra installs it: about 3 s from its cache,
where pip took 40 s on a quiet 2-core AMD EPYC and 75 s beside the other test worker), else by pip; both
build the same non-editable wheel from this checkout. It installs from the package index and runs for
about four minutes on the 2-core CPU, so it is a slow test (`-m slow`); JAXRL_SKIP_COLAB_STACK=1 skips it.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "tests" / "colab_pins.txt"
# The files whose code meets the pinned packages (jax, flax, optax, orbax, numpy). tests/test_cli.py is
# argument parsing and config composition (none of the pins); the CLI's runs on this stack are the two
# tests at the bottom of this file.
FAST_TESTS = [
    "tests/test_api.py",
    "tests/run/test_checkpoint.py",
    "tests/run/test_formats.py",
    "tests/envs/test_gymnasium.py",
    "tests/test_notebooks.py",
]
# Folded on this stack, all of them run on the main stack: the Snake resume repeats the CartPole SIGKILL
# resume's orbax save and restore with another env (31 s), and four of the five bad-resume lines are read
# before any checkpoint is (26 s); the one left reads the saved shapes. What stays of the checkpoint file is
# what depends on orbax's version: a kill inside a write (orbax's temporary folders, then a resume to the same
# bits), a damaged array file (orbax's layout), pruning to `keep`, the saved shapes. The plain SIGKILL resume
# and Ctrl-C's save repeat that kill, save and resume (46 s on a 2-core EPYC Milan).
# The frozen run fixtures load, evaluate and keep their arrays here too (orbax and XLA of Colab's versions); their
# resumes repeat the main stack's resume with other fixtures (20 s).
NOT_ON_COLAB = (
    "not snake-ppo and not (bad_resume and not shapes) and not test_sigkilled_run and not ctrl_c"
    " and not resumes_through"
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("JAXRL_SKIP_COLAB_STACK") == "1", reason="JAXRL_SKIP_COLAB_STACK=1"),
]


def run(args, cwd, **env):
    proc = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu", **env},
        check=False,
    )
    assert proc.returncode == 0, f"{' '.join(map(str, args))}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def colab_python(tmp_path_factory):
    venv = tmp_path_factory.mktemp("colab") / "venv"
    python = venv / "bin" / "python"
    # What the fast tests below import, not the whole [test] extra: torch, SB3 and wandb (the bulk of that
    # install) are Colab's own and not what these tests check; the tests that need them skip.
    wanted = [f"{ROOT}[notebooks,gymnasium]", "pytest", "-c", PINS]
    uv = shutil.which("uv")
    if uv:
        run([uv, "venv", "-q", "--python", sys.executable, venv], cwd=venv.parent)
        run([uv, "pip", "install", "-q", "--python", python, *wanted], cwd=venv.parent)
    else:
        run([sys.executable, "-m", "venv", venv], cwd=venv.parent)
        run([python, "-m", "pip", "install", "-q", *wanted], cwd=venv.parent)
    return python


def test_the_pins_are_what_got_installed(colab_python, tmp_path):
    pins = dict(line.split("==") for line in PINS.read_text().split("\n") if line and not line.startswith("#"))
    script = "import importlib.metadata as m, sys; print(' '.join(f'{n}=={m.version(n)}' for n in sys.argv[1:]))"
    got = run([colab_python, "-c", script, *pins], cwd=tmp_path).split()
    assert got == [f"{name}=={version}" for name, version in pins.items()]


def test_fast_tests_and_the_notebooks_pass_on_colabs_stack(colab_python):
    select = ["-m", "not slow or notebook", "-k", NOT_ON_COLAB]  # the default tier of these files, every notebook
    out = run([colab_python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *select, *FAST_TESTS], cwd=ROOT)
    assert " passed" in out and " failed" not in out


@pytest.mark.parametrize("where", ["repository root", "another folder"])
def test_the_cli_runs_from_any_folder_against_a_plain_install(colab_python, tmp_path, where):
    cwd = ROOT if where == "repository root" else tmp_path
    out = run(
        [colab_python, "-m", "jaxrl.train", "env=CartPole-v1", "total_timesteps=4096", f"run_dir={tmp_path / 'run'}"],
        cwd=cwd,
    )
    assert "done: 4,096 env steps" in out and (tmp_path / "run" / "summary.json").is_file()


def test_a_shelf_agent_plays_from_a_plain_install_without_training(colab_python, tmp_path):
    """The shelf ships as package data: a plain install plays `pretrained:snake-v1` to its recorded score."""
    import json

    script = "from jaxrl.trained import shelf; print(shelf.info('snake-v1')['figures']['greedy_score'])"
    recorded = float(run([colab_python, "-c", script], cwd=tmp_path).strip())
    out = run([colab_python, "-m", "jaxrl.eval", "pretrained:snake-v1", "episodes=100", "render=none"], cwd=tmp_path)
    assert "score mean" in out
    got = json.loads((tmp_path / "runs" / "pretrained-snake-v1" / "eval.json").read_text())["score"]["mean"]
    assert abs(got - recorded) <= 0.1 * recorded, (got, recorded)
