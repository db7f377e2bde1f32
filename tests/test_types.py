"""mypy checks the public API (the files `[tool.mypy]` in pyproject.toml names: the Python API with `Run`, and
the env registry) with zero errors, and the settings still let it see a wrong call: a check that passes
because everything became `Any` would pass anything."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("mypy")


def mypy(*args: str) -> subprocess.CompletedProcess:
    # /dev/null as the cache: nothing is written into the source tree
    cmd = [sys.executable, "-m", "mypy", "--cache-dir=/dev/null", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)


def test_the_public_api_type_checks():
    proc = mypy()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "no issues found in 2 source files" in proc.stdout


def test_a_wrong_call_into_the_api_is_caught(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from jaxrl.api import Run, compose\ncompose(3)\nRun('x', None).evaluate(episodes='many')\n")
    out = mypy(str(probe)).stdout
    assert 'Argument 1 to "compose" has incompatible type "int"' in out, out
    assert 'Argument "episodes" to "evaluate" of "Run" has incompatible type "str"' in out, out
