"""Moved to `jaxrl.core.pool` (the pool lives on device beside the rest of the core).
This old path goes in the next release."""

from jaxrl._moved import alias

alias(__name__, "jaxrl.core.pool")
