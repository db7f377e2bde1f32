"""Sweeps as one program (`jaxrl.config.sweep`): members ride the seed axis with traced hyperparameters.

Each member must train exactly as a separate run with its settings and the same seed (float
leaves within rounding: a vmap batches the matmuls), the whole sweep must compile once, and the
run's outputs (metrics.csv, summary.json, the closing lines, eval) must say which member is which.
"""

import csv
import dataclasses
import json
import shutil

import jax
import numpy as np
import pytest

import jaxrl
from jaxrl import build
from jaxrl.algos import base
from jaxrl.cli.train import main as train_main
from jaxrl.config.schema import TrainConfig
from jaxrl.config.sweep import Sweep, flatten, parse
from jaxrl.config.validate import validate
from tests.helpers import count_traces, difference, env_config

TOLERANCE = 1e-4  # float leaves after 2 updates; integer leaves (env states, counters) must match exactly
BASE = {"num_envs": 16, "total_timesteps": 4096, "num_chunks": 2, "num_seeds": 2, "progress": False}


def test_flatten_and_grid_order():
    assert flatten({"algo": {"lr": [1, 2]}, "env.reward_apple": [3]}) == {"algo.lr": [1, 2], "env.reward_apple": [3]}
    cfg = TrainConfig(
        env=env_config("snake"),
        algo=base.get("ppo").config(),
        sweep={"algo": {"lr": [1e-4, 1e-3], "gamma": [0.9, 0.95, 0.99]}, "env": {"reward_death": [-1]}},
    )
    sweep = parse(cfg)
    assert sweep.size == 6 and sweep.keys == ("algo.lr", "algo.gamma", "env.reward_death")
    assert [m["algo.gamma"] for m in sweep.members] == [0.9, 0.95, 0.99] * 2  # the last key varies fastest
    assert sweep.members[4] == {"algo.lr": 1e-3, "algo.gamma": 0.95, "env.reward_death": -1}
    values = sweep.algo_values(num_seeds=2)  # member-major: member m's seeds are entries 2m, 2m + 1
    np.testing.assert_allclose(values["lr"], np.repeat([1e-4, 1e-4, 1e-4, 1e-3, 1e-3, 1e-3], 2))
    assert sweep.label(4) == "algo.lr=0.001 algo.gamma=0.95 env.reward_death=-1"
    assert Sweep().size == 1 and not Sweep().keys


@pytest.mark.parametrize("name", [*base.algorithms(), "ppo_gru"])  # every registered algorithm
def test_every_float_setting_of_every_algorithm_traces_as_a_sweep(name):
    """Every float field a sweep accepts is a traced value in the compiled chunk: nothing in the
    algorithm's constructor or math may branch on it in Python."""
    algo_name = name.split("_")[0]
    algo = base.get(algo_name).config()
    if name == "ppo_gru":
        algo = dataclasses.replace(algo, network="gru", rnn_hidden=8)
    if algo_name == "dqn":
        algo = dataclasses.replace(algo, learning_starts=64, buffer_size=256, batch_size=16)
    floats = [f.name for f in dataclasses.fields(algo) if str(f.type) == "float"]
    assert {"lr", "gamma"} <= set(floats)
    cfg = TrainConfig(
        env=env_config("CartPole-v1"),
        algo=algo,
        num_envs=4,
        total_timesteps=4096,
        sweep={"algo": {k: [getattr(algo, k)] for k in floats}, "env": {"gravity": [9.8, 5.0]}},
    )
    validate(cfg)
    program = build.program(cfg)
    assert program.population == 2 and set(program.hypers) == set(floats)
    assert program.swept_env_fields == ("gravity",)
    runner = program.abstract_runner()
    jax.eval_shape(program._chunk_fn, runner, program.hypers, np.int32(1))  # traces with every value traced
    np.testing.assert_allclose(runner.envs.params.gravity.shape, (2,))


SWEEPS = {  # (algo, env, sweep, extra settings): algorithm floats, env rewards, and a derived env field
    "ppo": ("ppo", "snake", {"algo.lr": [1e-4, 1e-3], "algo.gamma": [0.9, 0.99]}, {"env.shaping": 0.2}),
    "pqn": ("pqn", "snake", {"algo.q_lambda": [0.3, 0.9], "env.reward_death": [-1.0, -2.0]}, {}),
    "dqn": (
        "dqn",
        "snake",
        {"algo.lr": [1e-4, 1e-3], "algo.epsilon_decay": [0.1, 0.5]},
        {"algo.learning_starts": 512, "algo.batch_size": 64},
    ),
}


