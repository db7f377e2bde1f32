"""The shelf (jaxrl/trained/shelf.py): trained agents that ship inside the package, reachable everywhere a run is:
`jaxrl.pretrained(NAME)`, `python -m jaxrl.eval pretrained:NAME`, `env.bot_policy=`, `opponents=`, `vs=` and
`python -m jaxrl.rate`; `python -m jaxrl.pretrained list` and `export`; bad input as one line each."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import jaxrl
from jaxrl.cli.pretrained import main as pretrained_main
from jaxrl.config.schema import ConfigError
from jaxrl.trained import shelf
from tests.helpers import one_line_error

SHIPPED = {"snake-v1", "snake-perfect-v1", "arena-selfplay-v2", "arena-champion-v2", "grid-v1"}
FIXTURE = Path(__file__).resolve().parents[1] / "data" / "runs" / "format-3" / "ppo-cartpole"
# A shelf agent's greedy figures were measured with XLA's optimizations on, on the CPU that trained it; the suite
# compiles without them, and other CPUs round differently, so one changed action can change an episode.
TOLERANCE = 0.1


def test_the_shelf_ships_its_agents_inside_the_package_each_naming_its_env_version_and_figures():
    assert set(shelf.names()) >= SHIPPED
    assert sum(p.stat().st_size for p in shelf.SHELF.glob("*.npz")) < 8 * 2**20  # a few MB in all
    for name in shelf.names():
        meta = shelf.info(name)
        assert meta["name"] == name and meta["format"] >= 3
        assert meta["env"]["label"] == f"{meta['env']['name']}-v{meta['env']['version']}"
        assert meta["figures"]["episodes"] >= 100 and np.isfinite(meta["figures"]["greedy_return"])
        assert meta["trained"]["env_steps"] > 0 and meta["config"]["num_seeds"] == 1


def test_pretrained_list_prints_every_agent_with_its_figures(capsys):
    assert pretrained_main(["list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(shelf.names())
    for line, name in zip(out, shelf.names(), strict=True):
        assert line.startswith(name) and "greedy_return" in line and "env steps" in line


def test_the_default_snake_agent_plays_to_its_recorded_score(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = jaxrl.pretrained("snake-v1")
    assert run.config.env.name == "snake" and run.policy.params is not None
    recorded = run.figures["greedy_score"]
    got = run.evaluate(episodes=run.figures["episodes"], seed=run.figures["eval_seed"])
    assert abs(got["score"]["mean"] - recorded) <= TOLERANCE * recorded, (got["score"]["mean"], recorded)
    assert (tmp_path / "runs" / "pretrained-snake-v1" / "eval.json").is_file()  # where its outputs go


@pytest.mark.slow
def test_the_perfect_snake_agent_fills_the_board(tmp_path, monkeypatch):
    # 95 of 100 greedy episodes won where it was measured; 20 episodes with at least 12 wins holds by a wide margin
    # on a CPU that rounds some near-ties the other way.
    monkeypatch.chdir(tmp_path)
    run = jaxrl.pretrained("snake-perfect-v1")
    assert run.figures["win_rate"] >= 0.9 and run.config.env.size == 10
    got = run.evaluate(episodes=20, seed=0)
    assert got["wins"] >= 12 and got["score"]["max"] == 97, (got["wins"], got["score"])


@pytest.mark.slow
def test_the_arena_champion_beats_the_searching_bots(tmp_path, monkeypatch):
    # Evaluation seeds 0-31, 200 games each (2-core AMD EPYC, 2026-12-07): against 3 space bots 57-71% won (mean
    # 63.9%), in duels against lookahead 86.5-95% (mean 90.4%). The bounds sit 4 and 5 standard deviations below
    # those means (a failure about 1 in 10^4 or rarer); the first is issue 83's target, the second above its 70%.
    from jaxrl.trained.evaluation import evaluate

    monkeypatch.chdir(tmp_path)
    run = jaxrl.pretrained("arena-champion-v2")
    assert run.config.env.view == 11 and run.config.selfplay.league == ["greedy", "space", "lookahead"]
    four = evaluate(run, episodes=200, seed=0, render="none", opponents="space")  # the full table: eval_params
    assert four["env_params_changed"]["fewest_bots"] == {"trained": 1, "evaluated": -1}
    assert four["env_params"]["num_bots"] == 3 and four["env_params"]["fewest_bots"] == -1
    assert four["win_rate"] >= 0.5, four["win_rate"]
    duel = evaluate(run, episodes=200, seed=0, render="none", opponents="lookahead", num_bots=1)
    assert duel["win_rate"] >= 0.8, duel["win_rate"]


def test_eval_of_a_shelf_agent_from_the_command_line(tmp_path, monkeypatch, capsys):
    from jaxrl.cli.eval import main as eval_main

    monkeypatch.chdir(tmp_path)
    assert eval_main(["pretrained:grid-v1", "episodes=4", "render=gif"]) == 0
    out = capsys.readouterr().out
    assert "world return (8 agents) mean" in out and (tmp_path / "runs" / "pretrained-grid-v1" / "replay.gif").is_file()


def test_an_exported_policy_file_plays_exactly_like_its_run(tmp_path):
    run_dir = Path(shutil.copytree(FIXTURE, tmp_path / "run"))
    out = tmp_path / "mine.npz"
    assert pretrained_main(["export", str(run_dir), str(out), "episodes=10"]) == 0
    agent = jaxrl.load(f"pretrained:{out}")
    mine = agent.evaluate(episodes=10, seed=3)
    theirs = jaxrl.load(run_dir).evaluate(episodes=10, seed=3)
    assert mine["return"] == theirs["return"]  # the same parameters: the same episodes
    assert agent.figures["episodes"] == 10 and agent.figures["greedy_return"] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.npz", "run"]  # export leaves no eval files


def test_export_never_replaces_a_file_and_refuses_bad_arguments(tmp_path, capsys):
    out = tmp_path / "mine.npz"
    out.write_bytes(b"mine")
    line = one_line_error(capsys, pretrained_main(["export", str(FIXTURE), str(out)]))
    assert "exists" in line and out.read_bytes() == b"mine"
    one_line_error(capsys, pretrained_main(["export", str(FIXTURE)]))
    one_line_error(capsys, pretrained_main(["export", str(FIXTURE), str(tmp_path / "x.txt")]))
    one_line_error(capsys, pretrained_main(["export", str(FIXTURE), str(tmp_path / "y.npz"), "games=3"]))
    one_line_error(capsys, pretrained_main(["export", str(tmp_path / "nothing"), str(tmp_path / "z.npz")]))
    one_line_error(capsys, pretrained_main(["bogus"]))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.npz"]


def test_an_unknown_name_is_one_line_naming_the_shelf(capsys, tmp_path, monkeypatch):
    from jaxrl.cli.eval import main as eval_main

    monkeypatch.chdir(tmp_path)
    line = one_line_error(capsys, eval_main(["pretrained:snake-v9"]))
    assert "snake-v9 is not on the shelf" in line and "snake-v1" in line
    with pytest.raises(ConfigError):
        jaxrl.pretrained("nope")
    line = one_line_error(capsys, eval_main(["pretrained:arena-selfplay-v1"]))
    assert "arena-selfplay-v1 was retired" in line and "arena-v2" in line and "pretrained:arena-selfplay-v2" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("damage", ["truncated", "not a zip", "not a policy"])
def test_a_damaged_policy_file_is_one_line(tmp_path, capsys, monkeypatch, damage):
    from jaxrl.cli.eval import main as eval_main

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "bad.npz"
    good = (shelf.SHELF / "snake-v1.npz").read_bytes()
    if damage == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "not a zip":
        path.write_text("hello")
    else:
        np.savez(path, x=np.zeros(3))
    line = one_line_error(capsys, eval_main([f"pretrained:{path}", "episodes=2"]))
    assert "not a readable jaxrl policy file" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.npz"]


def test_a_policy_file_of_an_env_that_is_not_installed_is_one_line(tmp_path):
    meta, arrays = shelf.read(shelf.SHELF / "snake-v1.npz")
    meta["env"]["name"] = meta["config"]["env"]["name"] = "someones_own_env"
    path = tmp_path / "theirs.npz"
    shelf._save(path, meta, arrays)
    with pytest.raises(ConfigError) as e:
        jaxrl.load(f"pretrained:{path}")
    assert "plays env someones_own_env, which is not installed here" in str(e.value)


def test_a_shelf_agent_of_another_env_version_is_refused_in_one_line(monkeypatch):
    import dataclasses

    from jaxrl.envs import registry

    real = registry.spec
    monkeypatch.setattr(
        registry, "spec", lambda name: dataclasses.replace(real(name), version=2) if name == "snake" else real(name)
    )
    with pytest.raises(ConfigError) as e:
        jaxrl.pretrained("snake-v1")
    assert "snake-v1" in str(e.value) and "snake-v2" in str(e.value) and "\n" not in str(e.value)


def test_a_shelf_agent_drives_the_arenas_bots_and_plays_head_to_head(tmp_path):
    run = jaxrl.train(
        env="arena",
        run_dir=tmp_path / "mine",
        total_timesteps=512,
        num_envs=8,
        progress=False,
        **{"env.bot_policy": "pretrained:arena-selfplay-v2", "env.view": 7, "algo.num_steps": 16},
    )
    assert run.summary["env_steps_per_seed"] == 512
    against = run.evaluate(episodes=8)  # its bots are the shelf agent, as trained
    assert "placement" in against
    result = run.play_against("pretrained:arena-selfplay-v2", episodes=16)
    assert result["a_wins"] + result["b_wins"] + result["draws"] == 16


def test_a_shelf_agent_as_eval_opponents_and_in_a_rating(tmp_path, monkeypatch, capsys):
    from jaxrl.cli.eval import main as eval_main
    from jaxrl.cli.rate import main as rate_main

    monkeypatch.chdir(tmp_path)
    assert eval_main(["pretrained:arena-selfplay-v2", "episodes=8", "render=none", "opponents=greedy"]) == 0
    assert rate_main(["pretrained:arena-selfplay-v2", "games=8", f"out={tmp_path / 'ratings'}"]) == 0
    table = json.loads((tmp_path / "ratings" / "ratings.json").read_text())
    assert {row["player"] for row in table["table"]} == {
        "pretrained:arena-selfplay-v2",
        "lookahead",
        "space",
        "greedy",
        "random_safe",
    }
    capsys.readouterr()
    line = one_line_error(capsys, eval_main(["pretrained:snake-v1", "vs=greedy"]))
    assert "trained on env=snake, a game of one seat" in line


def test_the_published_rating_table_of_the_shelf_is_reproduced():
    """docs/arena.md's table of the shelf's arena agents and the bots (jaxrl/shelf/ratings.json): the same players
    and games give the same results. Every pair of the table's top player (the champion, the newest agent) is
    played again, and the table fitted with them in place of the published ones; the other pairs are the
    published ones (all 15 again cost CI minutes: docs/tests.md). Bit-identical games hold on one machine;
    elsewhere XLA's rounding can turn a game, so each pair's score may move by a few games and each rating
    within its published error."""
    from jaxrl.trained import headtohead, rating

    published = json.loads((shelf.SHELF / "ratings.json").read_text())
    specs = [row["player"] for row in published["table"] if row["player"].startswith("pretrained:")]
    found = {p.name: p for p in rating.players(specs, jaxrl.load, "latest", bots=True)}
    assert set(found) == {row["player"] for row in published["table"]}
    top = published["table"][0]["player"]
    assert top in specs
    host = next(p for p in found.values() if p.env is not None)
    games, seed = published["games_per_pair"], published["seed"]
    replayed = []
    for pair in published["pairs"]:
        if top in (pair["a"], pair["b"]):
            mine = headtohead.play_pair(found[pair["a"]], found[pair["b"]], games, seed, host=host)
            assert abs(mine["a_wins"] - pair["a_wins"]) <= 0.05 * pair["games"], (pair["a"], pair["b"])
            replayed.append(mine)
        else:
            replayed.append(pair)
    assert sum(top in (p["a"], p["b"]) for p in replayed) == len(found) - 1
    names = list(found)
    model = rating.fit(names, replayed, anchor=published["anchor"])
    for row in published["table"]:
        got = model["ratings"][row["player"]]
        assert abs(got - row["rating"]) <= max(2 * row["error"], 1e-6), row["player"]
