"""A user's own gymnax env, registered with one call, trains from the Python API and from a script's command line."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import jaxrl
from jaxrl import envs
from jaxrl.cli.train import main

ROOT = Path(__file__).resolve().parents[2]

# A user's env: walk right along a corridor of `length` cells to earn `reward`; no package of ours needed.
CORRIDOR = textwrap.dedent(
    """
    import jax
    import jax.numpy as jnp
    from flax import struct
    from gymnax.environments import environment, spaces


    @struct.dataclass
    class State(environment.EnvState):
        pos: jax.Array


    @struct.dataclass
    class Params(environment.EnvParams):
        reward: float = 1.0
        max_steps_in_episode: int = 50


    class Corridor(environment.Environment):
        def __init__(self, length: int = 6):
            super().__init__()
            self.length = length

        @property
        def default_params(self):
            return Params()

        def step_env(self, key, state, action, params):
            pos = jnp.clip(state.pos + 2 * action - 1, 0, self.length - 1)
            done = pos == self.length - 1
            state = State(time=state.time + 1, pos=pos)
            reward = jnp.where(done, params.reward, 0.0)
            return self.get_obs(state), state, reward, done, {}

        def reset_env(self, key, params):
            state = State(time=0, pos=jnp.int32(0))
            return self.get_obs(state), state

        def get_obs(self, state, params=None, key=None):
            return jax.nn.one_hot(state.pos, self.length)

        def is_terminal(self, state, params):
            return state.pos == self.length - 1

        def is_truncated(self, state, params):
            return state.time >= params.max_steps_in_episode

        @property
        def name(self):
            return "Corridor"

        @property
        def num_actions(self):
            return 2

        def action_space(self, params=None):
            return spaces.Discrete(2)

        def observation_space(self, params):
            return spaces.Box(0.0, 1.0, (self.length,), jnp.float32)
    """
)


@pytest.fixture(scope="module")
def corridor(tmp_path_factory):
    """The env's module on disk (for the script) and registered here (for the API)."""
    folder = tmp_path_factory.mktemp("user_env")
    (folder / "corridor.py").write_text(CORRIDOR)
    sys.path.insert(0, str(folder))
    import corridor as module

    envs.register("corridor", module.Corridor, tuned={"ppo": {"num_envs": 8, "algo": {"num_steps": 16}}})
    yield folder
    sys.path.remove(str(folder))
    envs.registry._ENVS.pop("corridor")  # later tests see the registry as shipped


@pytest.mark.optimized  # a learning check: compiled as its 32 measured draws were (docs/reliability.md)
def test_registered_env_trains_from_the_api_with_its_settings_and_tuned_defaults(corridor, tmp_path):
    run = jaxrl.train(
        env={"name": "corridor", "length": 4, "reward": 2.0},
        total_timesteps=4096,
        run_dir=tmp_path / "r",
        progress=False,
    )
    assert run.config.num_envs == 8 and run.config.algo.num_steps == 16  # the registration's tuned defaults
    assert run.config.env.length == 4 and run.config.env.reward == 2.0
    assert run.summary["final_return"] == pytest.approx(2.0)  # every episode ends at the goal
    assert run.evaluate(episodes=4)["return"]["mean"] == pytest.approx(2.0)


def test_registration_derives_shape_keys_params_help_and_checks(corridor, capsys, tmp_path):
    spec = envs.spec("corridor")
    assert spec.shape_keys == {"length": 6}
    assert spec.param_fields == {"reward": 1.0, "max_steps_in_episode": 50}
    assert main(["--help", "env=corridor"]) == 0
    out = capsys.readouterr().out
    assert "length=6" in out and "reward=1.0" in out
    assert main(["env=corridor", "env.lenght=3", f"run_dir={tmp_path / 'x'}"]) == 2  # misspelt: one line
    assert "lenght" in capsys.readouterr().err
    bad_phase = ["env=corridor", "curriculum=[{steps:1000,length:3},{}]", f"run_dir={tmp_path / 'y'}"]
    assert main(bad_phase) == 2  # a shape setting cannot change between phases
    assert "length" in capsys.readouterr().err


def test_a_script_that_registers_its_env_trains_it_from_the_command_line(corridor, tmp_path):
    script = tmp_path / "train_corridor.py"
    script.write_text(
        textwrap.dedent(
            """
            from jaxrl import envs
            from corridor import Corridor
            from jaxrl.train import main

            envs.register("corridor", Corridor)
            raise SystemExit(main())
            """
        )
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(corridor), str(ROOT)]))
    args = ["env=corridor", "env.length=5", "num_envs=4", "total_timesteps=2048", f"run_dir={tmp_path / 'run'}"]
    proc = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "run" / "summary.json").is_file()
    bad = subprocess.run(
        [sys.executable, str(script), "env=corridor", "env.length=x"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


def test_importing_envs_defers_gymnaxs_plotting_imports_until_they_are_used():
    """gymnax's env files import seaborn and pyplot for rendering (1.6 s); `import envs` leaves them unloaded,
    a later `import seaborn` is the real module, and gymnax's own references load it on first use."""
    script = textwrap.dedent(
        """
        import sys
        from jaxrl import envs
        import gymnax.environments.misc.pong as pong
        loaded = {"seaborn", "matplotlib.pyplot", "scipy.stats", "IPython"} & set(sys.modules)
        assert not loaded, loaded
        import seaborn
        assert type(seaborn).__name__ == "module" and pong.sns.color_palette is seaborn.color_palette
        import matplotlib
        matplotlib.use("Agg")
        fig, _ = pong.plt.subplots()
        assert type(sys.modules["matplotlib.pyplot"]).__name__ == "module" and fig is not None
        print("ok")
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, cwd=Path(__file__).parent
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
