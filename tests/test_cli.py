"""The command line: a smoke run writing the run directory, and bad input as one clear line."""

import csv
import json
import os
import subprocess
import sys

import pytest
import yaml

import jaxrl
from jaxrl.cli.train import main
from jaxrl.config.compose import compose_config
from jaxrl.config.environment import make_env


def test_smoke_run_writes_the_run_directory(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = main(
        [
            "env=snake",
            "env.size=6",
            "num_envs=64",
            "algo.num_steps=8",
            "total_timesteps=4096",
            "num_chunks=2",
            "num_seeds=2",
            f"run_dir={run_dir}",
            "progress=false",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert out.startswith("device: cpu x1") and "rounded down" not in out
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["env"]["size"] == 6 and config["num_envs"] == 64 and config["algo"]["name"] == "ppo"
    with open(run_dir / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    for column in ("env_steps", "sps", "episode_return", "episode_length", "score", "win_rate"):
        assert column in rows[0]
    assert int(rows[-1]["env_steps"]) == 4096
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in ("env_steps", "wall_s", "compile_s", "sps", "final_return", "final_score", "final_win_rate"):
        assert key in summary, key
    assert summary["env_steps"] == 2 * 4096 and summary["sps"] > 0
    assert len(summary["final_score_per_seed"]) == 2
    from jaxrl.config.formats import FORMAT

    assert json.loads((run_dir / "run.json").read_text()) == {"format": FORMAT, "jaxrl": jaxrl.__version__}


def test_dqn_smoke_run(tmp_path, capsys):
    run_dir = tmp_path / "dqn"
    args = ["env=snake", "algo=dqn", "env.size=6", "num_envs=32", "algo.buffer_size=2048", "algo.learning_starts=256"]
    args += ["algo.train_freq=64", "total_timesteps=2100", "num_chunks=2", f"run_dir={run_dir}", "progress=false"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "algo: dqn" in out and "(2,048 env steps: total_timesteps rounded down to whole updates)" in out
    with open(run_dir / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 and int(rows[-1]["env_steps"]) == 2048
    assert {"loss", "q_mean", "epsilon", "score"} <= set(rows[0])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["algo"] == "dqn" and summary["env_steps"] == 2048 and "final_score" in summary


def test_gymnax_id_runs(tmp_path):
    run_dir = tmp_path / "cp"
    assert main(["env=Acrobot-v1", "total_timesteps=2048", "num_chunks=1", f"run_dir={run_dir}"]) == 0
    assert json.loads((run_dir / "summary.json").read_text())["env"] == "Acrobot-v1"


@pytest.mark.parametrize(
    "args,expected",
    [
        (["env=snak"], "unknown env 'snak'; valid: snake, grid, arena, arena_open, CartPole-v1"),
        (["num_envz=4"], "unknown setting 'num_envz'"),
        (["num_envs=-4"], "num_envs=-4 is invalid: must be an integer from 1 to 2147483647"),
        (["algo.lr=banana"], "bad override 'algo.lr=banana'"),
        (["algo=sac"], "unknown algo 'sac'; valid: ppo, a2c, dqn, pqn"),
        (["env=Pendulum-v1", "algo=dqn"], "algo=dqn needs discrete actions; Pendulum-v1 has continuous ones"),
        (["algo=dqn", "algo.buffer_size=2000000000"], "lower algo.buffer_size (or num_seeds)"),
        (["algo=dqn", "num_envs=8", "algo.train_freq=12"], "algo.train_freq=12 must be a multiple of num_envs=8"),
        (["algo=dqn", "algo.tau=1.5"], "algo.tau=1.5 is invalid: must be in [0, 1]"),
        (["algo=dqn", "algo.n_step=0"], "algo.n_step=0 is invalid: must be a finite number > 0"),
        (["env.size=2"], "env: snake size must be an integer from 4 to 64, got 2"),
        (["env=CartPole-v1", "env.size=12"], "unknown setting 'env.size'"),
        (["device=npu"], "device=npu is invalid: allowed auto, cpu, tpu, gpu, metal"),
        (["device=tpu"], "device=tpu requested but jax sees no such backend"),
        (["algo.num_minibatches=3", "num_envs=8", "algo.num_steps=4"], "algo.num_minibatches=3 must divide"),
        (["algo.network=resnet"], "algo.network=resnet is invalid: allowed mlp, cnn"),
        (["total_timesteps=1"], "total_timesteps=1 is below one update"),
        (["seed"], "bad argument 'seed': expected key=value"),
        (["preset=turbo"], "unknown preset 'turbo'; valid: fast, heavy, beast"),
        (
            ["experiment=snake_fast"],
            "unknown experiment 'snake_fast'; valid: arena_league, arena_selfplay, snake_perfect",
        ),
        (
            ["experiment=snake_perfect", "env=grid"],
            "experiment=snake_perfect is a recipe for env=snake; it cannot run with env=grid",
        ),
        (["preset=fast", "algo=dqn"], "preset=fast sets PPO's rollout and minibatches; it does not apply to algo=dqn"),
        (
            ["preset=fast", "num_envs=1000"],
            (
                "algo.minibatch_size=4096 must divide num_envs * algo.num_steps = 1000 * 32 = 32000"
                " (or use algo.minibatch_size=auto)"
            ),
        ),
        (["algo.minibatch_size=big"], "algo.minibatch_size=big is invalid: a positive integer or auto"),
        (["algo.minibatch_size=0"], "algo.minibatch_size=0 is invalid: a positive integer or auto"),
        (["checkpoint.keep=0"], "checkpoint.keep=0 is invalid: must be >= 1"),
        (["env=grid", "env.view=9"], "env: grid view must be 3, 5 or 7, got 9"),
        (["env=grid", "env.num_agents=0"], "env: grid num_agents must be an integer from 1 to size^2/2, got 0"),
        (["env=grid", "env.wall_density=2"], "env.wall_density=2.0 is invalid: must be in [0, 1]"),
        (["env=grid", "env.resource_density=-0.1"], "env.resource_density=-0.1 is invalid: must be in [0, 1]"),
        (
            ["env=grid", "env.size=12", "env.max_steps_in_episode=10"],
            "env.max_steps_in_episode=10 is invalid: must be an integer from size (12) to 2147483647",
        ),
        (["env=grid", "env.regrow_delay=0"], "env.regrow_delay=0 is invalid: must be an integer from 1 to 32767"),
        (["env=grid", "env.reward_collect=nan"], "env.reward_collect=nan is invalid: must be a finite float32"),
        (["env=grid", "env.reward_step=1e39"], "env.reward_step=1e+39 is invalid: must be a finite float32"),
        (
            ["env.max_steps_in_episode=3000000000"],
            "env.max_steps_in_episode=3000000000 is invalid: must be an integer from 1 to 2147483647",
        ),
        (
            ["env=grid", "algo=dqn", "num_envs=100"],
            "algo.train_freq=64 must divide num_envs=100 (or be a multiple of it), e.g. algo.train_freq=100",
        ),
        (["env.hunger_limit=0"], "env.hunger_limit=0 is invalid: must be an integer from 1 to 2147483647"),
        (
            ["env=grid", "curriculum=[{steps: 1e5, wall_density: 0.3}, {wall_density: 1.5}]"],
            "curriculum phase 2: wall_density=1.5 is invalid: must be in [0, 1]",
        ),
        (
            ["env=grid", "env.num_agents=4", "algo=dqn", "num_envs=8", "algo.n_step=1", "algo.train_freq=8"]
            + ["algo.buffer_size=50"],
            (
                "algo.buffer_size=50 is too small: it must hold at least"
                " (algo.n_step + steps per update) * num_envs * env.num_agents = 64 transitions"
            ),
        ),
    ],
)
def test_bad_input_is_one_line(args, expected, capsys, tmp_path):
    code = main(args + [f"run_dir={tmp_path / 'never'}"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: ") and expected in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "never").exists()


def test_entry_point_exit_code_without_traceback(tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-m", "jaxrl.train", "num_envs=-4"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: num_envs=-4 is invalid: must be an integer from 1 to 2147483647"
    assert not (tmp_path / "runs").exists()


SOURCE_TREE_SCRIPT = """
import sys
# No install mapping: only what a plain `pip install .` leaves when Python runs in the checkout.
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in getattr(f, "__module__", "")]
sys.path_hooks[:] = [h for h in sys.path_hooks if "editable" not in getattr(h, "__module__", "")]
sys.path_importer_cache.clear()
sys.path.insert(0, ".")
import jaxrl, jaxrl.configs, jaxrl.envs, jaxrl.bench
from jaxrl.config.compose import compose_config
cfg, _ = compose_config(["env=snake", "preset=fast"])
print(jaxrl.__file__, jaxrl.configs.__file__, jaxrl.envs.__file__, jaxrl.bench.__file__, cfg.num_envs, cfg.algo.hidden)
"""


def test_configs_are_found_when_jaxrl_is_imported_from_a_checkout(tmp_path):
    """`pip install .` then `python -m jaxrl.train` in the repository root imports ./jaxrl, whose
    configs, envs and bench are ./configs, ./envs and ./bench (the install maps them into the package;
    the checkout cannot)."""
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for name in ("jaxrl", "configs", "envs", "bench"):
        shutil.copytree(root / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "results"))
    shutil.copy(root / "pyproject.toml", tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", SOURCE_TREE_SCRIPT],
        capture_output=True,
        text=True,
        env=dict(os.environ, JAX_PLATFORMS="cpu"),
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    package, configs, envs, bench, num_envs, hidden = proc.stdout.split(maxsplit=5)
    for name, path in (("jaxrl", package), ("configs", configs), ("envs", envs), ("bench", bench)):
        assert Path(path).resolve() == (tmp_path / name / "__init__.py").resolve()
    assert (num_envs, hidden.strip()) == ("512", "[128, 128]")


@pytest.mark.parametrize(
    "preset, expected",
    [
        ("fast", (512, 32, 4096, 4, [128, 128])),
        ("heavy", (2048, 64, 16384, 6, [512, 256])),
        ("beast", (8192, 128, 65536, 8, [1024, 512, 512, 256])),
    ],
)
def test_presets_set_envs_rollout_minibatch_epochs_and_network(preset, expected):
    cfg, _ = compose_config(["env=CartPole-v1", f"preset={preset}", "total_timesteps=2e6"])
    a = cfg.algo
    assert (cfg.num_envs, a.num_steps, a.minibatch_size, a.update_epochs, a.hidden) == expected
    wins, _ = compose_config(["env=CartPole-v1", f"preset={preset}", "num_envs=1024", "algo.update_epochs=2"])
    assert (wins.num_envs, wins.algo.update_epochs) == (1024, 2)  # the command line beats the preset


@pytest.mark.parametrize(
    "num_envs, num_steps, num_minibatches, expected_size",
    [(6, 10, 4, 15), (7, 10, 4, 14), (13, 1, 2, 1), (512, 32, 4, 4096)],
)
def test_minibatch_size_auto_is_the_largest_divisor_giving_enough_minibatches(
    num_envs, num_steps, num_minibatches, expected_size
):
    from jaxrl.algos.ppo import PPO
    from jaxrl.algos.ppo import minibatches as ppo_minibatches

    overrides = [f"num_envs={num_envs}", f"algo.num_steps={num_steps}", f"algo.num_minibatches={num_minibatches}"]
    cfg, _ = compose_config(["env=CartPole-v1", *overrides, "algo.minibatch_size=auto", "total_timesteps=1e5"])
    batch = num_envs * num_steps
    assert batch // ppo_minibatches(cfg) == expected_size
    assert batch % expected_size == 0 and batch // expected_size >= num_minibatches
    assert PPO(cfg, *make_env(cfg)).minibatch_size == expected_size


def test_final_figures_reach_back_to_the_last_chunks_that_finished_an_episode():
    from jaxrl.run.hooks import final_figures

    chunk = lambda episodes, ret: {
        "env_steps": 0,
        "return_sum": [ret],
        "length_sum": [10.0 * episodes],
        "episodes": [episodes],
    }
    # 20 chunks: the last ~10% (2 chunks) finished no episode; chunk 16 finished 2 with return 3 each.
    history = [chunk(4, 4.0)] * 15 + [chunk(2, 6.0)] + [chunk(0, 0.0)] * 4
    summary = final_figures(history, num_seeds=1, agents=1)
    assert summary["final_return"] == 3.0 and summary["final_return_per_seed"] == [3.0]
    history[-1] = chunk(1, 7.0)  # an episode in the last 10%: only that span counts
    assert final_figures(history, num_seeds=1, agents=1)["final_return"] == 7.0


def test_experiment_snake_perfect_is_a_whole_recipe_and_the_command_line_beats_it():
    cfg, _ = compose_config(["experiment=snake_perfect"])
    assert (cfg.env.name, cfg.algo.name, cfg.env.size) == ("snake", "ppo", 10)
    assert (cfg.env.view, cfg.env.actions) == ("ego", "relative")
    assert cfg.env.hunger_limit >= cfg.env.size**2  # a legal game is never cut short
    plain, _ = compose_config([])
    assert (plain.env.hunger_kills, plain.algo.hidden) == (None, [64, 64])  # the default run is untouched
    assert cfg.curriculum == [] and plain.curriculum[0]["reward_step"] < 0  # nor does the recipe take its phases
    wins, _ = compose_config(["experiment=snake_perfect", "num_envs=256", "env.shaping=0", "algo.lr=1e-4"])
    assert (wins.num_envs, wins.env.shaping, wins.algo.lr) == (256, 0.0, 1e-4)
    _, params = make_env(cfg)
    assert params.shaping_gamma == pytest.approx(cfg.algo.gamma) and cfg.algo.gamma != 0.99  # not the env's default


def test_snake_shaping_discounts_with_the_learners_gamma_unless_set():
    for algo in ("ppo", "dqn"):
        cfg, _ = compose_config(["env=snake", f"algo={algo}", "algo.gamma=0.97", "env.shaping=0.2"])
        assert make_env(cfg)[1].shaping_gamma == pytest.approx(0.97)
    cfg, _ = compose_config(["env=snake", "algo.gamma=0.97", "env.shaping_gamma=0.9"])
    assert make_env(cfg)[1].shaping_gamma == pytest.approx(0.9)  # set explicitly: kept


def test_a_project_with_its_own_envs_and_bench_packages_trains_from_its_folder(tmp_path):
    """What is installed claims no generic top-level names: from a folder whose own `envs` and `bench`
    packages would break on import, the API, the CLI and the evaluation CLI run, and the folder's
    packages stay the folder's."""
    for name in ("envs", "bench"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"raise RuntimeError('the project folder {name} was imported')\n")
    api = (
        "import jaxrl\n"
        "run = jaxrl.train(env='CartPole-v1', total_timesteps=2048, num_envs=4, run_dir='api', progress=False)\n"
        "print('trained', run.summary['env_steps'])\n"
    )
    env = {**os.environ, "PYTHONPATH": ""}  # the folder is the script's first path entry, as in a user's project
    steps = [
        ([sys.executable, "-c", api], "trained 2048"),
        # the API's program again (the test run's compilation cache serves it): the CLI's way is what is tested
        (
            [
                sys.executable,
                "-m",
                "jaxrl.train",
                "env=CartPole-v1",
                "total_timesteps=2048",
                "num_envs=4",
                "run_dir=cli",
            ],
            "done:",
        ),
        ([sys.executable, "-m", "jaxrl.eval", "cli", "episodes=2", "render=none"], "2 greedy episodes"),
    ]
    for command, said in steps:
        proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
        assert proc.returncode == 0 and said in proc.stdout, proc.stderr[-2000:]
