"""The env part's grid table (`python -m bench.parts.env --env grid`) runs end to end and derives its
ratios from its own figures; the PureJaxRL-shaped reference PPO trains; the train part on its own
(`python -m bench.parts.train`) times a chunk and saves its figures; the open arena on one CPU device per
core steps each device's own worlds; a CPU's figures are named with its family and model; the learning checks' draws
(`python -m bench.checks`) count failures and name the worst draw, and refuse bad input in one line."""

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from jaxrl import envs
from jaxrl.bench.machine import slug as machine_slug
from jaxrl.bench.machine import title
from jaxrl.bench.parts import env as env_part

ROOT = Path(__file__).resolve().parents[2]


def test_grid_table_times_each_agent_count_beside_its_observation_floor(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "navix", None)  # peers count as not installed: ours only
    monkeypatch.setitem(sys.modules, "xminigrid", None)
    args = argparse.Namespace(sizes=[8], steps=3, board=6, repeats=1, agents=[1, 3])
    (row,) = env_part.grid_table(args)
    for k in (1, 3):
        assert row[f"jaxrl_{k}_agents"] > 0 and row[f"obs_floor_{k}_agents"] > 0
        assert row[f"jaxrl_{k}_agents_agent_sps"] == pytest.approx(k * row[f"jaxrl_{k}_agents"])
    assert row["jaxrl_3_agents_ratio"] == pytest.approx(row["jaxrl_3_agents_agent_sps"] / row["jaxrl_1_agents"])
    assert "navix" not in row
    out = capsys.readouterr().out
    assert "navix not installed" in out and "3 agents:" in out and "floor" in out


def test_the_floor_writes_the_grids_observation_shape_from_the_grids_expansion():
    env, _ = envs.make("grid", size=6, num_agents=3)
    words = jnp.array([[0x01000000 | (1 << 16) | (1 << 9) | 1] * env.view] * 3, jnp.uint32)
    obs = env.expand_view_words(words)
    assert obs.shape == (3, env.view, env.view, 4) and obs.dtype == jnp.uint8
    # Bit j of byte lane ch is cell j of channel ch.
    assert obs[0, 0, 0].tolist() == [1, 0, 1, 1] and obs[0, 0, 1].tolist() == [0, 1, 0, 0]
    assert int(obs.sum()) == 3 * env.view * 4
    assert float(env_part.obs_floor_grid(6, 4, 2, 3)(jax.random.key(0))) > 0


@pytest.mark.optimized
def test_the_purejaxrl_shaped_reference_learns_cartpole_on_a_small_budget():
    from jaxrl.bench import checks
    from jaxrl.bench.peers.purejaxrl_ref import run_reference

    # 39 updates of 512 steps; the bar and its measured draws: jaxrl.bench.checks, docs/reliability.md.
    r = run_reference("CartPole-v1", 0, TOTAL_TIMESTEPS=2e4)
    assert set(r) == {"sps", "compile_s", "final_return", "seconds"}
    assert math.isfinite(r["sps"]) and r["sps"] > 0
    assert math.isfinite(r["compile_s"]) and r["compile_s"] > 0
    checks.assert_holds("purejaxrl_ppo_small", {"return": r["final_return"]})  # random: ~22


def test_the_reference_refuses_a_config_key_purejaxrl_does_not_have():
    from jaxrl.bench.peers.purejaxrl_ref import run_reference

    with pytest.raises(KeyError, match="NUM_ENV"):
        run_reference("CartPole-v1", 0, NUM_ENV=8)  # a typo must not silently train the default


def test_snake_perfect_target_needs_score_wins_and_the_cap_on_each_seed():
    from jaxrl.bench.parts.score import PERFECT_TARGET, meets

    def seed(score, win_rate, seconds):
        return {"greedy": {"score_mean": score, "win_rate": win_rate}, "seconds": seconds, "cap_s": 3600.0}

    assert meets(seed(94.1, 0.96, 3530), PERFECT_TARGET)
    assert meets(seed(90.0, 0.5, 3600), PERFECT_TARGET)  # the bounds count
    assert not meets(seed(89.9, 0.9, 3000), PERFECT_TARGET)  # score short
    assert not meets(seed(95.0, 0.49, 3000), PERFECT_TARGET)  # too few wins
    assert not meets(seed(97.0, 1.0, 3601), PERFECT_TARGET)  # past the hour


