"""jaxrl: reinforcement learning fused with pure-JAX environments into one compiled loop.

import jaxrl
run = jaxrl.train(env="snake", total_timesteps=2e6)   # or algo="dqn", **{"algo.lr": 3e-4}
run.summary, run.metrics, run.evaluate(), run.replay(), run.policy
run = jaxrl.load("runs/...")                          # reopen a run
"""

__version__ = "0.1.0"


def _configs_from_source_tree() -> None:
    """Make `jaxrl.configs` importable when this package is imported from a source checkout.

    Installed, the repository's `configs/` ships inside the package as `jaxrl.configs` (the
    package-dir mapping in pyproject.toml; `pip install -e .` maps it too). But after a plain
    `pip install .`, Python run from the repository root imports `./jaxrl`, which has no
    `configs/` beside it: point `jaxrl.configs` at `../configs` then.
    """
    import importlib.util
    import sys
    from pathlib import Path

    if importlib.util.find_spec("jaxrl.configs") is not None:
        return
    source = Path(__file__).resolve().parent.parent / "configs"
    if not (source / "__init__.py").is_file():
        return
    spec = importlib.util.spec_from_file_location(
        "jaxrl.configs", source / "__init__.py", submodule_search_locations=[str(source)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["jaxrl.configs"] = module
    spec.loader.exec_module(module)
    globals()["configs"] = module  # what the import system does for a submodule it loads


_configs_from_source_tree()

from jaxrl.errors import ConfigError, NonFiniteError, SaveError

__all__ = ["ConfigError", "NonFiniteError", "Policy", "Run", "SaveError", "load", "train"]


def __getattr__(name: str):
    """`jaxrl.train`, `jaxrl.load`, `Run` and `Policy`, imported on first use: importing jaxrl alone starts
    nothing of jax (a distributed run must join its processes first, `jaxrl.scale.distributed`)."""
    if name in ("Policy", "Run", "load", "train"):
        from jaxrl import api

        return getattr(api, name)
    raise AttributeError(f"module 'jaxrl' has no attribute {name!r}")
