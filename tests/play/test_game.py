"""The play page's games (jaxrl/play/game.py, controls.py) without a browser: a watched game is eval's greedy
episode of its seed, a person's key moves their snake where the env's state says, the arena seats a person
beside the run and its opponents (or two runs, seats rotated), and a kept game replays to the same board."""

import shutil
from pathlib import Path

import numpy as np
import pytest

import jaxrl
from jaxrl.config.compose import UsageError
from jaxrl.play import controls, make_table
from jaxrl.play.game import PERSON, POLICY
from jaxrl.trained import episodes
from jaxrl.trained.evaluation import evaluate

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "runs" / "format-3"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Copies of the frozen DQN Snake and self-play arena runs (evaluation writes into a run)."""
    root = tmp_path_factory.mktemp("play")
    for name in ("dqn-snake", "arena-selfplay-v2"):
        shutil.copytree(FIXTURES / name, root / name)
    return {"snake": root / "dqn-snake", "arena": root / "arena-selfplay-v2"}


@pytest.fixture(scope="module")
def snake_table(runs):
    return make_table(str(runs["snake"]))[0]


@pytest.fixture(scope="module")
def arena_table(runs):
    """The arena run's table and where its games go (its steps compile once for the tests that share it)."""
    return make_table(str(runs["arena"]))


@pytest.mark.parametrize("seed", [7])
def test_a_watched_game_is_the_greedy_episode_eval_plays_on_its_seed(runs, snake_table, seed):
    result = evaluate(jaxrl.load(runs["snake"]), episodes=1, seed=seed, render="gif")
    recorded = episodes.read(result["episode_file"])
    game = snake_table.new_game(seed, person=False)
    while not game.over:
        game.step(None)
    assert game.actions == recorded.actions
    assert game.total == pytest.approx(result["return"]["mean"])
    assert game.status()["score"] == result["score"]["mean"]


def test_the_readout_names_the_actions_and_holds_the_policys_numbers(snake_table):
    game = snake_table.new_game(1, person=False)
    shown = game.readout()
    assert shown["kind"] == "Q-values" and shown["names"] == ["up", "right", "down", "left"]  # DQN, absolute moves
    assert shown["value"] == pytest.approx(max(shown["numbers"]), abs=1e-3)
    game.step(None)
    assert game.actions[-1] == shown["best"]  # greedy: the best of the numbers it showed


def _snake_head(state) -> tuple[int, int]:
    return int(np.asarray(state.head_row)), int(np.asarray(state.head_col))


@pytest.mark.parametrize("actions, mirrored", [("absolute", False), ("relative", False), ("relative", True)])
def test_a_persons_key_moves_the_snake_that_way_whatever_its_actions_and_mirroring(actions, mirrored):
    import jax

    from jaxrl import envs

    env, params = envs.make("snake", size=8, actions=actions, view="world" if actions == "absolute" else "ego")
    _, state = env.reset(jax.random.key(2), params)
    state = state.replace(mirrored=np.bool_(mirrored))
    heading = int(np.asarray(state.direction))
    for move in ("up", "right", "down", "left", "turn_left", "turn_right", "straight", None):
        action = controls.person_action(env, state, 0, move)
        _, after, _, _, _ = env.step_env(jax.random.key(0), state, action, params)
        want = {"turn_left": (heading - 1) % 4, "turn_right": (heading + 1) % 4}.get(move, heading)
        if move in controls.DIRECTIONS and (controls.DIRECTIONS.index(move) - heading) % 4 != 2:
            want = controls.DIRECTIONS.index(move)  # a reverse goes straight on
        assert int(np.asarray(after.direction)) == want, (move, heading)


def test_a_persons_key_in_the_arena_moves_any_of_the_4_ways_from_the_stacked_start_and_never_back_later():
    import jax

    from jaxrl import envs

    env, params = envs.make("arena", num_snakes=2)
    assert controls.action_names(env) == ("turn left", "straight on", "turn right", "back")
    _, state = env.reset(jax.random.key(0), params)
    heads = set()
    for move in controls.DIRECTIONS:
        _, after, _, _, _ = env.step_env(jax.random.key(0), state, controls.person_action(env, state, 0, move), params)
        assert int(after.heading[0]) == controls.DIRECTIONS.index(move) and bool(after.alive[0])
        heads.add(int(after.head[0]))
    assert len(heads) == 4
    heading = int(after.heading[0])
    reverse = controls.DIRECTIONS[(heading + 2) % 4]
    assert controls.person_action(env, after, 0, reverse) == 1  # later a reverse key goes straight on


