"""The bad-input table: every edge answers bad input with one line, a non-zero exit (or `ConfigError`), no
traceback, and not one byte changed in an existing run directory.

Edges: the training command line, its config values and env settings, curriculum phases, sweep keys
and values, checkpoint paths for `resume=`, `python -m jaxrl.eval` arguments, the Python API, and
damaged run files (config.yaml, summary.json).
"""

import hashlib
import shutil
from pathlib import Path

import pytest

import jaxrl
from jaxrl.cli.eval import main as eval_main
from jaxrl.cli.train import main as train_main

RUN = ["env=CartPole-v1", "num_envs=4", "total_timesteps=4096", "num_chunks=2"]

# (argv for `python -m jaxrl.train`, text the one line must hold). {run} is a finished run, {missing}
# a path that does not exist, {foreign} a directory holding something else. Each case also names
# run_dir={run} unless it names a run_dir or resume= itself, so a bad value must be refused
# before anything in that run is touched.
TRAIN = [
    (["algo.clip_eps=-0.1"], "algo.clip_eps=-0.1 is invalid: must be a finite number > 0"),
    (["algo.gamma=0"], "algo.gamma=0.0 is invalid: must be in (0, 1]"),
    (["algo.gamma=1.5"], "algo.gamma=1.5 is invalid: must be in (0, 1]"),
    (["algo.gae_lambda=-0.5"], "algo.gae_lambda=-0.5 is invalid: must be in [0, 1]"),
    (["algo.lr=0"], "algo.lr=0.0 is invalid: must be a finite number > 0"),
    (["algo.lr=nan"], "algo.lr=nan is invalid: must be a finite number"),
    (["algo.lr=1e39"], "algo.lr=1e+39 is invalid: must be a finite number (float32)"),
    (["algo=dqn", "algo.tau=1e-46"], "algo.tau=1e-46 is invalid: the target network would never move"),
    (["algo.max_grad_norm=0"], "algo.max_grad_norm=0.0 is invalid"),
    (["algo.ent_coef=-0.01"], "algo.ent_coef=-0.01 is invalid: must be a finite number >= 0"),
    (["algo.vf_coef=-1"], "algo.vf_coef=-1.0 is invalid"),
    (["algo.num_minibatches=3"], "algo.num_minibatches=3 must divide num_envs * algo.num_steps"),
    (["algo.update_epochs=0"], "algo.update_epochs=0 is invalid"),
    (["algo.reward_scale=0"], "algo.reward_scale=0.0 is invalid"),
    (["algo.minibatch_size=7"], "algo.minibatch_size=7 must divide"),
    (["algo.num_steps=3000000000"], "algo.num_steps=3000000000 is invalid: must be at most 2147483647"),
    (["algo=dqn", "algo.epsilon_start=1.5"], "algo.epsilon_start=1.5 is invalid: must be in [0, 1]"),
    (["algo=dqn", "algo.epsilon_decay=-0.1"], "algo.epsilon_decay=-0.1 is invalid: must be in [0, 1]"),
    (["algo=dqn", "algo.tau=0"], "algo.tau=0.0 is invalid"),
    (["algo=dqn", "algo.n_step=0"], "algo.n_step=0 is invalid"),
    (["algo=dqn", "algo.learning_starts=-1"], "algo.learning_starts=-1 is invalid"),
    (["algo=dqn", "algo.learning_starts=5000"], "algo.learning_starts=5000 is invalid: it must be below"),
    (["algo=dqn", "algo.batch_size=0"], "algo.batch_size=0 is invalid"),
    (["algo=dqn", "algo.target_update_interval=0"], "algo.target_update_interval=0 is invalid"),
    (["algo=dqn", "algo.huber_delta=0"], "algo.huber_delta=0.0 is invalid"),
    (["algo=dqn", "algo.adam_eps=0"], "algo.adam_eps=0.0 is invalid"),
    (["algo=pqn", "algo.adam_eps=-1e-3"], "algo.adam_eps=-0.001 is invalid"),
    (["algo=dqn", "algo.learning_starts=100", "algo.train_freq=3"], "algo.train_freq=3 must divide num_envs=4"),
    (["num_envs=0"], "num_envs=0 is invalid"),
    (["num_seeds=-1"], "num_seeds=-1 is invalid"),
    (["total_timesteps=0"], "total_timesteps=0.0 is invalid"),
    (["total_timesteps=inf"], "total_timesteps=inf is invalid"),
    (["total_timesteps=100"], "total_timesteps=100 is below one update"),
    (["num_chunks=0"], "num_chunks=0 is invalid"),
    (["total_timesteps=1e11", "algo.num_steps=8"], "total_timesteps=1e+11 is 3,125,000,000 updates of 32 env steps"),
    (["seed=-3"], "seed=-3 is invalid: must be an integer from 0 to 4294967295"),
    (["device=quantum"], "device=quantum is invalid: allowed auto, cpu, tpu, gpu, metal"),
    (["precision=fp16"], "precision=fp16 is invalid: allowed fp32, tf32, bf16"),
    (["logger=csvx"], "logger=csvx is invalid"),
    (["wandb_project=a/b"], "wandb_project='a/b' is invalid"),
    (["checkpoint.keep=0"], "checkpoint.keep=0 is invalid"),
    (["checkpoint.every_steps=-5"], "checkpoint.every_steps=-5 is invalid"),
    (["checkpoint.every_minutes=nan"], "checkpoint.every_minutes=nan is invalid"),
    (["algo.network=transformer"], "algo.network=transformer is invalid: allowed mlp, cnn, gru, lstm"),
    (["algo=dqn", "algo.network=gru"], "algo.network=gru is invalid with algo=dqn: it has no sequence replay"),
    (["algo=pqn", "algo.network=lstm"], "algo.network=lstm is invalid with algo=pqn"),
    (["algo=pqn", "algo.q_lambda=1.5"], "algo.q_lambda=1.5 is invalid: must be in [0, 1]"),
    (["devices=0"], "devices=0 is invalid: a number of devices (1, 2, ...) or all"),
    (["devices=two"], "devices=two is invalid: a number of devices (1, 2, ...) or all"),
    (["devices=4096"], "devices=4096 is more than the"),
    (["seed_devices=2"], "seed_devices=2 must divide num_seeds=1"),
    (["env_groups=3"], "env_groups=3 must divide num_envs=4"),
    (
        ["algo=dqn", "algo.learning_starts=100", "algo.train_freq=4", "env_groups=4", "algo.batch_size=66"],
        "algo.batch_size=66 must divide by env_groups=4",
    ),
    (["env_groups=4", "algo.num_steps=6"], "env_groups=4 gives each group 6 transitions, which must split into 4"),
    (["algo=pqn", "algo.num_minibatches=3"], "algo.num_minibatches=3 must divide num_envs * algo.num_steps"),
    (
        ["algo.network=gru", "algo.bptt_horizon=5"],
        "algo.bptt_horizon=5 is invalid: a positive divisor of algo.num_steps",
    ),
    (["algo.network=gru", "algo.torso=rnn"], "algo.torso=rnn is invalid: allowed mlp, cnn, none"),
    (["algo.network=lstm", "algo.torso=cnn"], "algo.torso=cnn needs (H, W, C) observations"),
    (["algo.network=gru", "algo.rnn_hidden=0"], "algo.rnn_hidden=0 is invalid"),
    (
        ["algo.network=gru", "algo.num_minibatches=8"],
        "algo.num_minibatches=8 gives 8 minibatches, which must divide the 4 BPTT sequences",
    ),
    (["algo.activation=softsign"], "algo.activation=softsign is invalid"),
    (["algo.hidden=[64,0]"], "algo.hidden=[64, 0] is invalid"),
    (["algo.network=cnn"], "algo.network=cnn needs (H, W, C) observations"),
    (["num_envs=abc"], "num_envs=abc"),
    (["no_such_key=1"], "unknown setting 'no_such_key'"),
    (["algo.no_such_key=1"], "no_such_key"),
    # sweeps: shape keys, non-lists, unknown keys, bad members, layouts that do not divide
    (["sweep.algo.num_steps=[64,128]"], "sweep.algo.num_steps cannot be swept: it fixes array shapes"),
    (["sweep.algo.anneal_lr=[true,false]"], "sweep.algo.anneal_lr cannot be swept"),
    (["sweep.algo.lr=3e-4"], "sweep.algo.lr=0.0003 is invalid: a sweep takes a list of values in brackets"),
    (["sweep.algo.lr=1e-4,3e-4"], "sweep.algo.lr=1e-4,3e-4 is invalid: a sweep takes a list in brackets"),
    (["sweep.algo.lr=[]"], "sweep.algo.lr=[] is invalid: give at least one value"),
    (["sweep.algo.lr=[fast,slow]"], "every value must be a finite number"),
    (["sweep.algo.lrr=[1e-3]"], "sweep.algo.lrr cannot be swept: algo=ppo has no such setting; sweepable for ppo: lr"),
    (["sweep.num_envs=[4,8]"], "sweep.num_envs=[4,8]: a sweep key is sweep.algo.<setting> or sweep.env.<field>"),
    (["env=snake", "sweep.env.size=[8,10]"], "sweep.env.size cannot be swept: it is a constructor setting of snake"),
    (["env=snake", "sweep.env.hunger_kills=[true,false]"], "sweep.env.hunger_kills cannot be swept: it is a switch"),
    (["sweep.algo.lr=[1e-3,-1]"], "sweep member 1 (algo.lr=-1): algo.lr=-1.0 is invalid"),
    (["sweep.algo.gamma=[0.9,1.5]"], "sweep member 1 (algo.gamma=1.5): algo.gamma=1.5 is invalid"),
    (["sweep.algo.lr=[1e-3,3e-4,1e-4]", "seed_devices=2"], "seed_devices=2 must divide sweep members x num_seeds = 3"),
    (
        ["sweep.env.gravity=[9.8,5]", "curriculum=[{steps:1000,gravity:7},{}]"],
        "curriculum phase 1 sets env.gravity, which the sweep sets per member",
    ),
    (["resume={run}", "sweep.algo.lr=[1e-3,3e-4]"], "a resumed run keeps its sweep"),
    (["env=nosuchenv"], "unknown env 'nosuchenv'"),
    (["algo=sac"], "unknown algo 'sac'; valid: ppo, a2c, dqn, pqn"),
    (["preset=turbo"], "unknown preset 'turbo'"),
    (["algo=dqn", "preset=fast"], "preset=fast sets PPO's rollout"),
    (["train-forever"], "bad argument 'train-forever': expected key=value"),
    # env settings (constructor arguments and EnvParams)
    (["env=snake", "env.size=2"], "size"),
    (["env=snake", "env.hunger_limit=0"], "env.hunger_limit=0 is invalid"),
    (["env=snake", "env.reward_apple=1e39"], "env.reward_apple=1e+39 is invalid: must be a finite float32"),
    (["env=snake", "env.max_steps_in_episode=3000000000"], "env.max_steps_in_episode=3000000000 is invalid"),
    (["env=grid", "env.view=4"], "grid view must be 3, 5 or 7"),
    (["env=grid", "env.num_agents=0"], "grid num_agents must be an integer"),
    (["env=grid", "env.wall_density=1.5"], "env.wall_density=1.5 is invalid: must be in [0, 1]"),
    (["env=grid", "env.regrow_delay=0"], "env.regrow_delay=0 is invalid"),
    (["env.gravity=nan"], "env.gravity=nan is invalid: must be a finite float32"),
    (["env.max_steps_in_episode=0"], "env.max_steps_in_episode=0 is invalid"),
    (["env.no_such_param=1"], "no_such_param"),
    # curriculum phases
    (["curriculum=[{steps:-5},{}]"], "curriculum phase 1: steps=-5 is invalid"),
    (["curriculum=[{steps:nan},{}]"], "curriculum phase 1: steps=nan is invalid: must be a finite number > 0"),
    (["curriculum=[{steps:inf},{}]"], "curriculum phase 1: steps=inf is invalid"),
    (["env=snake", "curriculum=[{steps:1000,size:12},{}]"], "curriculum phase 1: size changes array shapes"),
    (["env=snake", "curriculum=[{steps:1000,hunger_limit:0},{}]"], "hunger_limit=0 is invalid"),
    (["env=snake", "curriculum=[{steps:1000,reward_apple:nan},{}]"], "reward_apple"),
    (["env=snake", "curriculum=[{steps:1000,hunger:3},{}]"], "hunger is not a parameter of snake"),
    # run directories and checkpoint paths
    (["run_dir={run}"], "already holds a run"),
    (["run_dir=/proc/jaxrl-run"], "run_dir=/proc/jaxrl-run cannot be written"),
    (["run_dir={run}/config.yaml"], "is a file, not a directory"),
    (["compile_cache=/proc/jaxrl-cache"], "compile_cache=/proc/jaxrl-cache is not a usable directory"),
    (["resume={missing}"], "no such directory"),
    (["resume={foreign}"], "is not a jaxrl run directory"),
    (["resume={run}", "num_envs=20"], "would change the shapes of the saved training state"),
    (["resume={run}", "env=snake"], "a resumed run keeps its env"),
    (["resume={run}", "seed=4"], "a resumed run keeps its seed"),
    (["resume={run}", "overwrite=true"], "overwrite= starts a new run"),
    (["resume={run}", "algo.clip_eps=-1"], "algo.clip_eps=-1.0 is invalid"),
    (["resume={run}", "precision=fp16"], "precision=fp16 is invalid: allowed fp32, tf32, bf16"),
    (["resume={run}", "algo.no_such_key=1"], "no_such_key"),
]

