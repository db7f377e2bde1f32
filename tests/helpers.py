"""Helpers the test files share (imported as `tests.helpers`; fixtures stay in conftest.py), and the
fault-injection hook the resume tests run inside `jaxrl.train`."""

import os
import signal
import time
from typing import Any

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


def train_run(algo, key):
    """The whole run of an algorithm as one jitted pure function of the key: (runner, UpdateStats)."""
    import jax

    from jaxrl.core.loop import make_train

    return jax.jit(make_train(algo))(key)


def three_chunks(algo, steps_per_update: int):
    """A 2-seed, 4-env CartPole run of 7 updates of `algo` (a config dataclass) through one compiled chunk
    of 3, run as chunks of 3, 3 and 1: the runner it ends with."""
    from jaxrl.config.schema import TrainConfig
    from jaxrl.run import build

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
