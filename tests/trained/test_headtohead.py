"""Head-to-head games between runs and bots, `jaxrl.eval vs=`, `Run.play_against`, and ratings (`jaxrl.rate`)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jaxrl
from jaxrl import envs
from jaxrl.config.compose import UsageError
from jaxrl.trained import headtohead, rating

ROOT = Path(__file__).resolve().parents[2]
TINY = ["num_envs=16", "algo.num_steps=8", "progress=false", "checkpoint.every_steps=1", "num_chunks=2"]


def cli(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Small finished runs: two arena runs (one with a 5x5 view), a 9x9 arena run and a grid run, trained
    in this process (the CLI's own runs are tested in tests/test_cli.py)."""
    root = tmp_path_factory.mktemp("h2h")
    made = {}
    for name, settings in {
        "a": ["env=arena", "total_timesteps=8192"],
        "b": ["env=arena", "env.view=5", "total_timesteps=4096", "seed=1"],
        "small": ["env=arena", "env.size=9", "total_timesteps=2048"],
        "grid": ["env=grid", "env.num_bots=1", "total_timesteps=2048"],
    }.items():
        pairs = (s.split("=", 1) for s in [*settings, *TINY, f"run_dir={root / name}"])
        made[name] = jaxrl.train(**{k: v for k, v in pairs}).run_dir
    return made


def test_a_policy_against_itself_scores_half_with_the_seats_rotated(runs):
    me = headtohead.player(str(runs["a"]), jaxrl.load)
    _, _, mine, _ = headtohead._table(me, me, 10, None)
    np.testing.assert_array_equal(np.asarray(mine).sum(axis=0), [5, 5, 5, 5])  # each seat A's in half the games
    np.testing.assert_array_equal(np.asarray(mine).sum(axis=1), [2] * 10)
    for other in (me, headtohead.bot("greedy")):
        same = headtohead.play_pair(other, other, games=800, seed=3, host=me)
        assert same["a_wins"] + same["b_wins"] + same["draws"] == 800
        assert abs(same["a_score"] - 0.5) < 0.07, same  # 4 standard errors of 800 fair games


def arena_host():
    """A player that sets the default arena's table for two bots (no policy of its own plays)."""
    env, params = envs.make("arena")
    return headtohead.Player(name="arena", env=env, env_params=params)


def test_each_side_holds_each_seat_in_half_the_games():
    # the default tier's guard of the rotation; the same with a trained run's player is a slow test above
    greedy, safe = headtohead.bot("greedy"), headtohead.bot("random_safe")
    _, _, mine, steps = headtohead._table(greedy, safe, 10, None, host=arena_host())
    np.testing.assert_array_equal(np.asarray(mine).sum(axis=0), [5, 5, 5, 5])
    np.testing.assert_array_equal(np.asarray(mine).sum(axis=1), [2] * 10)
    assert steps > 0


def test_greedy_beats_random_safe_head_to_head():
    r = headtohead.play_pair(headtohead.bot("greedy"), headtohead.bot("random_safe"), games=400, host=arena_host())
    assert r["a_wins"] > r["b_wins"] and r["a_placement"] < r["b_placement"]
    assert r["unfinished"] == 0


def test_eval_vs_plays_each_opponent_and_writes_the_table_and_a_gif(runs):
    proc = cli("jaxrl.eval", str(runs["a"]), f"vs={runs['b']}", "vs=greedy", "episodes=60")
    assert proc.returncode == 0, proc.stderr[-2000:]
    saved = json.loads((runs["a"] / "versus.json").read_text())
    assert [p["b"].split("@")[0] for p in saved["pairs"]] == [str(runs["b"]), "greedy"]
    assert all(p["games"] == 60 and p["a_wins"] + p["b_wins"] + p["draws"] == 60 for p in saved["pairs"])
    assert (runs["a"] / "versus.gif").stat().st_size > 0
    assert "greedy" in proc.stdout and "placement" in proc.stdout


def test_run_play_against_is_the_same_games(runs):
    run = jaxrl.load(runs["a"])
    got = run.play_against("random_safe", episodes=100, seed=2)
    want = headtohead.play_pair(headtohead.player(str(runs["a"]), jaxrl.load), headtohead.bot("random_safe"), 100, 2)
    assert {k: got[k] for k in ("a_wins", "b_wins", "draws")} == {k: want[k] for k in ("a_wins", "b_wins", "draws")}


