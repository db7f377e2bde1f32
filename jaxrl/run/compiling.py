"""How jaxrl lowers its programs: threefry unrolled on CPU, for jaxrl's own programs only.

On CPU, jax lowers every threefry call (a key split, a uniform draw) as a loop of 5 rounds, to
keep compile times down; GPUs get the 20 rounds written out. In a small-batch training step a
threefry loop is some 80 tiny kernels that run one after the other, and a gymnax env draws
twice per step (its auto-reset split and the reset's draw). Written out, the same bits come
from a few fused kernels, so small-batch updates run and compile faster. The cost: XLA may copy
the written-out rounds into several consumers of a draw (an optimization barrier does not stop it
on the CPU), which slows DQN on Snake (one vector step per update) a little; PPO on Snake is unchanged.
The figures: docs/benchmarks.md, "Measured choices in the code".

`lowering()` swaps the CPU rule while jaxrl lowers a program and restores it afterwards, so a
user's own jitted code (or a peer benchmarked beside jaxrl) keeps jax's default. The bits are
the same either way. A run's init, which runs once, keeps jax's loop (`compile_aside`). Where
jax's internals differ from what this expects, it changes nothing.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

_LOCK = threading.Lock()


def _threefry_parts() -> tuple[Any, Any, Any] | None:
    """(primitive, the unrolled lowering rule, jax's table of CPU rules), or None if not found."""
    try:
        from jax._src.interpreters import mlir
    except ImportError:
        return None
    for module in ("jax._src.random.threefry2x32", "jax._src.prng"):  # jax >= 0.8, jax 0.6-0.7
        try:
            found = importlib.import_module(module)
        except ImportError:
            continue
        prim = getattr(found, "threefry2x32_p", None)
        rule = getattr(found, "_threefry2x32_lowering_rule", None)  # the written-out rule other platforms use
        table = getattr(mlir, "_platform_specific_lowerings", {}).get("cpu")
        entry = getattr(mlir, "LoweringRuleEntry", None)
        if prim is not None and rule is not None and table is not None and entry is not None and prim in table:
            return prim, entry(rule, False), table
    return None


@contextlib.contextmanager
def lowering() -> Iterator[None]:
    """Lower jaxrl's programs inside this: threefry is written out on CPU (see the module doc)."""
    parts = _threefry_parts()
    if parts is None:
        yield
        return
    prim, unrolled, table = parts
    with _LOCK:
        saved = table[prim]
        table[prim] = unrolled
        try:
            yield
        finally:
            table[prim] = saved


def compile_jit(fn: Any, *args: Any) -> Any:
    """`fn` (a `jax.jit` function) lowered for `args` inside `lowering()` and compiled."""
    with lowering():
        lowered = fn.lower(*args)
    return lowered.compile()


def compile_aside(fn: Any, *args: Any) -> tuple[Future, Any]:
    """Lower `fn` for `args` here and compile it on another thread (XLA releases the GIL), so a
    second program can be traced and compiled meanwhile; returns (future of the compiled
    program, its output shapes and dtypes).

    For a program that runs once (a run's init): jax's own threefry loop, which compiles faster
    than the written-out rounds and gives the same bits."""
    lowered = fn.lower(*args)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jaxrl-compile")
    future = pool.submit(lowered.compile)
    pool.shutdown(wait=False)
    return future, lowered.out_info


def use_persistent_cache(path: str) -> Path:
    """Send every compiled program to jax's persistent compilation cache in `path` (created).

    A second start of the same config (a resumed run, a reconnected notebook) then loads its
    programs instead of compiling them. Everything is cached, however quick to compile, and the
    cache is re-pointed when a process trains with another directory (`reset_cache`).
    """
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    from jaxrl.config.schema import ConfigError

    directory = Path(path).expanduser().resolve()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"compile_cache={path} is not a usable directory: {e.strerror}") from None
    if jax.config.jax_compilation_cache_dir != str(directory):
        compilation_cache.reset_cache()
        jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return directory
