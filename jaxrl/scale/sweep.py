"""Moved to `jaxrl.config.sweep` (a sweep is part of what a run is).
This old path goes in the next release."""

from jaxrl._moved import alias

alias(__name__, "jaxrl.config.sweep")