CORES_CHECK = """
import jax, numpy as np
from jaxrl.bench.parts.arena import cores_run, world_run
settings = dict(rules=RULES, width=16, height=14, num_snakes=3, num_food=4, view=5)
key = jax.random.key(7)
run = cores_run("arena_open", 2, 30, **settings)
assert "num_partitions=2" in run.lower(key).compile().as_text()  # one program over both devices
split = float(run(key))
alone = [float(world_run("arena_open", 2, 30, **settings)(k)) for k in jax.random.split(key, len(jax.devices()))]
print(len(jax.devices()), split, sum(alone), alone[0] != alone[1])
"""


@pytest.mark.parametrize("rules", ["battlesnake", "pufferlib"])
def test_the_open_arena_on_one_cpu_device_per_core_steps_each_devices_own_worlds(rules):
    """bench's per-core rows (`cores_run`): with 2 CPU devices each steps its own 2 worlds from its own key, so
    the total equals two separate runs of those keys, and the two differ."""
    import os

    env = {**os.environ, "JAX_NUM_CPU_DEVICES": "2", "JAX_PLATFORMS": "cpu"}
    script = CORES_CHECK.replace("RULES", repr(rules))
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    devices, split, alone, differ = proc.stdout.split()
    assert devices == "2" and differ == "True"
    assert float(split) == pytest.approx(float(alone), rel=1e-5)


def test_a_cpus_title_and_results_folder_name_its_family_and_model_where_known():
    """Two Xeons share one model name and differ 1.65x in speed: the family and model tell them apart."""
    xeon = {"cpu": "Intel(R) Xeon(R) Processor", "cores": 2, "platform": "cpu"}
    known = {**xeon, "cpu_family": "6", "cpu_model_number": "207"}
    assert title(known) == "2-core Intel(R) Xeon(R), family 6 model 207 (CPU)"
    assert machine_slug(known) == "cpu-2c-intel-r-xeon-r-model-207"
    assert title(xeon) == "2-core Intel(R) Xeon(R) (CPU)" and machine_slug(xeon) == "cpu-2c-intel-r-xeon-r"
    long = {**known, "cpu": "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", "cores": 192}
    assert machine_slug(long).endswith("-model-207") and len(machine_slug(long)) <= 60  # the model kept whole
    gpu = {"platform": "gpu", "device": "gpu:NVIDIA H200", "cpu_family": "25", "cpu_model_number": "17"}
    assert title(gpu) == "NVIDIA H200" and machine_slug(gpu) == "nvidia-h200"


def test_the_train_part_on_its_own_times_one_chunk_and_saves_its_figures(tmp_path, capsys):
    from jaxrl.bench.parts import train

    out = tmp_path / "ppo.json"
    assert train.main(["--env", "CartPole-v1", "--updates", "2", "--out", str(out), "num_envs=4"]) == 0
    saved = json.loads(out.read_text())
    assert saved["benchmark"] == "train_throughput" and saved["env"] == "CartPole-v1" and saved["num_envs"] == 4
    assert saved["timed_steps"] == 2 * saved["steps_per_update"] and saved["sps"] > 0 and saved["machine"]["jax"]
    assert "PPO on CartPole-v1:" in capsys.readouterr().out


def test_vs_purejaxrl_ratios_are_best_against_best_and_median_against_median():
    from jaxrl.bench.parts.train import summarize

    def runs(*sps):
        return [{"sps": s, "compile_s": 1.0, "final_return": 10.0} for s in sps]

    t = summarize({"purejaxrl": runs(100, 200, 400), "jaxrl": runs(300, 600, 900)})
    assert t["sps_ratio"] == pytest.approx(900 / 400) and t["sps_ratio_median"] == pytest.approx(600 / 200)
    assert t["jaxrl"]["final_return_mean"] == 10.0 and t["compile_ratio"] == 1.0


