"""Evaluation: on-device episodes (first end counts, scores), `python -m jaxrl.eval` figures from a
checkpoint, the best episode's replay, bad input as one line."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image, ImageSequence

import envs
from jaxrl import eval as evaluation
from jaxrl.eval import play
from jaxrl.train import main as train_main


def constant(action: int):
    """A policy `(params, carry, obs, key) -> (carry, actions)` that always takes `action`."""
    return lambda params, carry, obs, key: (carry, jnp.full(obs.shape[0], action, jnp.int32))


def test_cartpole_episodes_count_until_their_first_end():
    env, params = envs.make("CartPole-v1")
    out = jax.jit(lambda k: play(env, params, constant(0), None, k, 16))(jax.random.key(0))
    ret, length = np.asarray(out["return"]), np.asarray(out["length"])
    assert np.asarray(out["finished"]).all()
    np.testing.assert_array_equal(ret, length)  # +1 per step, nothing counted after the first end
    assert 5 <= length.min() and length.max() <= 20  # always pushing left topples the pole within ~10 steps
    assert len(np.unique(length)) > 1  # independent resets


def test_max_steps_stops_unfinished_episodes():
    env, params = envs.make("CartPole-v1")

    def balance(params, carry, obs, key):  # push toward the side the pole leans to: keeps it up for long
        return carry, (obs[:, 2] + 0.5 * obs[:, 3] > 0).astype(jnp.int32)

    out = jax.jit(lambda k: play(env, params, balance, None, k, 4, max_steps=50))(jax.random.key(1))
    np.testing.assert_array_equal(np.asarray(out["length"]), 50)
    assert not np.asarray(out["finished"]).any()


def test_snake_reports_the_score_of_the_ended_episode():
    env, params = envs.make("snake", size=6)
    out = jax.jit(lambda k: play(env, params, constant(0), None, k, 32))(jax.random.key(2))
    score, ret, length = (np.asarray(out[k]) for k in ("score", "return", "length"))
    assert np.asarray(out["finished"]).all()
    assert (score >= 0).all() and (score <= 6).all() and score.max() > 0  # apples in its straight path
    # Going straight always ends at a wall: every step earns an apple, the death, or the step reward.
    expected = score * params.reward_apple + params.reward_death + (length - score - 1) * params.reward_step
    np.testing.assert_allclose(ret, expected, rtol=1e-6)


@pytest.fixture(scope="module")
def snake_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("eval") / "snake"
    settings = ["env=snake", "env.size=6", "num_envs=64", "algo.num_steps=8", "total_timesteps=8192"]
    assert train_main([*settings, "num_seeds=2", "num_chunks=2", "checkpoint.every_steps=1", f"run_dir={run_dir}"]) == 0
    return run_dir


def test_eval_prints_figures_and_writes_the_best_replay(snake_run, capsys):
    assert evaluation.main([f"run_dir={snake_run}", "episodes=12", "fps=50"]) == 0
    out = capsys.readouterr().out
    assert "snake ppo checkpoint 8,192 steps: 12 greedy episodes x 2 seeds" in out
    assert "return mean" in out and "score mean" in out and "replay of the best episode" in out
    result = json.loads((snake_run / "eval.json").read_text())
    assert result["checkpoint_step"] == 8192 and result["unfinished"] == 0
    assert len(result["return_per_seed"]) == 2
    best = result["best"]
    assert best["return"] == result["return"]["max"]
    frames = [np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(Image.open(snake_run / "replay.gif"))]
    assert len(frames) == best["length"]  # one frame per action of exactly that episode
    last = frames[-1][:: frames[-1].shape[0] // 6, :: frames[-1].shape[1] // 6]  # one pixel per cell
    snake_cells = (last[..., 1] > 100).sum()  # head and body are green
    assert snake_cells == 3 + best["score"]  # the snake grew by the apples it ate


def test_eval_of_an_older_checkpoint_and_sampled_actions(snake_run, capsys):
    assert evaluation.main([f"run_dir={snake_run}", "step=4096", "greedy=false", "episodes=4", "render=none"]) == 0
    assert "checkpoint 4,096 steps: 4 sampled episodes" in capsys.readouterr().out


def test_step_loads_that_checkpoints_parameters(snake_run):
    """`step=` evaluates the parameters saved at that step (read here straight from orbax), per seed."""
    import orbax.checkpoint as ocp

    import jaxrl

    run = jaxrl.load(snake_run)
    saved = {}
    manager = ocp.CheckpointManager((snake_run / "checkpoints").absolute())
    for step in (4096, 8192):
        raw = manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore()))["state"]
        saved[step] = [np.asarray(x) for x in jax.tree.leaves(raw["params"])]
    manager.close()
    for step, leaves in saved.items():
        for seed in (0, 1):
            loaded = [np.asarray(x) for x in jax.tree.leaves(run.policy_of(seed=seed, step=step).params)]
            assert len(loaded) == len(leaves) > 0
            for got, want in zip(loaded, leaves, strict=True):
                np.testing.assert_array_equal(got, want[seed])
        _, runner, program = run.restore(step)  # what evaluate(step=...) plays with
        for got, want in zip(jax.tree.leaves(program.algo.policy_params(runner)), leaves, strict=True):
            np.testing.assert_array_equal(np.asarray(got), want)
        assert run.evaluate(episodes=4, step=step)["checkpoint_step"] == step
    assert any((a != b).any() for a, b in zip(saved[4096], saved[8192], strict=True))  # training moved them


def test_terminal_replay_draws_the_board(snake_run, capsys):
    assert evaluation.main([f"run_dir={snake_run}", "episodes=4", "render=terminal", "fps=1000"]) == 0
    out = capsys.readouterr().out
    best = json.loads((snake_run / "eval.json").read_text())["best"]
    assert out.count("+------+") == 2 * best["length"]  # top and bottom edge of every frame
    assert out.count("@") >= best["length"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["episodes=4"], "run_dir=DIR is required"),
        (["run_dir={run}", "episodes=0"], "episodes=0 is invalid"),
        (["run_dir={run}", "greedy=maybe"], "greedy=maybe is invalid"),
        (["run_dir={run}", "render=video"], "render=video is invalid"),
        (["run_dir={run}", "colour=red"], "unknown setting 'colour'"),
        (["run_dir={run}", "step=123"], "step=123 has no checkpoint"),
        (["run_dir={missing}"], "no such directory"),
    ],
)
def test_bad_eval_input_is_one_line(snake_run, tmp_path, capsys, args, message):
    formatted = [a.format(run=snake_run, missing=tmp_path / "nope") for a in args]
    assert evaluation.main(formatted) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err
