"""Pure-JAX environments in the gymnax 1.0 API; `make`, `register` and `spec` for them and every gymnax id."""

from envs.grid import GridWorld
from envs.registry import EnvSettingError, EnvSpec, UnknownEnvError, make, register, registered_names, spec
from envs.snake import Snake

register("snake", Snake)
register("grid", GridWorld)

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
]
