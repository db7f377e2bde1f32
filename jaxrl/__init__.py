"""jaxrl: reinforcement learning fused with pure-JAX environments into one compiled loop.

import jaxrl
run = jaxrl.train(env="snake", total_timesteps=2e6)   # or algo="dqn", **{"algo.lr": 3e-4}
run.summary, run.metrics, run.evaluate(), run.replay(), run.policy
run = jaxrl.load("runs/...")                          # reopen a run
run = jaxrl.pretrained("snake-v1")                    # a trained agent that ships with jaxrl
cfg = jaxrl.make_config(env="snake", num_envs=64)          # the typed config alone (jaxrl.build makes its program)
"""

__version__ = "0.2.0"


def _source_tree_subpackages() -> None:
    """In a source checkout, find `jaxrl.configs`, `jaxrl.envs` and `jaxrl.bench` in the folders beside this one.

    Installed, the repository's `configs/`, `envs/` and `bench/` ship inside the package (the
    package-dir mapping in pyproject.toml; `pip install -e .` maps them too). But Python run from a
    checkout imports `./jaxrl`: after a plain `pip install .` from the repository root, or in another
    commit's tree (`python -m bench.reference --against`), the folders beside it must be the ones used,
    not an installed copy. Adding the repository root to this package's path does that; nothing is
    imported here.
    """
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and all((root / n / "__init__.py").is_file() for n in ("configs", "envs")):
        __path__.append(str(root))


_source_tree_subpackages()

from jaxrl import _moved  # noqa: E402  (old import paths a user could have, for one more release)

_moved.install()

from jaxrl.errors import ConfigError, NonFiniteError, SaveError

__all__ = [
    "ConfigError",
    "NonFiniteError",
    "Policy",
    "Run",
    "SaveError",
    "load",
    "make_config",
    "pretrained",
    "train",
]


def __getattr__(name: str):
    """`jaxrl.train`, `jaxrl.load`, `jaxrl.make_config`, `jaxrl.pretrained`, `Run` and `Policy`, imported on first
    use: importing jaxrl alone starts nothing of jax (a distributed run must join its processes first,
    `jaxrl.scale.distributed`)."""
    if name in ("Policy", "Run", "load", "make_config", "train"):
        from jaxrl import api

        return getattr(api, name)
    if name == "pretrained":  # the module, callable: jaxrl.pretrained("snake-v1") is a Run of a shelf agent
        import importlib

        return importlib.import_module("jaxrl.pretrained")
    raise AttributeError(f"module 'jaxrl' has no attribute {name!r}")
