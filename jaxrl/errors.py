"""Errors that end a run after it started; each message is one line (the CLI prints it after "error: ").

Bad input before a run starts is `ConfigError` (exit code 2). This module imports nothing heavy: a
distributed run must join its processes before anything starts jax (`jaxrl.scale.distributed`).
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A config value or combination that cannot run (exit code 2); also `jaxrl.config.schema.ConfigError`."""


class NonFiniteError(RuntimeError):
    """A loss, gradient norm or parameter became NaN or inf (exit code 3). Nothing of the broken
    state was saved; the message names the last good checkpoint, which `resume=` continues from."""


class SaveError(RuntimeError):
    """The run's outputs can no longer be written (exit code 4); what was saved before is kept."""
