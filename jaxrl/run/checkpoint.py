"""Whole-run checkpoints with orbax: the training state of every seed plus the host's bookkeeping.

A checkpoint is `<run_dir>/checkpoints/<env steps per seed>/` holding `state` (the runner
pytree: params, optimizer state, env states, replay buffer, keys, counters) and `meta` (JSON:
updates done, timings, per-chunk episode history, the resolved config, env name and kwargs,
library versions), so it loads without the original command line.

Orbax writes each checkpoint into a temporary directory and renames it when complete, so a
half-written one is never listed. Saves run on a background thread: the state is first copied
to host memory, so the next chunk (which donates the device buffers) cannot change what is
written. A checkpoint that fails to load (corrupt or partial files) is skipped with a warning
in favour of the previous one; written again later, the unreadable one is moved aside, never
deleted. Every checkpoint carries its run's id, and a save never replaces another run's.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import shutil
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxrl.config.formats import FORMAT, FormatError, Saved, check, check_env, key_name, migrate
from jaxrl.config.schema import ConfigError
from jaxrl.errors import SaveError


class CheckpointError(ConfigError):
    """No usable checkpoint; the message is one line."""


class SaveOutcome(NamedTuple):
    """How a checkpoint write ended: its directory when it landed, else a one-line reason (both None: no write)."""

    path: Path | None
    error: str | None


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


def saved_leaf(a: Any) -> Any:
    """The shape and dtype `to_host` stores leaf `a` as (keys as their uint32 data)."""
    return jax.eval_shape(jax.random.key_data, a) if _is_key(a) else a


def _zeros_like_saved(a: Any) -> np.ndarray:
    """A zero array shaped like `to_host` stores leaf `a`."""
    s = saved_leaf(a)
    return np.zeros(s.shape, s.dtype)


def device_state(runner: Any) -> Any:
    """A runner as orbax saves it from devices: typed PRNG keys as their raw uint32 data (the layout
    `to_host` writes, so either kind of checkpoint restores both ways)."""
    return jax.tree.map(lambda x: jax.random.key_data(x) if _is_key(x) else x, runner)


def _abstract_saved(a: Any, sharding: Any) -> jax.ShapeDtypeStruct:
    """What orbax restores leaf `a` into on a mesh: its saved shape and dtype, placed with `sharding`."""
    s = saved_leaf(a)
    return jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sharding)


def _child(node: Any, name: Any) -> Any:
    if isinstance(node, dict):
        for candidate in (name, str(name)):
            if candidate in node:
                return node[candidate]
        raise KeyError(name)
    if isinstance(node, list | tuple) and isinstance(name, int) and 0 <= name < len(node):
        return node[name]
    raise KeyError(name)


def onto(tree: Any, abstract: Any, where: str) -> Any:
    """The runner shaped like `abstract` (jax.eval_shape of the algorithm's init) from a migrated `Saved.tree`,
    leaf by leaf by path; FormatError naming the first leaf missing or of another shape or dtype (the sign of a
    layout change that came without a migration)."""
    paths, treedef = jax.tree_util.tree_flatten_with_path(abstract)
    leaves = []
    for path, leaf in paths:
        node = tree
        try:
            for key in path:
                node = _child(node, key_name(key))
        except KeyError:
            raise FormatError(
                f"{where} has no {jax.tree_util.keystr(path)} after its migrations: its layout changed without one"
            ) from None
        want = saved_leaf(leaf)
        node = np.asarray(node)
        if node.shape != want.shape or node.dtype != want.dtype:
            raise FormatError(
                f"{where}: {jax.tree_util.keystr(path)} is {node.dtype}{list(node.shape)} after its migrations,"
                f" the run needs {want.dtype}{list(want.shape)}"
            )
        leaves.append(node)
    return from_host(jax.tree_util.tree_unflatten(treedef, leaves), abstract)


class Checkpointer:
    """Saves and restores runner states under one directory, keeping the newest `keep`.

    A save copies the state to host memory at once and writes it on a background thread (one
    write at a time); `finish` waits for it and says whether it landed. Orbax writes into a
    temporary directory and renames it when complete, so a failed or killed write never
    replaces a checkpoint.
    """

    def __init__(
        self,
        directory: Path,
        keep: int | None = 3,
        run_id: str | None = None,
        shardings: Any = None,
        reader: bool = False,
    ):
        """`shardings`: the runner's shardings on the run's mesh. When the mesh spans several processes
        (a distributed run) every process saves its own shards of the device arrays through orbax's
        multi-host support, at once and all together, and restores straight onto `shardings`.
        `reader`: only reads (eval, opponents, ratings); it leaves orbax's unfinished temporary folders
        alone, since they may be a write in flight of the run that is training there."""
        import orbax.checkpoint as ocp

        self.directory = Path(directory).absolute()
        self.run_id = run_id  # written into every checkpoint's meta; a save never replaces another run's
        self.shardings = shardings
        self.multihost = jax.process_count() > 1 and shardings is not None
        options = ocp.CheckpointManagerOptions(
            max_to_keep=keep, enable_async_checkpointing=False, create=True, cleanup_tmp_directories=not reader
        )
        self._ocp = ocp
        self._manager = ocp.CheckpointManager(self.directory, options=options)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jaxrl-checkpoint")
        self._pending: tuple[int, Future] | None = None

    def steps(self) -> list[int]:
        """Completed checkpoints, oldest first."""
        return sorted(self._manager.all_steps())

    def reload(self) -> None:
        """Look at the directory again (after checkpoints were moved in or out of it)."""
        self._manager.reload()

    def path(self, step: int) -> Path:
        return self.directory / str(step)

    def save(self, step: int, runner: Any, meta: dict[str, Any], wait: bool = False) -> SaveOutcome:
        """Write checkpoint `step` (on the background thread unless `wait`) after the previous write ends.

        Returns the previous write's outcome (or this one's with `wait`); never raises for a failed write.
        """
        previous = self.finish()
        meta = {
            **meta,
            "format": FORMAT,
            "step": step,
            "run_id": self.run_id,
            "saved_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        if self.multihost:  # every process writes its shards now, all together (orbax syncs them)
            done: Future = Future()
            try:
                self._write(step, device_state(runner), meta)
                done.set_result(None)
            except BaseException as e:  # noqa: BLE001  (reported like a background write's failure)
                done.set_exception(e)
            self._pending = (step, done)
            return self.finish()
        state = to_host(runner)  # copied now: the next chunk donates the device buffers
        self._pending = (step, self._pool.submit(self._write, step, state, meta))
        return self.finish() if wait else previous

    def _write(self, step: int, state: Any, meta: dict[str, Any]) -> None:
        ocp = self._ocp
        needed = sum(x.nbytes for x in jax.tree.leaves(state)) + 2**17  # + orbax's own files
        free = shutil.disk_usage(self.directory).free
        short = free < needed
        if self.multihost:  # every process writes or none does: orbax's save is collective
            from jaxrl.scale.distributed import any_process

            short = any_process(short)
        if short:
            raise OSError(
                errno.ENOSPC, f"not enough free space: about {needed / 2**20:.1f} MB needed, {free / 2**20:.1f} MB free"
            )
        if step in self._manager.all_steps():
            self._set_aside(step)
        args = ocp.args.Composite(state=ocp.args.StandardSave(state), meta=ocp.args.JsonSave(meta))
        absl_logger = logging.getLogger("absl")
        level = absl_logger.level
        absl_logger.setLevel(logging.CRITICAL)  # orbax logs a failed write's traceback; we report it in one line
        try:
            self._manager.save(step, args=args, force=True)
        except BaseException:
            for partial in self.directory.glob(f"{step}.orbax-checkpoint-tmp*") if not self.multihost else []:
                shutil.rmtree(partial, ignore_errors=True)
            raise
        finally:
            absl_logger.setLevel(level)

    def _set_aside(self, step: int) -> None:
        """Move an existing checkpoint `step` of this run (one a resume fell back past) aside, never deleting it;
        SaveError when it belongs to another run."""
        try:
            owner = self.read_meta(step).get("run_id")
        except Exception:  # noqa: BLE001  (unreadable: the reason the run fell back past it)
            owner = self.run_id
        if owner is not None and owner != self.run_id:  # checkpoints from before run ids carry none
            raise SaveError(
                f"checkpoint {self.path(step)} belongs to another run (run id {owner}); it is not replaced"
                " (do two runs write to this run_dir?)"
            )
        from jaxrl.scale.distributed import barrier, is_primary

        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        if is_primary():
            self.path(step).rename(self.directory / f"{step}.unreadable-{stamp}")
        barrier("jaxrl-checkpoint-set-aside")
        self._manager.reload()

    def finish(self) -> SaveOutcome:
        """Wait for the write in flight; its outcome (`SaveOutcome(None, None)` when there was none)."""
        if self._pending is None:
            return SaveOutcome(None, None)
        step, future = self._pending
        self._pending = None
        error = future.exception()
        if error is None:
            return SaveOutcome(self.path(step), None)
        if isinstance(error, SaveError):
            raise error
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        return SaveOutcome(None, f"checkpoint {self.path(step)} could not be written ({reason[:300]})")

    def read_meta(self, step: int) -> dict[str, Any]:
        ocp = self._ocp
        return self._manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"]

    def restore(self, step: int, abstract: Any) -> tuple[Any, dict[str, Any]]:
        """(runner, meta) of checkpoint `step`, shaped like `abstract`. A checkpoint of an earlier format is
        migrated in memory (jaxrl.config.formats); FormatError for one this jaxrl cannot read."""
        ocp = self._ocp
        meta = self.read_meta(step)
        where = f"checkpoint {self.path(step)}"
        found = check(meta.get("format"), where, (meta.get("versions") or {}).get("jaxrl"))
        if found != FORMAT:
            check_env(meta, where)  # before the arrays: another env version's shapes would not fit
            runner, meta = self._migrated(step, found, abstract, where)
            check_env(meta, where)
            return runner, meta
        check_env(meta, where)
        if self.multihost:  # each process reads the shards its devices hold
            target = jax.tree.map(_abstract_saved, abstract, self.shardings)
        else:
            target = jax.tree.map(_zeros_like_saved, abstract)
        restored = self._manager.restore(
            step,
            args=ocp.args.Composite(state=ocp.args.StandardRestore(target), meta=ocp.args.JsonRestore()),
        )
        return from_host(restored["state"], abstract), restored["meta"]

    def _migrated(self, step: int, found: int, abstract: Any, where: str) -> tuple[Any, dict[str, Any]]:
        """(runner, meta) of a checkpoint of format `found`: read as plain data, migrated, laid onto `abstract`."""
        ocp = self._ocp
        if self.multihost:
            raise FormatError(f"{where} has run format {found}: upgrade it first (python -m jaxrl.upgrade RUN_DIR)")
        restored = self._manager.restore(
            step, args=ocp.args.Composite(state=ocp.args.StandardRestore(), meta=ocp.args.JsonRestore())
        )
        meta = restored["meta"]
        saved = migrate(Saved(restored["state"], meta, meta.get("config") or {}), found)
        return onto(saved.tree, abstract, where), {**saved.meta, "config": saved.config}

    def restore_latest(self, abstract: Any, warn=print) -> tuple[int, Any, dict[str, Any]]:
        """(step, runner, meta) of the newest checkpoint that loads; older ones are tried after a warning."""
        steps = self.steps()
        if not steps:
            raise CheckpointError(f"no checkpoint in {self.directory}")
        for step in reversed(steps):
            try:
                runner, meta = self.restore(step, abstract)
                return step, runner, meta
            except (CheckpointError, FormatError):
                raise
            except Exception as e:  # noqa: BLE001  (orbax/tensorstore raise many types for damaged files)
                reason = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
                warn(f"warning: checkpoint {self.path(step)} is unreadable ({reason}); trying an older one")
        raise CheckpointError(f"no readable checkpoint in {self.directory} (tried {len(steps)})")

    def close(self) -> SaveOutcome:
        """Wait for the write in flight and release the manager; that write's outcome."""
        try:
            return self.finish()
        finally:
            self._pool.shutdown(wait=True)
            # orbax's close does not wait for the cleanup of temporary folders it started on a thread; left
            # running at exit, that thread prints a traceback under an error's one line
            cleanup = getattr(self._manager, "_cleanup_tmp_directory_future", None)
            if cleanup is not None:
                with contextlib.suppress(Exception):  # a leftover temporary folder is harmless; the next writer retries
                    cleanup.result()
            self._manager.close()
