"""Moved to `jaxrl.run.frozen` (loading a finished run's policy is the run's side).
This old path goes in the next release."""

from jaxrl._moved import alias

alias(__name__, "jaxrl.run.frozen")
