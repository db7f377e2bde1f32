"""Every notebook runs top to bottom with JAXRL_QUICK=1 (tiny budgets), is stored without outputs, and
opens with a Colab badge and an install cell that points at the repository's main branch."""

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
REPO = "github.com/jaxrl/jaxrl"


def test_there_are_notebooks():
    assert {p.name for p in NOTEBOOKS} >= {"quickstart.ipynb"} | OPTIMIZED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_clean_with_badge_and_install_cell(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, "outputs must be stripped"
    first = nb.cells[0].source
    assert (
        f"https://colab.research.google.com/github/{REPO[len('github.com/') :]}/blob/main/notebooks/{path.name}"
        in first
    )
    install = nb.cells[1].source
    assert re.search(rf'"jaxrl(\[[a-z,]+\])? @ git\+https://{re.escape(REPO)}@main"', install)  # extras allowed
    assert '"google.colab" in sys.modules' in install
    pip_lines = [line for line in install.splitlines() if "pip install" in line]
    assert len(pip_lines) == 1
    # Colab's jax is left alone: nothing but jaxrl is named, nothing upgraded.
    assert "jax" not in pip_lines[0].replace("jaxrl", "") and "-U" not in pip_lines[0] and "upgrade" not in pip_lines[0]


# The grid notebook's CNN runs several times slower compiled without XLA's optimizations, so it runs as
# users run it; the others compile without them, as the rest of the suite does (tests/conftest.py).
OPTIMIZED = {"grid_agents.ipynb"}


# Their own tier (`python -m pytest -m notebook`) on this stack; in CI the slow test
# tests/test_colab_stack.py runs them top to bottom on Colab's pinned stack, where they are meant to run.
@pytest.mark.notebook
@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=[pytest.mark.optimized] if p.name in OPTIMIZED else [], id=p.name) for p in NOTEBOOKS],
)
def test_notebook_runs_top_to_bottom_quick(path, tmp_path, monkeypatch):
    monkeypatch.setenv("JAXRL_QUICK", "1")
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError, naming the cell, on any error
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
