"""Evaluation: on-device episodes (first end counts, scores, wins), `python -m jaxrl.eval` figures from a
checkpoint (min/median/max, score histogram, win rate, the env's eval params), the best episode's replay
with its caption strip, bad input as one line."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image, ImageSequence

from jaxrl import envs
from jaxrl.cli import eval as eval_cli
from jaxrl.cli.train import main as train_main
from jaxrl.envs.snake import DCOL, DROW, Snake
from jaxrl.trained import evaluation
from jaxrl.trained.evaluation import figures, play, record


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
    assert "score" not in out and "won" not in out  # CartPole's info reports neither
    result = figures(jax.tree.map(lambda x: np.asarray(x)[None], out))
    assert "score" not in result and "win_rate" not in result and result["return"]["min"] == length.min()


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


def chase(params, carry, obs, key):
    """Head for the apple, rows first: eats a few apples, then runs into its body or a wall."""
    size = obs.shape[1]
    head, apple = (jnp.argmax(obs[..., ch].reshape(obs.shape[0], -1), axis=1) for ch in (0, 2))
    (hr, hc), (ar, ac) = divmod(head, size), divmod(apple, size)
    return carry, jnp.where(ar < hr, 0, jnp.where(ar > hr, 2, jnp.where(ac > hc, 1, 3)))


def test_score_histogram_and_spread_match_the_episodes():
    env, params = envs.make("snake", size=6)
    episodes = jax.jit(lambda k: play(env, params, chase, None, k, 40))
    seeds = [jax.device_get(episodes(jax.random.key(k))) for k in (3, 4)]
    out = {name: np.stack([s[name] for s in seeds]) for name in seeds[0]}  # (seeds, episodes), as evaluate has it
    result = figures(out)
    score = out["score"].astype(int).ravel()
    assert len(np.unique(score)) > 2
    hist = result["score_histogram"]
    assert sum(hist["counts"]) == 2 * 40
    assert hist["bins"] == list(range(score.min(), score.max() + 1))
    assert hist["counts"] == [int((score == b).sum()) for b in hist["bins"]]
    for name in ("return", "length", "score"):
        spread = result[name]
        assert spread["min"] == out[name].min() and spread["max"] == out[name].max()
        assert spread["min"] <= spread["median"] <= spread["max"]
    assert result["wins"] == 0 and result["win_rate"] == 0.0 and result["win_rate_per_seed"] == [0.0, 0.0]


# A Hamiltonian cycle of the 4x4 board: along row 0, back along row 1, ..., up column 0.
CYCLE = [(0, 0), (0, 1), (0, 2), (0, 3), (1, 3), (1, 2), (1, 1), (2, 1)]
CYCLE += [(2, 2), (2, 3), (3, 3), (3, 2), (3, 1), (3, 0), (2, 0), (1, 0)]


class SnakeOnTheCycle(Snake):
    """4x4 Snake whose every episode starts lying on CYCLE (head (0, 2), heading right)."""

    def reset_env(self, key, params):
        state = self.make_state([(0, 2), (0, 1), (0, 0)], apple=(3, 0), direction=1)
        return self.get_obs(state), state


def follow_the_cycle(params, carry, obs, key):
    """Move the head to its successor on CYCLE: the body trails it and the snake fills the board."""
    moves = np.zeros(16, np.int32)
    for (r, c), (nr, nc) in zip(CYCLE, CYCLE[1:] + CYCLE[:1], strict=True):
        moves[4 * r + c] = list(zip(DROW, DCOL, strict=True)).index((nr - r, nc - c))
    head = jnp.argmax(obs[..., 0].reshape(obs.shape[0], -1), axis=1)
    return carry, jnp.asarray(moves)[head]


def test_snake_wins_every_episode_on_a_hamiltonian_cycle_and_none_going_straight():
    cycling = SnakeOnTheCycle(size=4)
    out = jax.device_get(
        jax.jit(lambda k: play(cycling, cycling.default_params, follow_the_cycle, None, k, 8))(jax.random.key(5))
    )
    assert out["finished"].all() and out["won"].all()
    np.testing.assert_array_equal(out["score"], 16 - 3)  # every cell filled
    assert len(np.unique(out["length"])) > 1  # the apples fell differently
    result = figures(jax.tree.map(lambda x: x[None], out))
    assert result["wins"] == 8 and result["win_rate"] == 1.0 and result["best"]["won"]

    env, params = envs.make("snake", size=4)
    out = jax.device_get(jax.jit(lambda k: play(env, params, constant(0), None, k, 32))(jax.random.key(6)))
    assert out["finished"].all() and not out["won"].any()
    assert figures(jax.tree.map(lambda x: x[None], out))["win_rate"] == 0.0


def test_record_gives_the_score_and_return_before_each_frame():
    env, params = envs.make("snake", size=6)
    out = jax.device_get(jax.jit(lambda k: play(env, params, chase, None, k, 16))(jax.random.key(7)))
    index = int(np.argmax(out["score"]))
    assert out["score"][index] > 0
    length = int(out["length"][index])
    frames, progress = jax.device_get(
        jax.jit(lambda k: record(env, params, chase, None, k, 16, index, length, env.render_rgb))(jax.random.key(7))
    )
    assert frames.shape == (length, 6, 6, 3) and progress["score"].shape == progress["return"].shape == (length,)
    assert progress["score"][0] == 0 and progress["return"][0] == 0
    assert (np.diff(progress["score"]) >= 0).all() and progress["score"][-1] == out["score"][index]
    # Chasing ends in a wall or the body: the last step is the death, not an apple.
    assert progress["return"][-1] + params.reward_death == pytest.approx(out["return"][index])
    apples = (frames[..., 0] > 200).sum(axis=(1, 2))  # the red apple, one per frame
    assert (apples == 1).all()


def test_captions_name_the_step_and_the_score_or_return_so_far():
    progress = {"score": np.array([0.0, 1.0, 1.0]), "return": np.array([0.0, 1.0, 0.5])}
    lines = evaluation.captions(progress, {"length": 3, "return": 1.5, "score": 2.0, "won": True})
    assert lines == ["step 1/3   score 0", "step 2/3   score 1", "step 3/3   score 1 -> 2 (won)"]
    lines = evaluation.captions(progress, {"length": 3, "return": 1.5})
    assert lines[1] == "step 2/3   return 1.00" and lines[-1] == "step 3/3   return 0.50 -> 1.50"


@pytest.fixture(scope="module")
def snake_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("eval") / "snake"
    settings = ["env=snake", "env.size=6", "num_envs=64", "algo.num_steps=8", "total_timesteps=8192"]
    settings += ["env.hunger_limit=10"]  # below size * size: evaluation must raise it (Snake's eval_params)
    assert train_main([*settings, "num_seeds=2", "num_chunks=2", "checkpoint.every_steps=1", f"run_dir={run_dir}"]) == 0
    return run_dir


def test_eval_prints_figures_and_writes_the_best_replay(snake_run, capsys):
    assert eval_cli.main([f"run_dir={snake_run}", "episodes=12", "fps=50"]) == 0
    out = capsys.readouterr().out
    assert "snake ppo checkpoint 8,192 steps: 12 greedy episodes x 2 seeds" in out
    assert "return mean" in out and "score mean" in out and "replay of the best episode" in out
    assert "| min " in out and "wins 0/24 (0.0%)" in out and "score histogram" in out
    result = json.loads((snake_run / "eval.json").read_text())
    assert result["checkpoint_step"] == 8192 and result["unfinished"] == 0
    assert len(result["return_per_seed"]) == 2
    for name in ("return", "length", "score"):
        assert result[name]["min"] <= result[name]["median"] <= result[name]["max"]
    hist = result["score_histogram"]
    assert sum(hist["counts"]) == 24 and hist["bins"][0] == result["score"]["min"] == min(hist["bins"])
    assert hist["bins"][-1] == result["score"]["max"] and hist["counts"][0] > 0 and hist["counts"][-1] > 0
    assert result["wins"] == 0 and result["win_rate"] == 0.0 and len(result["win_rate_per_seed"]) == 2
    best = result["best"]
    assert best["return"] == result["return"]["max"] and best["won"] is False
    assert best["length"] >= 2  # the replay below has a first and a last frame to compare
    frames = [np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(Image.open(snake_run / "replay.gif"))]
    assert len(frames) == best["length"]  # one frame per action of exactly that episode
    side = frames[0].shape[1]  # the board is square, upscaled as before; the caption strip lies below it
    assert all(f.shape == (side + evaluation.STRIP_PIXELS, side, 3) for f in frames)
    boards, strips = [f[:side] for f in frames], [f[side:] for f in frames]
    board_colours = {(0, 0, 0), (40, 160, 60), (120, 255, 120), (230, 40, 40)}  # empty, body, head, apple
    assert all(set(map(tuple, b.reshape(-1, 3))) <= board_colours for b in boards)  # no text on the board
    last = boards[-1][:: side // 6, :: side // 6]  # one pixel per cell
    snake_cells = (last[..., 1] > 100).sum()  # head and body are green
    assert snake_cells == 3 + best["score"]  # the snake grew by the apples it ate
    np.testing.assert_array_equal(strips[0], evaluation.caption_strip(f"step 1/{best['length']}   score 0", side))
    assert (strips[0] != strips[-1]).any()  # the step counter moved
    ends = [
        f"step {best['length']}/{best['length']}   score {s:g} -> {best['score']:g}"
        for s in (best["score"] - 1, best["score"])
    ]
    assert any((strips[-1] == evaluation.caption_strip(end, side)).all() for end in ends)


def test_eval_plays_with_the_envs_eval_params(snake_run, capsys):
    """The run trained with hunger_limit=10; Snake's eval_params raises it to 6 * 6 for evaluation."""
    import jaxrl

    run = jaxrl.load(snake_run)
    assert run.config.env.hunger_limit == 10
    _, runner, _ = run.restore()
    assert (np.asarray(runner.envs.params.hunger_limit) == 10).all()  # what the agent trained with
    result = run.evaluate(episodes=4)
    assert result["env_params"]["hunger_limit"] == 36 and result["env_params"]["shaping"] == 0.0
    assert result["env_params_changed"]["hunger_limit"] == {"trained": 10, "evaluated": 36}
    eval_cli.report(result)
    assert "hunger_limit 10 -> 36" in capsys.readouterr().out
    cartpole, params = envs.make("CartPole-v1")  # no eval_params: played as trained
    assert evaluation.params_for_eval(cartpole, params) is params


