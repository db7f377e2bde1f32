"""Episode files (jaxrl/trained/episodes.py) and the replays drawn from them: eval writes its best episode's seed and
actions beside replay.gif, `python -m jaxrl.eval replay=FILE` steps it again to the same frames, `render=html`
writes a self-contained HTML replay; bad files get one line each."""

import base64
import io
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageSequence

import jaxrl
from jaxrl.cli.eval import main as eval_main
from jaxrl.trained import episodes
from jaxrl.trained.evaluation import STRIP_PIXELS, evaluate
from tests.helpers import one_line_error

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "runs" / "format-3"


def gif_frames(path: Path) -> list[np.ndarray]:
    return [np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(Image.open(path))]


@pytest.fixture(scope="module")
def snake_run(tmp_path_factory) -> Path:
    """A copy of the frozen DQN Snake run, with an evaluation's replay written (render=html: every file)."""
    run_dir = tmp_path_factory.mktemp("episodes") / "dqn-snake"
    shutil.copytree(FIXTURES / "dqn-snake", run_dir)
    evaluate(jaxrl.load(run_dir), episodes=6, seed=3, render="html")
    return run_dir


def test_eval_keeps_its_best_episode_as_seed_and_actions(snake_run):
    result = json.loads((snake_run / "eval.json").read_text())
    episode = episodes.read(snake_run / "replay.json")
    assert result["episode_file"] == str(snake_run / "replay.json")
    assert episode.env == "snake" and episode.env_version == 1 and episode.table is None
    assert episode.key == episodes.KeyChain(3, 1, result["best"]["seed"], 6, result["best"]["episode"])
    assert len(episode.actions) == result["best"]["length"] == len(gif_frames(snake_run / "replay.gif"))
    assert all(a in (0, 1, 2, 3) for a in episode.actions)  # absolute Snake actions, one world
    assert episode.result["return"] == result["best"]["return"]
    assert episode.env_params["hunger_limit"] >= 100  # as played: the env's eval_params


def test_replaying_an_episode_file_draws_the_frames_eval_drew(snake_run, capsys):
    out = snake_run / "again" / "replayed.gif"
    assert eval_main([f"replay={snake_run / 'replay.json'}", f"out={out}"]) == 0
    said = capsys.readouterr()
    assert "replayed" in said.out and "differs" not in said.err
    first, again = gif_frames(snake_run / "replay.gif"), gif_frames(out)
    assert len(first) == len(again) and all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    # Beside the file by default, never over a GIF of the same name.
    assert eval_main([f"replay={snake_run / 'replay.json'}"]) == 0
    assert (snake_run / "replay.replay.gif").is_file()


def test_the_html_replay_holds_every_frame_and_needs_nothing_from_outside(snake_run):
    page = (snake_run / "replay.html").read_text()
    assert not re.search(r"(src|href)=['\"]?(https?:)?//", page) and "<link" not in page
    data = json.loads(re.search(r"<script type='application/json'[^>]*>(.*?)</script>", page, re.S).group(1))
    gif = gif_frames(snake_run / "replay.gif")
    assert len(data["frames"]) == len(data["captions"]) == len(gif)
    last = np.asarray(Image.open(io.BytesIO(base64.b64decode(data["frames"][-1]))).convert("RGB"))
    board = gif[-1][:-STRIP_PIXELS]  # the GIF's board: the same pixels, upscaled
    scale = board.shape[0] // last.shape[0]
    assert np.array_equal(board[::scale, ::scale], last)


def test_a_recorded_result_that_the_env_no_longer_gives_is_said(snake_run, tmp_path, capsys):
    data = json.loads((snake_run / "replay.json").read_text())
    data["result"]["return"] += 5
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(data))
    assert eval_main([f"replay={changed}"]) == 0
    assert "the replay differs from the recorded game (return" in capsys.readouterr().err


@pytest.mark.parametrize(
    "change, said",
    [
        (lambda d: d.update(format=99), f"episode format 99, newer than this jaxrl's {episodes.FORMAT}"),
        (lambda d: d.update(env_version=7), "played on snake-v7; this jaxrl has snake-v1"),
        (lambda d: d.update(kind="something"), "is damaged (ValueError: not a jaxrl episode file)"),
        (lambda d: d.update(actions=[]), "is damaged (ValueError: it holds no actions)"),
        (lambda d: d["env_params"].update(gravity=9.8), "env params gravity are not this env's"),
    ],
    ids=["newer-format", "other-env-version", "not-an-episode", "no-actions", "unknown-param"],
)
def test_an_episode_file_that_cannot_replay_here_gets_one_line(snake_run, tmp_path, capsys, change, said):
    data = json.loads((snake_run / "replay.json").read_text())
    change(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    before = sorted(p.name for p in tmp_path.iterdir())
    assert said in one_line_error(capsys, eval_main([f"replay={bad}"]))
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_replay_refuses_what_does_not_apply_and_files_that_are_not_there(snake_run, tmp_path, capsys):
    for argv, said in (
        ([f"replay={tmp_path / 'none.json'}"], "none.json is not a file"),
        (["replay=x.json", "episodes=5"], "episodes= does not apply to replay=FILE"),
        ([str(snake_run), "replay=x.json"], "run_dir= does not apply to replay=FILE"),
        (["replay=x.json", "render=terminal"], "render=terminal does not apply to replay=FILE: allowed gif, html"),
    ):
        assert said in one_line_error(capsys, eval_main(argv))
    (tmp_path / "text.json").write_text("{ not json")
    assert "is damaged (JSONDecodeError" in one_line_error(capsys, eval_main([f"replay={tmp_path / 'text.json'}"]))


def test_a_format_1_table_game_replays_to_the_result_it_recorded(tmp_path, capsys):
    # a person's game beside pretrained:arena-selfplay-v2 and two greedy bots, saved by play before the format-2
    # table ({"seats": N} over the env's settings): frozen, migrated on read
    path = Path(__file__).resolve().parents[1] / "data" / "episodes" / "format-1-table.json"
    kept = episodes.read(path)
    assert kept.table == {"seats": 4} and kept.env_settings["num_snakes"] == 4 and kept.env_settings["size"] == 11
    env, params = episodes.env_of(kept)
    played = episodes.simulate(env, params, kept.key, kept.actions)
    assert len(played["done"]) == kept.result["length"] == 60
    assert eval_main([f"replay={path}", f"out={tmp_path / 'replay.gif'}"]) == 0
    assert "no longer" not in capsys.readouterr().err