EVAL = [
    (["run_dir={run}", "episodes=0"], "episodes=0 is invalid: must be >= 1"),
    (["run_dir={run}", "episodes=many"], "episodes=many is invalid: must be an integer"),
    (["run_dir={run}", "step=12345"], "step=12345 has no checkpoint"),
    (["run_dir={run}", "render=mp4"], "render=mp4 is invalid"),
    (["run_dir={run}", "greedy=maybe"], "greedy=maybe is invalid"),
    (["run_dir={run}", "bogus=1"], "unknown setting 'bogus'"),
    (["run_dir={missing}"], "no such directory"),
    (["run_dir={foreign}"], "is not a jaxrl run directory"),
    (["episodes=3"], "a run directory is required"),
    (["{missing}"], "no such directory"),
    (["run_dir={run}", "fps=0"], "fps=0 is invalid"),
    (["run_dir={run}", "out={run}"], "is a directory: give the GIF's file name"),
]


def fingerprint(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() for p in path.rglob("*") if p.is_file()
    }


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bad-inputs")
    run = root / "run"
    assert train_main([*RUN, "algo.num_steps=64", "progress=false", f"run_dir={run}"]) == 0
    foreign = root / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("not a run")
    return {"run": run, "missing": root / "missing", "foreign": foreign}


