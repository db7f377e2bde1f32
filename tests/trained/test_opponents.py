"""A finished run as the arena's bots (`env.bot_policy=RUN_DIR`): loaded once, run inside the step, and bad
bot run directories refused in one line before anything is written."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl
from jaxrl.cli.train import main

TINY = ["env=arena", "env.view=5", "num_envs=8", "algo.num_steps=8", "total_timesteps=128", "num_chunks=1"]
TINY += ["progress=false", "algo.hidden=[16]"]


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("grid") / "grid"
    assert main(["env=grid", "num_envs=4", "algo.num_steps=8", "total_timesteps=32", "num_chunks=1", "progress=false",
                 f"run_dir={run_dir}"]) == 0  # fmt: skip
    return run_dir


@pytest.fixture(scope="module")
def bot_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("bots") / "last_week"
    assert main([*TINY, f"run_dir={run_dir}"]) == 0
    return run_dir


@pytest.mark.slow
def test_a_run_trained_against_a_frozen_run_plays_against_its_greedy_policy(bot_run, tmp_path, capsys):
    run_dir = tmp_path / "this_week"
    assert main([*TINY, f"env.bot_policy={bot_run}", f"run_dir={run_dir}"]) == 0
    run = jaxrl.load(run_dir)
    env, params = run.env()
    assert float(params.policy_share) == 1.0, "naming a bot run hands every game's bots to it"
    frozen = jaxrl.load(bot_run).policy
    _, state = env.reset(jax.random.key(0), params)
    assert np.asarray(state.policy).tolist() == [False, True, True, True]
    for t in range(20):
        key = jax.random.key(t)
        directions = env.bot_directions(key, state)
        bots = env.views(state, (1, 2, 3))
        _, actions = frozen.apply(frozen.params, None, bots, key)
        want = (np.asarray(state.heading[1:]) + np.asarray(actions) - 1) % 4
        live = np.asarray(state.alive[1:])
        assert (np.asarray(directions[1:])[live] == want[live]).all(), t
        _, state, _, _, _, _ = env.step(key, state, jnp.int32(1), params)
    assert "final return" in capsys.readouterr().out


@pytest.mark.parametrize(
    "setting,expected",
    [
        ("env.bot_policy={missing}", "is not a jaxrl run with checkpoints"),
        pytest.param(
            "env.bot_policy={bot_run} env.view=7",
            "sees (5, 5, 8) views; this env's learners see (7, 7, 8)",
            marks=pytest.mark.slow,
        ),
        ("env.policy_share=0.5", "policy_share=0.5 is invalid: must be 0 without env.bot_policy=RUN_DIR"),
    ],
)
def test_bad_bot_runs_are_one_line_and_write_nothing(request, tmp_path, capsys, setting, expected):
    bot_run = request.getfixturevalue("bot_run") if "{bot_run}" in setting else None
    args = setting.format(missing=tmp_path / "nowhere", bot_run=bot_run).split()
    code = main([*TINY, *args, f"run_dir={tmp_path / 'never'}"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and expected in err, err
    assert err.count("\n") == 1 and not (tmp_path / "never").exists()


@pytest.mark.slow
def test_a_bot_run_from_another_env_is_refused(grid_run, tmp_path, capsys):
    capsys.readouterr()
    code = main([*TINY, f"env.bot_policy={grid_run}", f"run_dir={tmp_path / 'never'}"])
    err = capsys.readouterr().err
    assert code == 2 and "trained on env=grid; a bot policy must come from a run of env=arena" in err, err


@pytest.mark.slow
def test_eval_plays_against_the_bot_kind_and_count_asked_for(bot_run, tmp_path, capsys):
    from jaxrl.cli.eval import main as eval_main

    out = tmp_path / "replay.gif"
    assert eval_main([str(bot_run), "episodes=20", "opponents=random_safe", "num_bots=1", f"out={out}"]) == 0
    text = capsys.readouterr().out
    assert "against: 1 bots, random_safe" in text and "placement mean" in text and "placements (place:games)" in text
    result = jaxrl.load(bot_run).evaluate(episodes=20)  # as trained: 3 greedy bots
    assert result["env_params"]["num_bots"] == 3 and result["env_params"]["greedy_share"] == 1.0
    assert sum(result["placement_histogram"]["counts"]) == 20 and set(result["placement_histogram"]["bins"]) <= {
        1,
        2,
        3,
        4,
    }
    assert 0 <= result["win_rate"] <= 1 and result["kills"]["min"] >= 0
    assert out.read_bytes()[:6] == b"GIF89a"
    # A scripted kind the run's step never played is compiled in for the evaluation.
    assert eval_main([str(bot_run), "episodes=4", "opponents=lookahead", "render=none"]) == 0
    assert "bots, lookahead" in capsys.readouterr().out


@pytest.mark.parametrize(
    "setting,expected",
    [
        (
            "opponents=smart",
            "opponents=smart is invalid: allowed greedy, space, lookahead, random_safe, a run directory or"
            " pretrained:NAME",
        ),
        ("opponents=space+lookhead", "opponents=space+lookhead is invalid: 'space+lookhead' is not a script"),
        ("num_bots=4", "num_bots=4 is invalid: the run's arena has room for 0 to 3 bots"),
    ],
)
@pytest.mark.slow
def test_eval_refuses_unknown_opponents_in_one_line(bot_run, capsys, setting, expected):
    from jaxrl.cli.eval import main as eval_main

    assert eval_main([str(bot_run), "episodes=2", setting]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and expected in err and err.count("\n") == 1, err


@pytest.mark.slow
def test_eval_opponents_apply_to_the_arena_only(grid_run, capsys):
    from jaxrl.cli.eval import main as eval_main

    capsys.readouterr()
    assert eval_main([str(grid_run), "episodes=2", "opponents=greedy"]) == 2
    assert (
        "opponents= and num_bots= apply to envs whose bots can be set (set_bots: the arena), not to grid"
        in capsys.readouterr().err
    )
