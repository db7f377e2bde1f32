"""Loggers: metrics.csv always, TensorBoard event files, W&B offline, learning_curve.png, progress output."""

import csv
import struct
from typing import ClassVar

import pytest
from PIL import Image

from jaxrl.cli.train import main
from jaxrl.config.registry import LOGGERS
from jaxrl.run import loggers

RUN = ["env=CartPole-v1", "num_envs=4", "algo.num_steps=32", "total_timesteps=4096", "num_chunks=4", "num_seeds=2"]


def tensorboard_scalars(directory) -> dict[str, list[tuple[int, float]]]:
    """Scalars of every event file under `directory` (TFRecord framing: length, crc, event proto, crc)."""
    from tensorboardX.proto import event_pb2

    scalars: dict[str, list[tuple[int, float]]] = {}
    for path in directory.glob("events.out.tfevents.*"):
        data = path.read_bytes()
        at = 0
        while at < len(data):
            (length,) = struct.unpack("<Q", data[at : at + 8])
            event = event_pb2.Event.FromString(data[at + 12 : at + 12 + length])
            at += 12 + length + 4
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


def test_tensorboard_events_match_metrics_csv_and_a_curve_is_drawn(tmp_path):
    run_dir = tmp_path / "tb"
    assert main([*RUN, "logger=tensorboard", f"run_dir={run_dir}", "progress=false"]) == 0
    with open(run_dir / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    scalars = tensorboard_scalars(run_dir / "tensorboard")
    returns = scalars["train/episode_return"]
    assert [step for step, _ in returns] == [int(r["env_steps"]) for r in rows]
    assert [v for _, v in returns] == pytest.approx([float(r["episode_return"]) for r in rows], rel=1e-5)
    assert {"train/sps", "train/value_loss", "train/episode_length"} <= set(scalars)
    with Image.open(run_dir / "learning_curve.png") as image:
        assert image.format == "PNG" and image.size == (700, 400)


def test_wandb_offline_run_is_written_in_the_run_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    run_dir = tmp_path / "wb"
    assert main([*RUN, "logger=[wandb,tensorboard]", f"run_dir={run_dir}", "progress=false"]) == 0
    offline = list((run_dir / "wandb").glob("offline-run-*"))
    assert len(offline) == 1
    run_id = (run_dir / "wandb_id.txt").read_text().strip()
    assert list(offline[0].glob(f"run-{run_id}.wandb"))  # the logged history, ready for `wandb sync`
    assert (run_dir / "tensorboard").is_dir()  # several loggers at once


def test_wandb_gets_every_chunk_at_its_env_step(tmp_path, monkeypatch):
    logged = []

    class FakeRun:
        def log(self, values, step):
            logged.append((step, values))

        def finish(self):
            logged.append("finish")

    class FakeWandb:
        @staticmethod
        def init(**kwargs):
            logged.append(kwargs)
            return FakeRun()

    import importlib.machinery
    import sys

    FakeWandb.__spec__ = importlib.machinery.ModuleSpec("wandb", None)
    monkeypatch.setitem(sys.modules, "wandb", FakeWandb)
    run_dir = tmp_path / "fake"
    assert main([*RUN, "logger=wandb", "wandb_project=mine", f"run_dir={run_dir}", "progress=false"]) == 0
    init, *chunks, finish = logged
    assert init["project"] == "mine" and init["dir"] == str(run_dir) and init["config"]["num_envs"] == 4
    assert [step for step, _ in chunks] == [1024, 2048, 3072, 4096] and finish == "finish"
    assert all("episode_return" in values for _, values in chunks)


@pytest.mark.parametrize(
    "args, message",
    [
        (["logger=printer"], "logger=printer is invalid: allowed csv, tensorboard, wandb"),
        (["logger=[tensorboard,bogus]"], "logger=bogus is invalid"),
    ],
)
def test_bad_logger_is_one_line(tmp_path, capsys, args, message):
    assert main([*RUN, *args, f"run_dir={tmp_path / 'x'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "x").exists()


def test_missing_logger_package_is_one_line_before_anything_is_written(tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a))
    assert main([*RUN, "logger=wandb", f"run_dir={tmp_path / 'x'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: logger=wandb needs wandb: pip install 'jaxrl[wandb]'"]
    assert not (tmp_path / "x").exists()


def test_progress_is_a_live_bar_on_a_terminal_and_plain_lines_elsewhere(capsys, monkeypatch):
    plain = loggers.Progress(1000, live=True)  # pytest's stdout is not a terminal
    plain.update(500, 100.0, {"episode_return": 1.5, "score": 2.0})
    plain.close()
    out = capsys.readouterr().out
    assert out.startswith("steps 500/1.00k (50%) | 100 steps/s | ETA 5s | return 1.50 | score 2.00")
    seeds = loggers.Progress(1000, live=True, seeds=4)  # steps per seed, steps/s over all seeds
    seeds.update(500, 100.0, {"episode_return": 1.5})
    assert "| 100 steps/s | ETA 20s |" in capsys.readouterr().out

    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    live = loggers.Progress(1000, live=True, start=200)
    assert live.bar is not None and live.bar.n == 200
    live.update(500, 100.0, {"episode_return": 1.5})
    assert live.bar.n == 500
    live.close()


def test_win_rate_counts_the_ended_worlds_that_won():
    import jax.numpy as jnp

    from jaxrl.core import stats

    done = jnp.array([True, True, False, True])
    won = jnp.array([True, False, True, False])  # the third did not end: its flag is not counted
    info = {"score": jnp.array([97, 40, 3, 12]), "won": won}
    zeros = jnp.zeros(4)
    _, _, step = stats.episode_step(zeros, done, done, info, zeros, zeros.astype(jnp.int32))
    means = stats.means(stats.from_dict(stats.as_dict(step)))
    assert means["win_rate"] == pytest.approx(1 / 3) and means["score"] == pytest.approx(149 / 3)
    without = stats.means(stats.from_dict(stats.as_dict(stats.episode_step(zeros, done, done, {}, zeros, zeros)[2])))
    assert "win_rate" not in without and "score" not in without


class ListLog:
    """A logger of this test: every row it is given, and whether it was closed."""

    opened: ClassVar[list["ListLog"]] = []

    def __init__(self, run_dir, project, config):
        self.run_dir, self.config, self.rows, self.closed = run_dir, config, [], False
        ListLog.opened.append(self)

    def write(self, step, row):
        self.rows.append((step, row))

    def close(self):
        self.closed = True


def test_a_registered_logger_gets_every_chunks_row_and_is_closed(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(LOGGERS, "_entries", LOGGERS.all())  # the registration ends with the test
    loggers.register_logger("list", ListLog)
    assert main([*RUN, "logger=[list,csv]", f"run_dir={tmp_path / 'run'}", "progress=false"]) == 0
    (log,) = ListLog.opened[-1:]
    with open(tmp_path / "run" / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert [step for step, _ in log.rows] == [int(r["env_steps"]) for r in rows] == [1024, 2048, 3072, 4096]
    assert log.rows[-1][1]["episode_return"] == pytest.approx(
        float(rows[-1]["episode_return"]), abs=1e-3
    )  # the csv rounds
    assert log.closed and log.run_dir == tmp_path / "run" and log.config["env"]["name"] == "CartPole-v1"
    assert main([*RUN, "logger=lists", f"run_dir={tmp_path / 'other'}"]) == 2
    assert "logger=lists is invalid: allowed csv, tensorboard, wandb, list" in capsys.readouterr().err


def test_a_logger_whose_package_is_missing_names_it_and_its_extra(monkeypatch):
    monkeypatch.setattr(LOGGERS, "_entries", LOGGERS.all())
    loggers.register_logger("mlflow", ListLog, needs="no_such_module_here", extra="mlflow")
    with pytest.raises(ImportError, match=r"logger=mlflow needs no_such_module_here: pip install 'jaxrl\[mlflow\]'"):
        loggers.check_loggers(("csv", "mlflow"))
    loggers.register_logger("aim", ListLog, needs="no_such_module_here")  # a package of its own, no jaxrl extra
    with pytest.raises(ImportError, match=r"logger=aim needs no_such_module_here: pip install no_such_module_here$"):
        loggers.check_loggers(("aim",))