def test_eval_of_an_older_checkpoint_and_sampled_actions(snake_run, capsys):
    assert eval_cli.main([str(snake_run), "step=4096", "greedy=false", "episodes=4", "render=none"]) == 0
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
    assert eval_cli.main([f"run_dir={snake_run}", "episodes=4", "render=terminal", "fps=1000"]) == 0
    out = capsys.readouterr().out
    best = json.loads((snake_run / "eval.json").read_text())["best"]
    assert out.count("+------+") == 2 * best["length"]  # top and bottom edge of every frame
    assert out.count("@") >= best["length"]
    captions = [line for line in out.splitlines() if line.startswith("step ")]
    assert len(captions) == best["length"] and captions[0] == f"step 1/{best['length']}   score 0"
    assert captions[-1].endswith(f"-> {best['score']:g}")


@pytest.mark.parametrize(
    "args, message",
    [
        (["episodes=4"], "a run directory is required: python -m jaxrl.eval RUN_DIR"),
        (["{run}", "run_dir={run}"], "the run directory is given twice"),
        (["{run}", "{run}"], "expected key=value after the run directory"),
        (["{run}", "episodes=0"], "episodes=0 is invalid"),
        (["run_dir={run}", "greedy=maybe"], "greedy=maybe is invalid"),
        (["run_dir={run}", "render=video"], "render=video is invalid"),
        (["run_dir={run}", "colour=red"], "unknown setting 'colour'"),
        (["run_dir={run}", "step=123"], "step=123 has no checkpoint"),
        (["run_dir={missing}"], "no such directory"),
    ],
)
def test_bad_eval_input_is_one_line(snake_run, tmp_path, capsys, args, message):
    formatted = [a.format(run=snake_run, missing=tmp_path / "nope") for a in args]
    assert eval_cli.main(formatted) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err