def fill(text: str, places: dict[str, Path]) -> str:
    """`text` with {run}, {missing} and {foreign} replaced by those paths (other braces kept)."""
    for name, path in places.items():
        text = text.replace("{" + name + "}", str(path))
    return text


def assert_one_line(err: str, expected: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], err
    assert "Traceback" not in err


def unchanged(places: dict[str, Path], action) -> None:
    """Run `action` and check that the run and the foreign directory are byte for byte as before, and nothing
    was created at the missing path."""
    before = {name: fingerprint(places[name]) for name in ("run", "foreign")}
    action()
    assert {name: fingerprint(places[name]) for name in ("run", "foreign")} == before
    assert not places["missing"].exists()


@pytest.mark.parametrize("args, expected", TRAIN, ids=[" ".join(a) for a, _ in TRAIN])
def test_bad_training_input(args, expected, places, capsys):
    argv = [fill(a, places) for a in args]
    if not any(a.startswith(("run_dir=", "resume=")) for a in argv):
        argv.append(f"run_dir={places['run']}")
    if not any(a.startswith("resume=") for a in argv) and not any(a.startswith("env=") for a in argv):
        argv = [*RUN, *argv]
    elif not any(a.startswith("resume=") for a in argv):
        argv = [*RUN[1:], *argv]
    codes = []
    unchanged(places, lambda: codes.append(train_main(argv)))
    assert codes == [2]
    assert_one_line(capsys.readouterr().err, fill(expected, places))


