"""Pure-JAX environments in the gymnax 1.0 API; `make`, `register` and `spec` for them and every gymnax id."""

from envs.grid import GridWorld
from envs.registry import EnvSettingError, EnvSpec, UnknownEnvError, make, register, registered_names, spec
from envs.snake import Snake

register("snake", Snake)
register("grid", GridWorld)


def to_gymnasium(name: str, render_mode: str | None = None, **settings):
    """`name` as a `gymnasium.Env`, numpy in and out (needs gymnasium; see envs/gymnasium_adapter.py)."""
    from envs.gymnasium_adapter import to_gymnasium

    return to_gymnasium(name, render_mode=render_mode, **settings)


def to_gymnasium_vector(name: str, num_envs: int, render_mode: str | None = None, **settings):
    """`num_envs` copies of `name` as a `gymnasium.vector.VectorEnv` stepped in one jitted call (needs gymnasium)."""
    from envs.gymnasium_adapter import to_gymnasium_vector

    return to_gymnasium_vector(name, num_envs, render_mode=render_mode, **settings)


__all__ = [
    "EnvSettingError",
    "EnvSpec",
    "GridWorld",
    "Snake",
    "UnknownEnvError",
    "make",
    "register",
    "registered_names",
    "spec",
    "to_gymnasium",
    "to_gymnasium_vector",
]
