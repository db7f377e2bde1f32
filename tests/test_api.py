"""The Python API: `jaxrl.train(...) -> Run`, `jaxrl.load`, resume, and the CLI's one-line errors as ConfigError."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl
from jaxrl.cli.train import main

SMALL = {"num_envs": 4, "total_timesteps": 2048, "num_chunks": 2, "progress": False}


def rows(metrics):
    """metrics as a list of dicts, whether pandas is installed (a DataFrame) or not."""
    return metrics.to_dict("records") if hasattr(metrics, "to_dict") else metrics


@pytest.fixture(scope="module")
def cartpole(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("api") / "cartpole"
    run = jaxrl.train(
        env="CartPole-v1", seed=2, run_dir=run_dir, algo={"name": "ppo", "num_steps": 32}, **{"algo.lr": 1e-3}, **SMALL
    )
    return run


def test_train_returns_a_run_with_its_config_summary_and_metrics(cartpole):
    run = cartpole
    assert run.run_dir.is_dir() and (run.run_dir / "config.yaml").is_file()
    assert run.config.algo.lr == 1e-3 and run.config.algo.num_steps == 32  # dotted key and nested dict both apply
    assert run.config.seed == 2 and run.config.env.name == "CartPole-v1"
    assert run.summary == json.loads((run.run_dir / "summary.json").read_text())
    assert run.summary["env_steps_per_seed"] == 2048
    table = rows(run.metrics)
    assert [r["env_steps"] for r in table] == [1024, 2048]
    assert all(np.isfinite(r["episode_return"]) for r in table)


def test_evaluate_is_eval_json(cartpole):
    result = cartpole.evaluate(episodes=5)
    assert result == json.loads((cartpole.run_dir / "eval.json").read_text())
    assert result["episodes_per_seed"] == 5 and result["greedy"] is True
    assert {"mean", "median", "max"} <= set(result["return"])


def test_policy_acts_like_evaluation(cartpole):
    policy = cartpole.policy
    obs = jnp.zeros((3, 4), jnp.float32)
    carry, actions = policy(obs, jax.random.key(0))
    assert carry is None and actions.shape == (3,) and set(np.asarray(actions).tolist()) <= {0, 1}
    env, params = cartpole.env()
    obs, _ = env.reset(jax.random.key(2), params)
    assert env.name == "CartPole-v1" and policy(obs[None], jax.random.key(3))[1].shape == (1,)
    sampled = cartpole.policy_of(greedy=False)
    _, a = sampled(jnp.zeros((2000, 4)), jax.random.key(1))
    assert 0 < float(np.mean(a)) < 1  # sampled, not argmax


def test_load_reopens_the_run_and_resume_continues_it(cartpole, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(cartpole.run_dir, copy)
    again = jaxrl.load(copy)
    assert again.summary["env_steps_per_seed"] == 2048 and again.config == cartpole.config
    longer = jaxrl.train(resume=copy, total_timesteps=4096, progress=False)
    assert longer.run_dir == copy and longer.summary["env_steps_per_seed"] == 4096
    assert [r["env_steps"] for r in rows(longer.metrics)][-1] == 4096


def test_replay_writes_the_best_episode_gif(tmp_path):
    run = jaxrl.train(env={"name": "snake", "size": 6}, run_dir=tmp_path / "snake", **{"algo.num_steps": 8}, **SMALL)
    path = run.replay(tmp_path / "best.gif", episodes=3)
    assert path == tmp_path / "best.gif" and path.stat().st_size > 0
    cart = jaxrl.train(env="CartPole-v1", run_dir=tmp_path / "cart", **{"algo.num_steps": 16}, **SMALL)
    with pytest.raises(jaxrl.ConfigError, match="does not draw itself"):
        cart.replay()


@pytest.mark.parametrize(
    "kwargs, argv",
    [
        ({"env": "snake", "num_envs": -4}, ["env=snake", "num_envs=-4"]),
        ({"env": "snake", "bogus": 1}, ["env=snake", "bogus=1"]),
        ({"env": "nope"}, ["env=nope"]),
        ({"algo": {"name": "ppo", "clip_eps": "x"}}, ["algo=ppo", "algo.clip_eps=x"]),
    ],
)
def test_bad_arguments_raise_the_cli_line(kwargs, argv, capsys, tmp_path):
    with pytest.raises(jaxrl.ConfigError) as raised:
        jaxrl.train(run_dir=tmp_path / "r", **kwargs)
    assert main([*argv, f"run_dir={tmp_path / 'r'}"]) == 2
    line = capsys.readouterr().err.strip()
    assert line == f"error: {raised.value}" and "\n" not in line
    assert not (tmp_path / "r").exists()  # nothing was written


def test_load_of_something_else_is_one_line(tmp_path):
    with pytest.raises(jaxrl.ConfigError, match="not a jaxrl run directory"):
        jaxrl.load(tmp_path)
    with pytest.raises(jaxrl.ConfigError, match="no such directory"):
        jaxrl.load(tmp_path / "missing")


@pytest.mark.parametrize(
    "kwargs, argv",
    [
        (
            {"env": "CartPole-v1", "num_envs": 8, "algo": {"lr": 1e-3}},
            ["env=CartPole-v1", "num_envs=8", "algo.lr=1e-3"],
        ),
        ({"env": {"name": "grid", "num_agents": 4}, "algo": "dqn"}, ["env=grid", "env.num_agents=4", "algo=dqn"]),
        ({"experiment": "snake_perfect", "env.shaping": 0}, ["experiment=snake_perfect", "env.shaping=0"]),
        (
            {"env": "snake", "preset": "fast", "checkpoint": {"keep": 5}},
            ["env=snake", "preset=fast", "checkpoint.keep=5"],
        ),
        (
            {"env": "CartPole-v1", "sweep": {"algo": {"lr": [1e-4, 3e-4]}}, "sweep.env.gravity": [9.8, 5.0]},
            ["env=CartPole-v1", "sweep.algo.lr=[1e-4,3e-4]", "sweep.env.gravity=[9.8,5.0]"],
        ),
        (
            {"env": "snake", "curriculum": "[{steps:5e4,hunger_limit:30},{}]"},
            ["env=snake", "curriculum=[{steps:5e4,hunger_limit:30},{}]"],
        ),
    ],
)
def test_keywords_give_the_config_the_command_line_gives(kwargs, argv):
    from jaxrl.api import compose

    assert jaxrl.make_config(**kwargs) == compose(argv)[0]


def test_keyword_values_are_merged_as_python_values_not_reparsed():
    # Printed as override text and parsed back, "null" became None and "3e-4" the float 0.0003.
    cfg = jaxrl.make_config(env="CartPole-v1", wandb_project="null", run_dir="runs/3e-4")
    assert cfg.wandb_project == "null" and cfg.run_dir == "runs/3e-4"
    cfg = jaxrl.make_config(env="CartPole-v1", run_dir="runs/a, b=[c]")
    assert cfg.run_dir == "runs/a, b=[c]"


def test_build_program_is_the_config_s_env_and_algorithm():
    from jaxrl import build

    cfg = jaxrl.make_config(env={"name": "snake", "size": 6}, num_envs=8, algo={"name": "dqn", "buffer_size": 512})
    program = build.program(cfg, chunk=2)
    assert program.env.size == 6 and type(program.algo).__name__ == "DQN" and program.chunk == 2