@pytest.mark.parametrize("args, expected", EVAL, ids=[" ".join(a) for a, _ in EVAL])
def test_bad_eval_input(args, expected, places, capsys):
    argv = [fill(a, places) for a in args]
    codes = []
    unchanged(places, lambda: codes.append(eval_main(argv)))
    assert codes == [2]
    assert_one_line(capsys.readouterr().err, expected)


API = [
    (lambda p: jaxrl.train(env="CartPole-v1", run_dir=p["run"]), "already holds a run"),
    (lambda p: jaxrl.train(env="CartPole-v1", algo={"clip_eps": -1}, run_dir=p["run"]), "algo.clip_eps=-1"),
    (lambda p: jaxrl.train(env="nosuch", run_dir=p["run"]), "unknown env 'nosuch'"),
    (lambda p: jaxrl.train(env="CartPole-v1", precision="fp16", run_dir=p["run"]), "precision=fp16 is invalid"),
    (lambda p: jaxrl.train(env="CartPole-v1", num_envs=object(), run_dir=p["run"]), "cannot be a setting"),
    (lambda p: jaxrl.train(resume=p["run"], num_envs=20), "would change the shapes"),
    (lambda p: jaxrl.train(resume=p["missing"]), "no such directory"),
    (lambda p: jaxrl.load(p["foreign"]), "is not a jaxrl run directory"),
    (lambda p: jaxrl.load(p["run"]).evaluate(step=999), "step=999 has no checkpoint"),
    (lambda p: jaxrl.load(p["run"]).policy_of(step=7), "step=7 has no checkpoint"),
    (lambda p: jaxrl.load(p["run"]).replay(), "does not draw itself as a picture"),
]