def test_the_seeds_part_reports_each_seed_the_worst_beside_the_mean_and_the_env_groups():
    from jaxrl.bench.parts import seeds

    s = seeds.spread([400.0, 500.0, 300.0, 480.0])
    assert (s["mean"], s["worst"], s["best"]) == (420.0, 300.0, 500.0)
    assert (
        abs(s["se"] - s["sd"] / 2) < 1e-12 and abs(s["sd"] - (24800 / 3) ** 0.5) < 1e-9
    )  # deviations -20, 80, -120, 60; n - 1 = 3
    row = {"label": "PPO on CartPole-v1", "seeds": 4, "seconds": 12.0, "greedy_figure": "return"}
    result = {
        "rows": [{**row, "greedy": s, "train": seeds.spread([1.0, 2.0, 3.0, 4.0])}],
        "env_groups": [{"env_groups": g, **seeds.spread([450.0, 350.0 - g])} for g in (1, 4)],
    }
    md = seeds.report(result)
    assert "| PPO on CartPole-v1 | 4 | 420.0 | 300.0 | 500.0 | 400.0, 500.0, 300.0, 480.0 | 2.5 | 1.0 | 12 |" in md
    assert "| 4 | 2 | 398.0 +- 52.0 | 346.0 | 1 |" in md
    lines = seeds.headlines(result)
    assert lines[0]["figure"] == "mean 420.0, worst seed 300.0, best 500.0; training return: worst seed 1.0"
    assert "4 groups: 398.0 +- 52.0, worst 346.0" in lines[1]["figure"]
    quick = {**result, "env_groups": []}  # quick mode leaves the env groups to full mode
    assert "Env groups" not in seeds.report(quick) and len(seeds.headlines(quick)) == 1


def test_the_algos_part_reports_what_quick_mode_ran_and_no_line_for_what_it_left_out():
    from jaxrl.bench.parts import algos

    chain = {"per_seed": [1.0], "mean": 1.0, "env_steps": 4096, "wall_s": 2.0, "sps": 2e3, "reached_0.9": 2048}
    grid = {"env_steps": 1024, "wall_s": 3.0, "sps": 341.0, "final_world_return": 2.0, "greedy_world_return": 4.0}
    quick = {
        "memory_chain": [{**chain, "network": "gru"}, {**chain, "network": "mlp", "mean": 0.0}],
        "recurrent_sps": [{"network": "feed-forward (default)", "sps": 200.0}, {"network": "gru 128", "sps": 50.0}],
        "grid": [{**grid, "network": "cnn"}, {**grid, "network": "cnn + gru", "world_return_at_cnn_wall": 1.5}],
        "minatar": {"env_steps": 4096, "wall_s": 1.0, "sps": 4096.0, "final_return": None},
    }
    lines = {h["what"]: h["figure"] for h in algos.headlines(quick)}
    assert lines["Snake PPO steps/s, recurrent over feed-forward"] == "gru 128 0.25x"
    assert lines["grid, 8 agents, view 3: greedy world return, CNN + GRU against CNN"] == (
        "4.0 in 3 s against 4.0 in 3 s (same steps)"
    )
    assert not any("PQN" in what for what in lines)  # PQN on CartPole and against DQN: full mode's
    md = algos.report(quick)
    assert "| gru 128 | 50 | 0.25x |" in md and "Snake, shipped configs" not in md and "1 agent" not in md
    q = {"env_steps": 8192, "wall_s": 1.0, "sps": 8192.0, "final_score": 0.5, "greedy_score": 0.25}
    full = {
        **quick,
        "pqn_cartpole": {"per_seed": [500.0], "mean": 500.0, "env_steps": 4096, "wall_s": 1.0, "sps": 4096.0},
        "snake": [{**q, "algo": "dqn"}, {**q, "algo": "pqn"}],
        "grid": [*quick["grid"], {**grid, "network": "cnn, the GRU's wall-clock", "env_steps": 2048}],
        "q_grid": [{**q, "algo": a, "final_return": 1.0, "greedy_return": 2.0} for a in ("dqn", "pqn")],
    }
    lines = {h["what"]: h["figure"] for h in algos.headlines(full)}
    assert lines["PQN on CartPole-v1"] == "500.0 at 4,096 steps"
    assert lines["grid, 8 agents, view 3: greedy world return, CNN + GRU against CNN"].endswith(
        " and 4.0 in 3 s (2,048 steps)"
    )
    assert "Snake, PQN against DQN (shipped configs)" in lines and len(lines) == 6
    assert lines["grid, PQN against DQN (shipped configs): greedy return"] == (
        "2.0 in 1 s (8.19k/s) against 2.0 in 1 s (8.19k/s)"
    )
    assert "Snake, shipped configs" in algos.report(full)


