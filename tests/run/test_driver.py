"""The host loop keeps a chunk queued ahead of its host work, and hands the runner only to chunks a hook needs."""

import jax
import numpy as np

import jaxrl
from jaxrl.run.driver import Hook

SETTINGS = {"env": "CartPole-v1", "num_envs": 4, "algo.num_steps": 16, "total_timesteps": 64 * 8, "num_chunks": 8}


class Record(Hook):
    """What the loop hands the hooks: per chunk, the steps after it, whether a runner came, the planned phase."""

    def __init__(self):
        self.seen: list[tuple[int, bool]] = []
        self.planned: list[int] = []

    def before_chunk(self, ctx, runner, plan):
        self.planned.append(plan.start)
        return runner

    def after_chunk(self, ctx, runner, chunk):
        self.seen.append((chunk.env_steps, runner is not None))


class Snapshot(Hook):
    """Needs the runner after every second chunk (like a checkpoint) and keeps its parameters."""

    def __init__(self):
        self.params: dict[int, list[np.ndarray]] = {}

    def needs_runner(self, ctx, done_updates):
        return done_updates % 2 == 0

    def after_chunk(self, ctx, runner, chunk):
        if runner is not None:
            self.params[chunk.env_steps] = [np.asarray(x) for x in jax.tree.leaves(runner.params)]


def test_chunks_run_ahead_except_where_a_hook_needs_the_runner(tmp_path):
    record, snapshot = Record(), Snapshot()
    run = jaxrl.train(run_dir=tmp_path / "a", progress=False, hooks=[record, snapshot], **SETTINGS)
    steps = [s for s, _ in record.seen]
    assert steps == [64 * k for k in range(1, 9)]
    # Chunks ending at an odd update count ran ahead (no runner); even ones were held for the snapshot.
    assert [held for _, held in record.seen] == [k % 2 == 0 for k in range(1, 9)]
    assert sorted(snapshot.params) == [128, 256, 384, 512]
    # A chunk run ahead is planned before the previous one's host work: all eight planned, in order.
    assert record.planned == list(range(8))
    assert run.summary["env_steps_per_seed"] == 512

    # Running ahead changes nothing: the same seed without it (a hook holding every chunk) ends identical.
    class HoldAll(Snapshot):
        def needs_runner(self, ctx, done_updates):
            return True

    held = HoldAll()
    jaxrl.train(run_dir=tmp_path / "b", progress=False, hooks=[held], **SETTINGS)
    for step, leaves in snapshot.params.items():
        for x, y in zip(leaves, held.params[step], strict=True):
            np.testing.assert_array_equal(x, y)
