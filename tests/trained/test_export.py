"""Policies as ONNX files: onnxruntime acts as JAX does on observations from greedy episodes, for a
feed-forward PPO, a DQN, a recurrent PPO and the arena's champion; the onnxruntime-only Snake example runs."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax2onnx")
ort = pytest.importorskip("onnxruntime")

import jaxrl  # noqa: E402
from jaxrl.cli.export import main as export_main  # noqa: E402
from jaxrl.trained.export import export  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def trained(tmp_path: Path, name: str, **settings) -> Path:
    run = jaxrl.train(run_dir=tmp_path / name, progress=False, **settings)
    return run.run_dir


def check_file(path: Path, meta: dict, count: int) -> None:
    assert path.is_file() and path.with_suffix(".json").is_file()
    assert json.loads(path.with_suffix(".json").read_text()) == meta
    found = meta["check"]
    assert found["observations"] == count and found["agree"] >= 0.999 and found["max_rel"] <= 1e-4
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == meta["inputs"]
    assert [o.name for o in session.get_outputs()] == meta["outputs"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "settings", "scores"),
    [
        ("ppo", {"algo": "ppo", "env": "snake", "total_timesteps": 20_000, "num_envs": 64}, "logits"),
        ("dqn", {"algo": "dqn", "env": "CartPole-v1", "total_timesteps": 20_000}, "q_values"),
        (
            "recurrent",
            {"algo": "ppo", "env": "CartPole-v1", "total_timesteps": 8192, "num_envs": 16, "algo.network": "lstm"},
            "logits",
        ),
    ],
)
def test_an_exported_policy_acts_as_the_jax_one(tmp_path, name, settings, scores):
    run_dir = trained(tmp_path, name, **settings)
    out = tmp_path / "out" / f"{name}.onnx"
    meta = export(jaxrl.load(run_dir), out, check=10_000, say=lambda *_: None)
    check_file(out, meta, 10_000)
    assert meta["scores"] == scores and meta["algo"] == settings["algo"] and meta["env"] == settings["env"]
    if name == "recurrent":  # the carry goes in and comes out: (c, h) of the LSTM
        assert meta["inputs"] == ["obs", "carry_0", "carry_1"]
        assert meta["outputs"] == ["scores", "next_carry_0", "next_carry_1"]
    else:
        assert meta["inputs"] == ["obs"] and meta["outputs"] == ["scores"]


@pytest.mark.slow
def test_the_arena_champion_exports_and_acts_as_jax_does(tmp_path):
    out = tmp_path / "champion.onnx"
    assert export_main(["pretrained:arena-champion-v2", str(out)]) == 0
    meta = json.loads(out.with_suffix(".json").read_text())
    check_file(out, meta, 10_000)
    assert meta["obs_shape"] == [11, 11, 8] and meta["obs_dtype"] == "uint8" and meta["env"] == "arena"


@pytest.mark.slow
def test_the_onnxruntime_only_snake_example_plays(tmp_path):
    out = tmp_path / "snake.onnx"
    assert export_main(["pretrained:snake-v1", str(out), "check=2000"]) == 0
    text = (ROOT / "docs" / "export.md").read_text()
    example = re.search(r"```python\n(# play_snake\.py.*?)```", text, re.S).group(1)
    assert len(example.strip().splitlines()) <= 30
    (tmp_path / "play_snake.py").write_text(example)
    # numpy and onnxruntime only: jax cannot be imported where it runs
    guard = "import sys; sys.modules['jax'] = None; sys.modules['jaxrl'] = None; exec(open('play_snake.py').read())"
    proc = subprocess.run(
        [sys.executable, "-c", guard], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    apples = [int(n) for n in re.findall(r"apples: (\d+)", proc.stdout)]
    assert len(apples) == 5 and np.mean(apples) >= 20, proc.stdout


@pytest.mark.slow
def test_a_continuous_action_policy_is_refused_in_one_line(tmp_path, capsys):
    run_dir = trained(tmp_path, "pendulum", env="Pendulum-v1", total_timesteps=4096)
    assert export_main([str(run_dir), str(tmp_path / "p.onnx")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Pendulum-v1 has continuous actions" in err[0], err
    assert not (tmp_path / "p.onnx").exists()


def test_bad_export_input_is_one_line(tmp_path, capsys):
    cases = [
        (["pretrained:nobody", str(tmp_path / "a.onnx")], "pretrained:nobody is not on the shelf"),
        (["pretrained:snake-v1", str(tmp_path / "a.txt")], "is invalid: the output is a file name ending in .onnx"),
        (["pretrained:snake-v1"], "give what to export and where"),
        (["pretrained:snake-v1", str(tmp_path / "a.onnx"), "check=-1"], "check=-1 is invalid: must be >= 0"),
        (["pretrained:snake-v1", str(tmp_path / "a.onnx"), "colour=red"], "unknown setting 'colour'"),
        ([str(tmp_path / "norun"), str(tmp_path / "a.onnx")], "norun"),
    ]
    for argv, message in cases:
        assert export_main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], (argv, err)
    assert not list(tmp_path.glob("*.onnx"))