def test_an_unknown_move_is_refused():
    from jaxrl import envs

    env, params = envs.make("snake")
    with pytest.raises(ValueError, match="move 'jump' is invalid: allowed up, right"):
        controls.person_action(env, None, 0, "jump")


def test_a_person_in_the_arena_sits_beside_the_run_and_its_opponents(runs, arena_table):
    table, games = arena_table
    assert games == runs["arena"] / "games"
    game = table.new_game(4, person=True)
    assert game.mode.name == "table" and list(game.owners) == [PERSON, POLICY, *[table.owner_of("greedy")] * 2]
    assert game.names[:2] == ["you", str(runs["arena"])] and game.focus == 1
    heading = int(np.asarray(game.state.heading)[0])
    row, col = divmod(int(np.asarray(game.state.head)[0]), table.modes["table"].env.size)
    turn_to = controls.DIRECTIONS[(heading + 1) % 4]  # a right turn
    game.step(turn_to)
    moved = divmod(int(np.asarray(game.state.head)[0]), table.modes["table"].env.size)
    drow, dcol = {"up": (-1, 0), "right": (0, 1), "down": (1, 0), "left": (0, -1)}[turn_to]
    if bool(np.asarray(game.state.alive)[0]):
        assert moved == (row + drow, col + dcol)
    assert int(np.asarray(game.state.heading)[0]) == (heading + 1) % 4
    watched = table.new_game(4, person=False)
    assert watched.mode.name == "env" and watched.names[0] == str(runs["arena"])  # eval's game when watching


def test_head_to_head_games_rotate_the_seats_and_leave_no_seat_for_a_person(runs):
    table, _ = make_table(str(runs["arena"]), vs="random_safe")
    assert not table.can_play
    first, second = table.new_game(0, False, 0), table.new_game(0, False, 1)
    assert (
        first.names == [str(runs["arena"]), "random_safe"] * 2
        and list(second.names) == ["random_safe", str(runs["arena"])] * 2
    )
    with pytest.raises(UsageError, match="no seat is free for a person"):
        table.new_game(0, person=True)
    other, _ = make_table(str(runs["arena"]), opponents=str(runs["arena"]))
    assert list(other.new_game(0, True).owners) == [PERSON, POLICY, *[other.others_from] * 2]


def test_a_kept_game_replays_to_the_board_the_page_showed(arena_table, tmp_path):
    table, _ = arena_table
    game = table.new_game(9, person=True)
    for move in ["left", "up", None, "right", None, None, "down"] * 3:
        game.step(move)
        if game.over:
            break
    path = game.episode().write(tmp_path / "kept.json")
    kept = episodes.read(path)
    assert kept.table == {"seats": 4} and kept.env_settings["size"] == 11
    assert kept.seats[0] == "you"
    env, params = episodes.env_of(kept)
    played = episodes.simulate(env, params, kept.key, kept.actions)
    assert np.array_equal(played["frames"][-1], game.picture())
    assert float(played["return"][-1]) == pytest.approx(game.total, abs=1e-5)  # float32 sums in another order


@pytest.mark.parametrize(
    "kwargs, said",
    [
        ({"env": {"name": "CartPole-v1"}}, "CartPole-v1 cannot be drawn"),
        ({"target": "pretrained:nothing"}, "pretrained:nothing"),
        (
            {"env": {"name": "snake"}, "opponents": "greedy"},
            "opponents= and num_bots= apply to games of several players",
        ),
        ({"env": {"name": "snake"}, "vs": "greedy"}, "vs= needs a game of two seats or more"),
    ],
    ids=["not-drawn", "unknown-shelf-name", "opponents-in-a-game-of-one", "vs-in-a-game-of-one"],
)
def test_a_table_that_cannot_be_set_is_one_line(kwargs, said):
    with pytest.raises((UsageError, jaxrl.ConfigError)) as caught:
        make_table(**kwargs)
    assert said in str(caught.value) and "\n" not in str(caught.value)
