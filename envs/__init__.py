"""Pure-JAX environments in the gymnax 1.0 API; `make`, `register` and `spec` for them and every gymnax id.

Installed as `jaxrl.envs` (`from jaxrl import envs`): the repository's `envs/` folder is not a top-level
package, so a project's own `envs/` cannot shadow it.
"""

import importlib
import sys
import types

if __name__ == "envs":  # this folder imported by its old top-level name, from a checkout's root
    raise ImportError(
        "jaxrl's envs are `jaxrl.envs` now: write `from jaxrl import envs` (or `from jaxrl.envs.grid import ...`)"
    )


class _ImportedOnFirstUse(types.ModuleType):
    """Stands in for a module in gymnax's env files; the first attribute read imports the real one."""

    def __getattr__(self, attr: str):
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), attr)


def _import_gymnax() -> None:
    """Import gymnax with seaborn and matplotlib.pyplot (if not imported yet) deferred in its env files.

    Importing any gymnax env imports every gymnax env, and their render functions import seaborn
    (which imports scipy.stats and IPython) and pyplot at the top: most of the time a
    `python -m jaxrl.train` spent importing, paid by every run and by every subprocess a test
    starts. No step or reset uses them. Only gymnax's own module globals hold the stand-ins; once
    gymnax is imported, `import seaborn` anywhere gets the real module."""
    stand_ins = {
        name: _ImportedOnFirstUse(name) for name in ("seaborn", "matplotlib.pyplot") if name not in sys.modules
    }
    sys.modules.update(stand_ins)
    try:
        import gymnax  # noqa: F401
    finally:
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]


if "gymnax" not in sys.modules:
    _import_gymnax()

from jaxrl.envs.arena import Arena  # after gymnax: the envs import it
from jaxrl.envs.arena_open import OpenArena, open_arena
from jaxrl.envs.grid import GridWorld
from jaxrl.envs.registry import EnvSettingError, EnvSpec, UnknownEnvError, make, register, registered_names, spec
from jaxrl.envs.snake import Snake

register("snake", Snake)
register("grid", GridWorld)
# arena v2: the official engine's rules, starts and rulesets, 4 moves, a hazard channel (issue 80)
register("arena", Arena, version=2)
# arena_open v2: the views one code a cell; v3: Battlesnake's board one 2-byte word a cell (what a run holds;
# one version for both rule sets, so runs of rules=pufferlib under v2 are refused too)
register("arena_open", open_arena, version=3)


def to_gymnasium(name: str, render_mode: str | None = None, **settings):
    """`name` as a `gymnasium.Env`, numpy in and out (needs gymnasium; see envs/gymnasium_adapter.py)."""
    from jaxrl.envs.gymnasium_adapter import to_gymnasium

    return to_gymnasium(name, render_mode=render_mode, **settings)


def to_gymnasium_vector(name: str, num_envs: int, render_mode: str | None = None, **settings):
    """`num_envs` copies of `name` as a `gymnasium.vector.VectorEnv` stepped in one jitted call (needs gymnasium)."""
    from jaxrl.envs.gymnasium_adapter import to_gymnasium_vector

    return to_gymnasium_vector(name, num_envs, render_mode=render_mode, **settings)


__all__ = [
    "Arena",
    "EnvSettingError",
    "EnvSpec",
    "GridWorld",
    "OpenArena",
    "Snake",
    "UnknownEnvError",
    "make",
    "register",
    "registered_names",
    "spec",
    "to_gymnasium",
    "to_gymnasium_vector",
]
