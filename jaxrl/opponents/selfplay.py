"""Moved to `jaxrl.algos.selfplay` (self-play wraps an algorithm).
This old path goes in the next release."""

from jaxrl._moved import alias

alias(__name__, "jaxrl.algos.selfplay")
