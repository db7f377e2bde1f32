"""Curriculum: phases switch EnvParams between chunks with one compiled chunk, at exact update boundaries."""

import csv
import dataclasses

import numpy as np
import pytest

from jaxrl import envs
from jaxrl.cli.train import main
from jaxrl.config.curriculum import build_phases, traced
from jaxrl.config.schema import ConfigError
from tests.helpers import count_traces

RUN = ["env=CartPole-v1", "num_envs=4", "algo.num_steps=64", "total_timesteps=20480", "num_chunks=8"]
TWO_PHASES = "curriculum=[{steps:6000,max_steps_in_episode:10},{max_steps_in_episode:500}]"


def test_phase_boundaries_round_up_to_whole_updates():
    _, params = envs.make("snake")
    phases = build_phases([{"steps": 6000, "hunger_limit": 30}, {"steps": 3000}, {}], "snake", params, ("size",), 256)
    assert [(p.start_update, p.end_update) for p in phases] == [(0, 24), (24, 36), (36, None)]
    assert phases[0].overrides == {"hunger_limit": 30} and phases[2].overrides == {}


def test_traced_params_have_fixed_dtypes_whatever_the_values():
    _, params = envs.make("snake")
    a, b = traced(params), traced(params.replace(hunger_limit=7, reward_step=-1), like=params)
    for x, y in zip(
        [getattr(a, f) for f in ("hunger_limit", "reward_step")],
        [getattr(b, f) for f in ("hunger_limit", "reward_step")],
        strict=True,
    ):
        assert isinstance(y, np.ndarray) and x.dtype == y.dtype and x.dtype in (np.int32, np.float32)
    assert b.reward_step.dtype == np.float32 and b.reward_step == -1.0


def test_phases_switch_params_without_retracing(tmp_path, monkeypatch):
    traces = count_traces(monkeypatch)
    run_dir = tmp_path / "run"
    assert main([*RUN, TWO_PHASES, f"run_dir={run_dir}", "progress=false"]) == 0
    assert len(traces) == 1  # one compiled chunk served both phases
    with open(run_dir / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    first = [r for r in rows if r["phase"] == "1"]
    second = [r for r in rows if r["phase"] == "2"]
    assert int(first[-1]["env_steps"]) == 6144  # the chunk was cut where phase 1 ends (24 updates of 256)
    assert all(float(r["episode_length"]) <= 10 for r in first)  # truncated at 10 steps
    assert max(float(r["episode_length"]) for r in second) > 20  # the limit is lifted in phase 2
    assert int(second[-1]["env_steps"]) == 20480


@pytest.mark.parametrize(
    "curriculum, message",
    [
        ("[{steps:1000,size:12},{}]", "curriculum phase 1: size changes array shapes"),
        ("[{steps:1000,hunger:3},{}]", "curriculum phase 1: hunger is not a parameter of snake"),
        ("[{hunger_limit:3},{}]", "curriculum phase 1 needs steps"),
        ("[{steps:-5},{}]", "curriculum phase 1: steps=-5 is invalid: must be a finite number > 0"),
        ("[{steps:100},{hunger_limit:2.5}]", "curriculum phase 2: hunger_limit=2.5 is invalid: must be an integer"),
        ("[5]", "curriculum phase 1 must be a mapping"),
    ],
)
def test_bad_curriculum_is_one_line_before_anything_is_written(tmp_path, capsys, curriculum, message):
    run_dir = tmp_path / "never"
    assert main(["env=snake", f"curriculum={curriculum}", f"run_dir={run_dir}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err
    assert not run_dir.exists()


def test_build_phases_rejects_a_number_for_a_bool_field():
    @dataclasses.dataclass
    class P:
        flag: bool = False

    with pytest.raises(ConfigError, match="flag=1 is invalid: must be true or false"):
        build_phases([{"flag": 1}], "probe", P(), (), 10)
