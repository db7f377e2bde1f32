"""Whole-run checkpoints with orbax: the training state of every seed plus the host's bookkeeping.

A checkpoint is `<run_dir>/checkpoints/<env steps per seed>/` holding `state` (the runner
pytree: params, optimizer state, env states, replay buffer, keys, counters) and `meta` (JSON:
updates done, timings, per-chunk episode history, the resolved config, env name and kwargs,
library versions), so it loads without the original command line.

Orbax writes each checkpoint into a temporary directory and renames it when complete, so a
half-written one is never listed. Saves run in the background: the state is first copied to
host memory, so the next chunk (which donates the device buffers) cannot change what is
written. A checkpoint that fails to load (corrupt or partial files) is skipped with a warning
in favour of the previous one.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxrl.config import ConfigError

FORMAT = 2  # 2: runners hold their envs as one `Streams` record (jaxrl.rollout)


class CheckpointError(ConfigError):
    """No usable checkpoint; the message is one line."""


def versions() -> dict[str, str]:
    import flax
    import optax
    import orbax.checkpoint

    import jaxrl

    return {
        "jaxrl": jaxrl.__version__,
        "jax": jax.__version__,
        "flax": flax.__version__,
        "optax": optax.__version__,
        "orbax": orbax.checkpoint.__version__,
        "python": sys.version.split()[0],
    }


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def to_host(runner: Any) -> Any:
    """Numpy copy of a runner; typed PRNG keys become their raw uint32 data."""
    raw = jax.tree.map(lambda x: jax.random.key_data(x) if _is_key(x) else x, runner)
    return jax.tree.map(np.asarray, jax.device_get(raw))


def from_host(saved: Any, abstract: Any) -> Any:
    """Rebuild a runner shaped like `abstract` (e.g. `jax.eval_shape` of init) from `to_host` data."""
    return jax.tree.map(lambda s, a: jax.random.wrap_key_data(s) if _is_key(a) else s, saved, abstract)


def _zeros_like_saved(a: Any) -> np.ndarray:
    """A zero array shaped like `to_host` stores leaf `a` (keys as their uint32 data)."""
    s = jax.eval_shape(jax.random.key_data, a) if _is_key(a) else a
    return np.zeros(s.shape, s.dtype)


class Checkpointer:
    """Saves and restores runner states under one directory, keeping the newest `keep`."""

    def __init__(self, directory: Path, keep: int = 3):
        import orbax.checkpoint as ocp

        self.directory = Path(directory).absolute()
        options = ocp.CheckpointManagerOptions(
            max_to_keep=keep, enable_async_checkpointing=True, create=True, cleanup_tmp_directories=True
        )
        self._ocp = ocp
        self._manager = ocp.CheckpointManager(self.directory, options=options)

    def steps(self) -> list[int]:
        """Completed checkpoints, oldest first."""
        return sorted(self._manager.all_steps())

    def path(self, step: int) -> Path:
        return self.directory / str(step)

    def save(self, step: int, runner: Any, meta: dict[str, Any], wait: bool = False) -> Path:
        """Start writing checkpoint `step` (background unless `wait`); returns its directory."""
        ocp = self._ocp
        meta = {**meta, "format": FORMAT, "step": step, "saved_at": datetime.now(UTC).isoformat(timespec="seconds")}
        args = ocp.args.Composite(state=ocp.args.StandardSave(to_host(runner)), meta=ocp.args.JsonSave(meta))
        if step in self._manager.all_steps():  # an unreadable one the run fell back past: written again
            self._manager.delete(step)
        self._manager.save(step, args=args, force=True)
        if wait:
            self._manager.wait_until_finished()
        return self.path(step)

    def wait(self) -> None:
        self._manager.wait_until_finished()

    def read_meta(self, step: int) -> dict[str, Any]:
        ocp = self._ocp
        return self._manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"]

    def restore(self, step: int, abstract: Any) -> tuple[Any, dict[str, Any]]:
        """(runner, meta) of checkpoint `step`, shaped like `abstract`; CheckpointError for another format."""
        ocp = self._ocp
        saved_format = self.read_meta(step).get("format")
        if saved_format != FORMAT:
            raise CheckpointError(
                f"checkpoint {self.path(step)} has format {saved_format}; this jaxrl reads format {FORMAT}"
                " (train it again, or evaluate it with the jaxrl version that wrote it)"
            )
        target = jax.tree.map(_zeros_like_saved, abstract)
        restored = self._manager.restore(
            step,
            args=ocp.args.Composite(state=ocp.args.StandardRestore(target), meta=ocp.args.JsonRestore()),
        )
        return from_host(restored["state"], abstract), restored["meta"]

    def restore_latest(self, abstract: Any, warn=print) -> tuple[int, Any, dict[str, Any]]:
        """(step, runner, meta) of the newest checkpoint that loads; older ones are tried after a warning."""
        steps = self.steps()
        if not steps:
            raise CheckpointError(f"no checkpoint in {self.directory}")
        for step in reversed(steps):
            try:
                runner, meta = self.restore(step, abstract)
                return step, runner, meta
            except CheckpointError:
                raise
            except Exception as e:  # noqa: BLE001  (orbax/tensorstore raise many types for damaged files)
                reason = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
                warn(f"warning: checkpoint {self.path(step)} is unreadable ({reason}); trying an older one")
        raise CheckpointError(f"no readable checkpoint in {self.directory} (tried {len(steps)})")

    def close(self) -> None:
        self._manager.wait_until_finished()
        self._manager.close()
