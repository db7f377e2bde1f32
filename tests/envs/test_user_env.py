"""A two-player env a user writes and registers outside envs/ (here, a module in a temporary folder named by
$JAXRL_ENVS) is trained, evaluated head to head, rated and played with the same commands as the arena: every
command reaches it through the env contract's hooks and their defaults, never through its name."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]

DUEL = textwrap.dedent(
    '''
    """Two players race for one coin on a size x size board; each coin taken is +1 to whoever steps on it, and a
    new one appears. 24 steps a game. Observation (2, size, size, 3) uint8: my cell, the other's, the coin."""

    import jax
    import jax.numpy as jnp
    from flax import struct
    from gymnax.environments import environment

    from jaxrl import envs
    from jaxrl.envs.base import Env
    from jaxrl.envs.spaces import agents_box


    @struct.dataclass
    class EnvState(environment.EnvState):
        pos: jax.Array  # (2,) int32 cell of each player
        coin: jax.Array  # () int32 cell of the coin
        score: jax.Array  # (2,) int32 coins taken


    @struct.dataclass
    class EnvParams(environment.EnvParams):
        max_steps_in_episode: int = 24


    class Duel(Env):
        name = "duel"
        num_agents = 2
        num_actions = 5

        def __init__(self, size: int = 5):
            super().__init__()
            self.size = size

        @property
        def default_params(self):
            return EnvParams()

        def observation_space(self, params=None):
            return agents_box((self.size, self.size, 3), 2)

        def action_names(self):
            return ("stay", "up", "right", "down", "left")

        def _cells(self, key, salt, count):
            return (self.uniform(key, salt, count) * self.size * self.size).astype(jnp.int32)

        def reset_env(self, key, params):
            cells = self._cells(key, self.RESET_SALT, 3)
            pos = jnp.stack([cells[0], (cells[0] + 1 + cells[1] % (self.size * self.size - 1)) % (self.size**2)])
            state = EnvState(pos=pos, coin=cells[2], score=jnp.zeros(2, jnp.int32), time=0)
            return self.get_obs(state), state

        def step_env(self, key, state, action, params):
            row, col = state.pos // self.size, state.pos % self.size
            row = jnp.clip(row + jnp.array([0, -1, 0, 1, 0])[action], 0, self.size - 1)
            col = jnp.clip(col + jnp.array([0, 0, 1, 0, -1])[action], 0, self.size - 1)
            pos = (row * self.size + col).astype(jnp.int32)
            got = pos == state.coin
            coin = jnp.where(jnp.any(got), self._cells(key, self.STEP_SALT, 1)[0], state.coin)
            state = state.replace(pos=pos, coin=coin, score=state.score + got, time=state.time + 1)
            info = {"score": jnp.sum(state.score).astype(jnp.float32)}
            return self.get_obs(state), state, got.astype(jnp.float32), jnp.bool_(False), info

        def is_truncated(self, state, params):
            return state.time >= params.max_steps_in_episode

        def get_obs(self, state, params=None, key=None):
            cells = jnp.arange(self.size * self.size).reshape(self.size, self.size)
            me = cells[None] == state.pos[:, None, None]
            other = cells[None] == state.pos[::-1, None, None]
            coin = jnp.broadcast_to(cells == state.coin, me.shape)
            return jnp.stack([me, other, coin], axis=-1).astype(jnp.uint8)

        def render_rgb(self, state):
            cells = jnp.arange(self.size * self.size).reshape(self.size, self.size)
            picture = jnp.zeros((self.size, self.size, 3), jnp.uint8)
            picture = jnp.where((cells == state.coin)[..., None], jnp.array([240, 200, 40], jnp.uint8), picture)
            picture = jnp.where((cells == state.pos[1])[..., None], jnp.array([70, 140, 255], jnp.uint8), picture)
            picture = jnp.where((cells == state.pos[0])[..., None], jnp.array([60, 220, 90], jnp.uint8), picture)
            return jnp.repeat(jnp.repeat(picture, 8, axis=0), 8, axis=1)


    envs.register("duel", Duel)
    '''
)


@pytest.fixture(scope="module")
def duel(tmp_path_factory):
    """The folder of the user's module, and it registered in this process too (as $JAXRL_ENVS does in a command)."""
    folder = tmp_path_factory.mktemp("user")
    (folder / "duel_env.py").write_text(DUEL)
    sys.path.insert(0, str(folder))
    try:
        import duel_env  # noqa: F401
    finally:
        sys.path.remove(str(folder))
    return folder


def command(duel: Path, *args: str, plugins: str = "duel_env") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(duel), str(ROOT)]), JAXRL_ENVS=plugins)
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=duel, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def test_a_users_two_player_env_is_played_by_a_person_and_met_by_its_default_bot_at_its_table(duel):
    from jaxrl.play import make_table

    table, _ = make_table(env={"name": "duel"})
    assert "table" in table.modes and table.bot_kinds == ("random",)
    game = table.new_game(0, person=True)
    assert game.mode.name == "env" and game.names == ["you", "random"]
    start = int(np.asarray(game.state.pos)[0])
    game.step("down")  # "down" is the action named so
    row, col = divmod(start, 5)
    assert int(np.asarray(game.state.pos)[0]) == min(row + 1, 4) * 5 + col
    assert game.picture().shape == (40, 40, 3)
    while not game.over:
        game.step(None)
    assert game.t == 24 and game.status()["over"] and game.status()["result"].startswith("score ")

    versus, _ = make_table(env={"name": "duel"}, vs="random")
    met = versus.new_game(0, False, 1)  # game 1: the default bot holds seat 0, the (absent) run seat 1
    assert met.mode.name == "table" and met.names == ["random", "random"] and list(met.owners) == [2, 1]
    assert not met.takes_turns()  # the coin race has no heading: a key is a move, never a turn
    while not met.over:
        met.step(None)
    assert met.t == 24 and met.status()["result"].startswith("score ")


def test_a_users_env_is_trained_rated_played_and_met_head_to_head_by_the_arenas_commands(duel):
    run = duel / "run"
    train = ["env=duel", "total_timesteps=4096", "num_envs=16", "algo.num_steps=8", "progress=false"]
    made = command(duel, "jaxrl.train", *train, f"run_dir={run}")
    assert made.returncode == 0, made.stderr[-2000:]

    versus = command(duel, "jaxrl.eval", str(run), "vs=random", f"vs={run}", "episodes=40")
    assert versus.returncode == 0, versus.stderr[-2000:]
    saved = json.loads((run / "versus.json").read_text())
    assert [p["b"].split("@")[0] for p in saved["pairs"]] == ["random", str(run)]
    assert all(p["a_wins"] + p["b_wins"] + p["draws"] == 40 and p["unfinished"] == 0 for p in saved["pairs"])
    assert (run / "versus.gif").stat().st_size > 0

    rated = command(duel, "jaxrl.rate", str(run), "games=40", f"out={duel / 'ratings'}")
    assert rated.returncode == 0, rated.stderr[-2000:]
    ratings = json.loads((duel / "ratings" / "ratings.json").read_text())
    assert ratings["anchor"] == "random" and {r["player"] for r in ratings["table"]} == {"random", saved["run"]}

    from jaxrl.play import make_table

    table, _ = make_table(str(run), vs="random")
    first = table.new_game(0, False, 0)
    assert first.mode.name == "table" and first.names == [str(run), "random"]
    while not first.over:
        first.step(None)
    assert first.status()["result"]
    watched, _ = make_table(str(run))
    assert watched.new_game(1, person=True).names == ["you", str(run)]


def test_a_plugin_module_that_cannot_be_imported_is_one_line(duel):
    proc = command(duel, "jaxrl.train", "env=duel", "total_timesteps=64", plugins="duel_env,no_such_module")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "JAXRL_ENVS=no_such_module cannot be imported (ModuleNotFoundError" in proc.stderr


def test_a_plugin_that_failed_is_said_again_at_every_look_up(monkeypatch):
    from jaxrl.envs import registry

    monkeypatch.setenv(registry.PLUGINS, "no_such_module")
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    monkeypatch.setattr(registry, "_plugin_error", None)
    for _ in range(2):  # not "unknown env" the second time: the cause stays the cause
        with pytest.raises(registry.PluginError, match="JAXRL_ENVS=no_such_module cannot be imported"):
            registry.spec("duel_that_is_not_there")