@pytest.mark.optimized
def test_the_checks_count_failed_draws_and_name_the_worst(monkeypatch, tmp_path, capsys):
    from jaxrl.bench import checks

    figures = [{"r": 5.0, "d": 1.0}, {"r": 3.0, "d": 0.0}, {"r": float("nan"), "d": 1.0}, {"r": 7.0, "d": 1.0}]
    case = checks.Case("fake", "tests/x.py::t", "a fake case", lambda first, n: figures[first : first + n])
    monkeypatch.setitem(checks.CASES, "fake", case)
    monkeypatch.setitem(checks.CHECKS, "fake", [checks.Check("fake", "r", ">", 4), checks.Check("fake", "d", ">=", 1)])
    result = checks.measure("fake", draws=4, first=0, batch=3)  # two programs: draws 0-2 and 3
    assert result["figures"] == figures
    by_figure = {c["figure"]: c for c in result["checks"]}
    assert by_figure["r"]["failed"] == 2 and by_figure["r"]["worst"] == 3.0  # 3.0 and NaN fail
    assert by_figure["d"]["failed"] == 1 and by_figure["d"]["worst"] == 0.0
    assert "| fake: r | > 4 | 4 | 2 | 3 |" in checks.table([result])
    with pytest.raises(AssertionError, match=r"fake: r > 4 \(got 3\)"):
        checks.assert_holds("fake", figures[1])
    checks.assert_holds("fake", figures[0])
    assert checks.Check("x", "v", "<=", 0.3).holds(-0.2) and not checks.Check("x", "v", "<=", 0.3).holds(0.5)
    # a saved record is scored again with today's bars
    saved = tmp_path / "draws.jsonl"
    saved.write_text(json.dumps(result) + "\n")
    monkeypatch.setitem(checks.CHECKS, "fake", [checks.Check("fake", "r", ">", 2)])
    assert checks.main(["--table", str(saved)]) == 0
    assert "| fake: r | > 2 | 4 | 1 | 3 | 5 | 2 | 1.5 |" in capsys.readouterr().out  # only the NaN fails now
    again = checks.summarize("fake", [{"r": 9.0, "d": 1.0}] * 2, 4, 1.0)
    saved.write_text(json.dumps(result) + "\n" + json.dumps(again) + "\n")
    assert checks.main(["--table", str(saved)]) == 0
    printed = capsys.readouterr().out
    # a case drawn again: its latest record
    assert "| fake: r | > 2 | 2 | 0 | 9 |" in printed and "| 4 | 1 | 3 |" not in printed
    assert checks.main(["--table", str(tmp_path / "missing.jsonl")]) == 2
    assert capsys.readouterr().err.startswith("error: --table=")


def test_a_learning_check_refuses_a_run_compiled_without_xlas_optimizations():
    import jax

    from jaxrl.bench import checks

    before = jax.config.read("jax_disable_most_optimizations")
    jax.config.update("jax_disable_most_optimizations", True)
    try:
        with pytest.raises(AssertionError, match="learning check ppo_cartpole_fp32: XLA's optimizations are off"):
            checks.assert_holds("ppo_cartpole_fp32", {"return": 500.0})
    finally:
        jax.config.update("jax_disable_most_optimizations", before)


def test_every_learning_check_names_a_test_that_exists_and_bars_on_figures_it_reads():
    from jaxrl.bench import checks

    for name, case in checks.CASES.items():
        assert checks.CHECKS[name], name
        if case.test == checks.BENCH_ONLY:
            continue
        path, _, function = case.test.partition("::")
        assert function.split("[")[0] in (ROOT / path).read_text(), case.test


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "error: unknown case 'nope'; known: ppo_cartpole_fp32,"),
        (["--draws", "0"], "error: --draws=0 must be >= 1"),
        (["--first", "-1"], "error: --first=-1 must be >= 0"),
        (["pqn_cartpole", "--draws", "1"], "error: XLA's optimizations are off"),  # tests compile without them
    ],
)
def test_the_checks_command_refuses_bad_input_in_one_line(args, message):
    proc = subprocess.run(
        [sys.executable, "-m", "bench.checks", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2 and proc.stderr.startswith(message) and proc.stderr.count("\n") == 1, proc.stderr