@pytest.mark.parametrize(
    "which", ["ppo", pytest.param("pqn", marks=pytest.mark.slow), pytest.param("dqn", marks=pytest.mark.slow)]
)
def test_each_member_trains_like_a_separate_run_with_its_settings(tmp_path, which):
    algo, env, sweep, extra = SWEEPS[which]
    swept = jaxrl.train(env=env, algo=algo, run_dir=tmp_path / "sweep", sweep=sweep, **BASE, **extra)
    runner = swept.restore()[1]
    assert jax.tree.leaves(runner)[0].shape[0] == 4 * BASE["num_seeds"]
    for member in (0, 3):
        settings = swept.summary["members"][[r["member"] for r in swept.summary["members"]].index(member)]["settings"]
        alone = jaxrl.train(env=env, algo=algo, run_dir=tmp_path / f"alone{member}", **BASE, **extra, **settings)
        part = jax.tree.map(lambda x, m=member: x[2 * m : 2 * m + 2], runner)
        assert difference(part, alone.restore()[1]) <= TOLERANCE, (member, settings)
    if which == "ppo":  # Snake's shaping discounts with each member's own gamma (it follows algo.gamma)
        np.testing.assert_allclose(runner.envs.params.shaping_gamma, np.repeat([0.9, 0.99, 0.9, 0.99], 2))


def test_a_sweep_compiles_one_chunk_program(monkeypatch):
    traces = count_traces(monkeypatch)
    cfg = TrainConfig(
        env=env_config("CartPole-v1"),
        algo=base.get("ppo").config(),
        num_envs=4,
        num_seeds=2,
        total_timesteps=4 * 128 * 7,
        num_chunks=3,
        sweep={"algo": {"lr": [1e-4, 3e-4, 1e-3]}},
    )
    program = build.program(cfg)
    runner, _ = program.compile()
    for active in (3, 3, 1):
        runner, stats = program.run_chunk(runner, active)
    assert traces == [3], traces
    assert stats.episodes.episodes.shape == (6, 1)


def test_sweep_outputs_name_every_member(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = train_main(
        [
            "env=CartPole-v1",
            "num_envs=4",
            "total_timesteps=8192",
            "num_chunks=4",
            "num_seeds=2",
            "progress=false",
            "sweep.algo.lr=[3e-5,3e-3]",
            f"run_dir={run_dir}",
        ]
    )
    assert code == 0
    lines = capsys.readouterr().out.strip().splitlines()
    summary = json.loads((run_dir / "summary.json").read_text())
    ranked = summary["members"]
    assert [r["final_return"] for r in ranked] == sorted((r["final_return"] for r in ranked), reverse=True)
    best = ranked[0]
    assert summary["best_member"] == best["member"] and summary["num_members"] == 2
    assert len(best["final_return_per_seed"]) == 2
    assert lines[-1].startswith(f"best: member {best['member']} (algo.lr={best['settings']['algo.lr']:g})")
    with open(run_dir / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 * 2 and {r["member"] for r in rows} == {"0", "1"}
    assert {float(r["algo.lr"]) for r in rows} == {3e-5, 3e-3}
    assert (run_dir / "learning_curve.png").stat().st_size > 0
    saved = (run_dir / "config.yaml").read_text()
    assert "sweep:" in saved and "lr:" in saved

    run = jaxrl.load(run_dir)
    assert [r["member"] for r in run.ranking] == [r["member"] for r in ranked]
    default = run.evaluate(episodes=2)  # the best member unless told
    assert default["member"] == best["member"] and len(default["return_per_seed"]) == 2
    other = 1 - best["member"]
    assert run.evaluate(episodes=2, member=other)["settings"] == ranked[1]["settings"]
    assert run.policy_of(seed=1, member=other).params is not None
    with pytest.raises(jaxrl.ConfigError, match="member=2 is invalid: the run has 2 sweep members"):
        run.evaluate(episodes=2, member=2)


def test_a_sweep_resumes_with_its_members(tmp_path):
    """Resumed from its half-way checkpoint, a sweep ends where the uninterrupted sweep ended."""
    settings = {**BASE, "num_seeds": 1, "checkpoint.every_steps": 2048, "checkpoint.keep": 5}
    whole = jaxrl.train(env="CartPole-v1", run_dir=tmp_path / "whole", sweep={"algo.ent_coef": [0.0, 0.05]}, **settings)
    copy = tmp_path / "copy"
    shutil.copytree(whole.run_dir, copy)
    shutil.rmtree(copy / "checkpoints" / "4096")  # back to the half-way checkpoint
    resumed = jaxrl.train(resume=copy, progress=False)
    assert resumed.config.sweep == {"algo": {"ent_coef": [0.0, 0.05]}}
    assert difference(whole.restore()[1], resumed.restore()[1]) <= TOLERANCE
    assert resumed.summary["num_members"] == 2
