"""Pure-JAX environments in the gymnax 1.0 API, and `make` for them and for gymnax's own ids."""

from envs.registry import UnknownEnvError, make, registered_names

__all__ = ["UnknownEnvError", "make", "registered_names"]
