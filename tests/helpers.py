"""Helpers the test files share (imported as `tests.helpers`; fixtures stay in conftest.py), and the
fault-injection hook the resume tests run inside `jaxrl.train`."""

import os
import signal
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.run.driver import Chunk, Hook, RunContext


def count_traces(monkeypatch) -> list[int]:
    """A list that gets the chunk length each time the core loop's `run_chunk` is traced (called under jit)."""
    from jaxrl.core import loop

    traces: list[int] = []
    original = loop.run_chunk

    def counting(update, runner, num_active, length):
        traces.append(length)
        return original(update, runner, num_active, length)

    monkeypatch.setattr(loop, "run_chunk", counting)
    return traces


def env_config(name: str, **settings):
    """The `env` config group's dataclass for a registered env, with settings."""
    from jaxrl import envs

    return envs.spec(name).schema()(**settings)


def three_chunks(algo, steps_per_update: int):
    """A 2-seed, 4-env CartPole run of 7 updates of `algo` (a config dataclass) through one compiled chunk
    of 3, run as chunks of 3, 3 and 1: the runner it ends with."""
    from jaxrl import build
    from jaxrl.config.schema import TrainConfig

    cfg = TrainConfig(
        env=env_config("CartPole-v1"),
        algo=algo,
        num_envs=4,
        num_seeds=2,
        total_timesteps=steps_per_update * 7,
        num_chunks=3,
    )
    program = build.program(cfg)
    runner, _ = program.compile()
    for active in (3, 3, 1):
        runner, _ = program.run_chunk(runner, active)
    return runner


class KillAfterChunks(Hook):
    """Fault injection for the resume tests: SIGKILL this process after `chunks` chunks of this process.

    `during_save=True` (the hook must come after the checkpoint hook, as `jaxrl.train(hooks=...)` puts
    it) waits until that chunk's checkpoint write has created its temporary directory and kills the
    process in the middle of the write.
    """

    def __init__(self, chunks: int, during_save: bool = False):
        self.chunks = chunks
        self.during_save = during_save
        self.seen = 0

    def after_chunk(self, ctx: RunContext, runner: Any, chunk: Chunk) -> None:
        self.seen += 1
        if self.seen < self.chunks:
            return
        if self.during_save:
            checkpoints = ctx.run_dir / "checkpoints"
            deadline = time.monotonic() + 30
            while not any(checkpoints.glob(f"{chunk.env_steps}.orbax-checkpoint-tmp*")):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no checkpoint write started after chunk {self.seen}")
                time.sleep(0.0005)
        os.kill(os.getpid(), signal.SIGKILL)


# -- optimizer steps read off the parameters ------------------------------------------------------------


def with_unit_gradient(algo):
    """`algo` with its loss's gradient replaced by 1 for every parameter (value and stats kept): Adam then
    moves every parameter by the learning rate (over 1 + eps) at each step, so the moves read off the step sizes."""
    loss = algo.loss

    def unit(params, *args):
        value, stats = loss(params, *args)
        total = sum(jnp.sum(p) for p in jax.tree.leaves(params))
        return jax.lax.stop_gradient(value) + total - jax.lax.stop_gradient(total), stats

    algo.loss = unit
    return algo


def bias_values(params) -> np.ndarray:
    """Every bias of a network, flattened: they start at 0, so their float32 sums show even tiny steps."""
    found = [
        np.ravel(x) for path, x in jax.tree_util.tree_leaves_with_path(params) if "bias" in jax.tree_util.keystr(path)
    ]
    return np.concatenate(found).astype(np.float64)


# -- comparing runners (sweeps, devices, hosts) ------------------------------------------------------


def leaves(runner) -> list[np.ndarray]:
    out = []
    for x in jax.tree.leaves(runner):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        out.append(np.asarray(x))
    return out


def difference(a, b) -> float:
    """Largest absolute difference between two runners' float leaves; inf if an integer leaf differs."""
    worst = 0.0
    for x, y in zip(leaves(a), leaves(b), strict=True):
        if x.dtype.kind == "f":
            worst = max(worst, float(np.max(np.abs(x - y))) if x.size else 0.0)
        elif not np.array_equal(x, y):
            return float("inf")
    return worst


def several_agents_rows(tmp_path, algo: str) -> list[dict]:
    """A small 2-agent grid run of `algo` (CNN) that evaluates 3 episodes and resumes to more steps (both
    asserted): its metrics rows, for the algorithm's own figures."""
    import jaxrl

    run = jaxrl.train(
        env={"name": "grid", "num_agents": 2, "size": 7},
        algo=algo,
        run_dir=tmp_path / "grid",
        num_envs=4,
        total_timesteps=4 * 16 * 2,
        progress=False,
        **{"algo.num_steps": 16, "algo.network": "cnn", "algo.channels": [8], "algo.hidden": [16]},
    )
    metrics = run.metrics
    rows = metrics.to_dict("records") if hasattr(metrics, "to_dict") else metrics
    assert run.evaluate(episodes=3)["episodes_per_seed"] == 3
    longer = jaxrl.train(resume=run.run_dir, total_timesteps=4 * 16 * 3, progress=False)
    assert longer.summary["env_steps_per_seed"] == 4 * 16 * 3
    return rows


def one_line_error(capsys, code: int) -> str:
    """The one `error: ...` line a CLI printed for bad input (exit code 2, no traceback)."""
    captured = capsys.readouterr()
    assert code == 2 and "Traceback" not in captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    return lines[0]