@pytest.mark.parametrize("call, expected", API, ids=[m for _, m in API])
def test_bad_python_api_input(call, expected, places):
    caught = []

    def action():
        with pytest.raises(jaxrl.ConfigError) as e:
            call(places)
        caught.append(str(e.value))

    unchanged(places, action)
    assert expected in caught[0] and "\n" not in caught[0]


DAMAGED = [
    ("config.yaml", b"env: [unclosed", "resume", "config.yaml is not a jaxrl run config"),
    ("config.yaml", b"\x00\xff\xfe garbage", "eval", "config.yaml is not a jaxrl run config"),
    (
        "config.yaml",
        b"algo:\n  name: sac\nenv:\n  name: CartPole-v1\n",
        "resume",
        "config.yaml is not a jaxrl run config",
    ),
    ("summary.json", b'{"env": "CartPole-v1", ', "summary", "summary.json is damaged"),
    ("config.yaml", b"", "load", "config.yaml is not a jaxrl run config"),
]


@pytest.mark.parametrize("name, content, how, expected", DAMAGED, ids=[f"{n}-{h}" for n, _, h, _ in DAMAGED])
def test_a_damaged_run_file_is_one_line(name, content, how, expected, places, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(places["run"], run)
    (run / name).write_bytes(content)
    before = fingerprint(run)
    if how == "resume":
        assert train_main([f"resume={run}"]) == 2
        assert_one_line(capsys.readouterr().err, expected)
    elif how == "eval":
        assert eval_main([f"run_dir={run}"]) == 2
        assert_one_line(capsys.readouterr().err, expected)
    else:
        with pytest.raises(jaxrl.ConfigError, match=expected.replace(".", r"\.")) as e:
            run_obj = jaxrl.load(run)
            _ = run_obj.summary
        assert "\n" not in str(e.value)
    assert fingerprint(run) == before


def test_the_table_holds_at_least_40_bad_inputs():
    assert len(TRAIN) + len(EVAL) + len(API) + len(DAMAGED) >= 40