@pytest.mark.parametrize(
    ("vs", "message"),
    [
        (
            "{missing}",
            "is invalid: allowed greedy, space, lookahead, random_safe, a run directory (PATH or PATH@STEP) or"
            " pretrained:NAME",
        ),
        ("{foreign}", "is not a jaxrl run directory"),
        ("{grid}", "grid sets no table of 2 seats"),
        ("{small}", "trained with size=9; "),
    ],
)
def test_bad_vs_is_one_line(runs, tmp_path, vs, message):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    spec = vs.format(missing=tmp_path / "nope", foreign=foreign, grid=runs["grid"], small=runs["small"])
    before = sorted(p.name for p in runs["a"].iterdir())
    proc = cli("jaxrl.eval", str(runs["a"]), f"vs={spec}", "episodes=10", "render=none")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and message in lines[0], proc.stderr
    assert sorted(p.name for p in runs["a"].iterdir()) == before


def test_the_rating_fit_recovers_known_strengths():
    # A scores 76% against B (200 Elo points), B 76% against C: A about 400 above C.
    results = [
        {"a": "A", "b": "B", "games": 10_000, "a_wins": 7597, "b_wins": 2403, "draws": 0},
        {"a": "B", "b": "C", "games": 10_000, "a_wins": 7597, "b_wins": 2403, "draws": 0},
        {"a": "A", "b": "C", "games": 10_000, "a_wins": 9090, "b_wins": 908, "draws": 2},
    ]
    model = rating.fit(["A", "B", "C"], results, anchor="C")
    r, e = model["ratings"], model["errors"]
    assert r["C"] == 0 and e["C"] == 0
    assert abs(r["A"] - r["B"] - 200) < 10 and abs(r["B"] - 200) < 10
    assert 0 < e["B"] < 10
    swapped = rating.fit(
        ["A", "B", "C"],
        [{**x, "a": x["b"], "b": x["a"], "a_wins": x["b_wins"], "b_wins": x["a_wins"]} for x in results],
        anchor="C",
    )
    assert abs(swapped["ratings"]["A"] - r["A"]) < 1e-6  # who is listed first does not matter
    one_sided = rating.fit(["A", "B"], [{"a": "A", "b": "B", "games": 50, "a_wins": 50, "b_wins": 0, "draws": 0}], "B")
    assert np.isfinite(one_sided["ratings"]["A"]) and one_sided["ratings"]["A"] > 400


@pytest.mark.slow  # 15 pairs through the CLI; the fit and reproducibility stay in the default tier
def test_rate_writes_the_table_and_plot_over_every_checkpoint(runs, tmp_path):
    # Two bots named as players (bots=true's four, searching bots among them, are the shelf's rating test's)
    args = [str(runs["a"]), str(runs["b"]), "greedy", "random_safe", "bots=false", "games=40", "checkpoints=all"]
    proc = cli("jaxrl.rate", *args, f"out={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    saved = json.loads((tmp_path / "ratings.json").read_text())
    assert len(saved["table"]) == 2 + 2 + 2  # two checkpoints of each run, and the two bots
    assert len(saved["pairs"]) == 15 and saved["anchor"] == "random_safe"
    assert [r["rating"] for r in saved["table"]] == sorted((r["rating"] for r in saved["table"]), reverse=True)
    assert all(r["train_s"] is not None for r in saved["table"] if r["run_dir"])
    assert (tmp_path / "ratings.png").stat().st_size > 0
    assert "rating" in proc.stdout and "random_safe" in proc.stdout


def test_ratings_are_reproducible_and_agree_across_seeds_within_their_errors(runs):
    # The run, greedy and the anchor: three pairs. The searching bots would add seven pairs of the same fit.
    everyone = rating.players([str(runs["a"])], jaxrl.load)  # bots=True: the run and the env's four bots
    assert [p.name for p in everyone][1:] == ["greedy", "space", "lookahead", "random_safe"]
    found = [p for p in everyone if p.name not in ("space", "lookahead")]
    quiet = lambda line: None
    first, again = (rating.rate(found, games=150, seed=0, say=quiet)["table"] for _ in range(2))
    assert first == again  # same games, same table
    other = {r["player"]: r for r in rating.rate(found, games=150, seed=7, say=quiet)["table"]}
    for row in first:  # 4 standard errors: two free ratings fail together about once in 8,000 correct runs
        assert abs(row["rating"] - other[row["player"]]["rating"]) <= 4 * np.hypot(
            row["error"], other[row["player"]]["error"]
        )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["games=0"], "games=0 is invalid: must be >= 1"),
        (["rounds=3"], "unknown setting 'rounds'"),
        (["bots=false"], "a rating needs at least two players"),
        (["checkpoints=some"], "checkpoints=some is invalid: allowed latest, all"),
    ],
)
def test_bad_rate_input_is_one_line(runs, args, message):
    proc = cli("jaxrl.rate", str(runs["a"]), *args)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and message in lines[0], proc.stderr


def test_vs_with_opponents_is_refused_before_anything_runs():
    with pytest.raises(UsageError, match="opponents does not apply to head-to-head games"):
        from jaxrl.cli.eval import parse_args

        parse_args(["run", "vs=greedy", "opponents=greedy"])
