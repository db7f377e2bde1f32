"""Nothing a user saved is lost, broken runs stop loudly, and runs are reproducible.

Run directories are never overwritten; unwritable ones are refused before compiling; failed
saves are survived; a NaN or inf stops the run with the last good checkpoint named; the same
config gives the same bits across processes, chunkings, vmaps and the key-reuse checker.
"""

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl
from jaxrl.cli.train import main

ROOT = Path(__file__).resolve().parents[2]
CARTPOLE = ["env=CartPole-v1", "num_envs=4", "algo.num_steps=64", "total_timesteps=8192", "progress=false"]
DQN = ["env=CartPole-v1", "algo=dqn", "total_timesteps=4000", "algo.learning_starts=500", "algo.buffer_size=1000"]
ONE_LINE = re.compile(r"^error: [^\n]+\n?$")


def hashes(path: Path) -> dict[str, str]:
    """Every file under `path` by relative name, with its SHA-256 (a run directory's fingerprint)."""
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def leaves(run_dir: Path, step: int | None = None) -> list[np.ndarray]:
    """Every array of a checkpoint's runner (keys as their data), via the public API."""
    _, runner, _ = jaxrl.load(run_dir).restore(step)
    is_key = lambda x: jnp.issubdtype(x.dtype, jax.dtypes.prng_key)
    return [np.asarray(jax.random.key_data(x) if is_key(x) else x) for x in jax.tree.leaves(runner)]


def assert_same(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    assert len(a) == len(b) > 0
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


def python(*args: str, **env: str) -> subprocess.CompletedProcess:
    """`python ARGS` in a fresh process from the repository root (exit code and output captured)."""
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=600,
        env={**os.environ, **env},
    )


def steps(run_dir: Path) -> list[int]:
    return sorted(int(p.name) for p in (run_dir / "checkpoints").iterdir() if p.name.isdigit())


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("finished") / "run"
    assert main([*CARTPOLE, "num_chunks=4", "checkpoint.every_steps=1", f"run_dir={run_dir}"]) == 0
    return run_dir


# -- 1. nothing overwritten -------------------------------------------------------------------


def test_a_run_dir_holding_a_run_is_refused_and_left_untouched(finished, capsys):
    before = hashes(finished)
    assert main([*CARTPOLE, "seed=7", f"run_dir={finished}"]) == 2
    err = capsys.readouterr().err
    assert ONE_LINE.match(err), err
    assert f"run_dir={finished} already holds a run" in err and f"resume={finished}" in err and "fresh run_dir" in err
    assert hashes(finished) == before
    with pytest.raises(jaxrl.ConfigError, match="already holds a run"):
        jaxrl.train(env="CartPole-v1", run_dir=finished, total_timesteps=8192)
    assert hashes(finished) == before


def test_overwrite_moves_the_old_run_aside_and_deletes_nothing(finished, tmp_path, capsys):
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(finished, run_dir)
    before = hashes(run_dir)
    assert main([*CARTPOLE, "num_chunks=2", "seed=7", "overwrite=true", f"run_dir={run_dir}"]) == 0
    out = capsys.readouterr().out
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("run.old-")]
    assert len(aside) == 1 and f"is now in {aside[0]}" in out
    assert hashes(aside[0]) == before  # the old run, byte for byte
    assert (run_dir / "summary.json").exists() and jaxrl.load(run_dir).config.seed == 7


def test_an_empty_or_missing_run_dir_is_fine_and_unrelated_files_stay(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("mine")
    assert main([*CARTPOLE, "num_chunks=1", f"run_dir={empty}"]) == 0
    assert (empty / "notes.txt").read_text() == "mine" and (empty / "summary.json").exists()
    assert main([*CARTPOLE, "num_chunks=1", f"run_dir={tmp_path / 'a' / 'b'}"]) == 0


def test_overwrite_never_moves_the_current_directory(finished, tmp_path, monkeypatch, capsys):
    import shutil

    run_dir = tmp_path / "here"
    shutil.copytree(finished, run_dir)
    before = hashes(run_dir)
    monkeypatch.chdir(run_dir)
    assert main([*CARTPOLE, "run_dir=.", "overwrite=true"]) == 2
    assert "would move the current directory aside" in capsys.readouterr().err
    assert hashes(run_dir) == before and sorted(os.listdir(tmp_path)) == ["here"]


def test_two_starts_cannot_both_claim_a_run_dir(tmp_path):
    from jaxrl.config.schema import ConfigError
    from jaxrl.run.rundir import claim

    claim(tmp_path, "first: 1\n")
    with pytest.raises(ConfigError, match="was just taken by another run"):
        claim(tmp_path, "second: 2\n")
    assert (tmp_path / "config.yaml").read_text() == "first: 1\n"


def test_a_damaged_metrics_csv_is_kept_aside_on_resume(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main([*CARTPOLE, "num_chunks=2", f"run_dir={run_dir}"]) == 0
    (run_dir / "metrics.csv").write_bytes(b"\xff\xfe not a csv")
    assert main([f"resume={run_dir}", "total_timesteps=16384"]) == 0
    err = capsys.readouterr().err
    kept = [p for p in run_dir.iterdir() if p.name.startswith("metrics.") and p.name != "metrics.csv"]
    assert len(kept) == 1 and kept[0].read_bytes() == b"\xff\xfe not a csv"
    assert f"metrics.csv is damaged (UnicodeDecodeError); kept as {kept[0]}" in err
    assert [r["env_steps"] for r in learning_columns(run_dir)] == ["16384"]  # the resumed chunk (half the new total)


@pytest.mark.parametrize("where", ["/proc/jaxrl-run", "/dev/null/run", "{file}", "{file}/below"])
def test_an_unwritable_run_dir_is_one_line_before_compiling(where, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    run_dir = where.format(file=blocker)
    assert main([*CARTPOLE, f"run_dir={run_dir}"]) == 2
    out, err = capsys.readouterr()
    assert ONE_LINE.match(err) and f"run_dir={run_dir}" in err, err
    assert "compiled" not in out
    assert blocker.read_text() == "x" and sorted(os.listdir(tmp_path)) == ["a-file"]


def test_eval_keeps_the_previous_eval_json_and_gif_and_says_so(tmp_path, capsys):
    from jaxrl.cli.eval import main as eval_main

    run_dir = tmp_path / "snake"
    assert main(["env=snake", "num_envs=8", "algo.num_steps=16", "total_timesteps=256", f"run_dir={run_dir}"]) == 0
    assert eval_main([f"run_dir={run_dir}", "episodes=2"]) == 0
    first = {name: (run_dir / name).read_bytes() for name in ("eval.json", "replay.gif", "replay.json")}
    capsys.readouterr()
    assert eval_main([f"run_dir={run_dir}", "episodes=2", "seed=1"]) == 0
    err = capsys.readouterr().err
    for name, content in first.items():
        stem, suffix = Path(name).stem, Path(name).suffix
        kept = [p for p in run_dir.iterdir() if p.name.startswith(stem + ".") and p.suffix == suffix and p.name != name]
        assert len(kept) == 1 and kept[0].read_bytes() == content
        assert f"the previous {name} is kept as {kept[0]}" in err


# -- 3. non-finite values stop the run ---------------------------------------------------------

NON_FINITE = re.compile(
    r"^error: non-finite (\w+) at update (\d+) \(env steps ([\d,]+)\); last good checkpoint: (.+)\n$"
)


def test_an_apple_reward_that_overflows_the_return_reaches_the_guard(tmp_path, capsys):
    """3e38 is a finite float32, so it is accepted; two apples make the return inf and the loss NaN."""
    run_dir = tmp_path / "snake"
    args = ["env=snake", "env.reward_apple=3e38", "total_timesteps=2e6", "checkpoint.every_steps=1"]
    assert main([*args, "progress=false", f"run_dir={run_dir}"]) == 3
    err = capsys.readouterr().err
    m = NON_FINITE.match(err)
    assert m, err
    saved = steps(run_dir)
    assert all(step < int(m.group(3).replace(",", "")) for step in saved)  # nothing of the broken state
    assert not (run_dir / "summary.json").exists()
    good = m.group(4)
    assert good == (str(run_dir / "checkpoints" / str(saved[-1])) if saved else "none (the run had saved none yet)")


def poison_before_chunk(chunk: int):
    """A hook that makes every parameter NaN before the chunk of that (1-based) index runs."""
    from jaxrl.run.driver import Hook

    class Poison(Hook):
        seen = 0

        def before_chunk(self, ctx, runner, plan):
            self.seen += 1
            if self.seen != chunk:
                return runner
            return runner.replace(params=jax.tree.map(lambda x: x * jnp.nan, runner.params))

    return Poison()


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_an_injected_nan_stops_the_run_keeps_the_last_good_checkpoint_and_resume_works(algo, tmp_path):
    run_dir = tmp_path / algo
    settings = dict(a.split("=", 1) for a in (CARTPOLE if algo == "ppo" else [*DQN, "progress=false"]))
    settings.update(num_chunks="8", run_dir=str(run_dir), **{"checkpoint.every_steps": "1"})
    with pytest.raises(jaxrl.NonFiniteError) as caught:
        jaxrl.train(**settings, hooks=[poison_before_chunk(5)])
    message = f"error: {caught.value}\n"
    m = NON_FINITE.match(message)
    assert m, message
    saved = steps(run_dir)
    assert m.group(4) == str(run_dir / "checkpoints" / str(saved[-1]))
    assert saved[-1] < int(m.group(3).replace(",", ""))  # the broken chunk was not saved
    assert len(saved) == 3  # chunks 1-4 ran (checkpoint.keep=3); chunk 5 broke
    assert all(np.isfinite(x).all() for x in leaves(run_dir) if x.dtype.kind == "f")
    resumed = jaxrl.train(resume=run_dir, **{"algo.lr": 1e-4})
    assert resumed.summary["updates"] > 0 and not resumed.summary["interrupted"]
    assert all(np.isfinite(x).all() for x in leaves(run_dir) if x.dtype.kind == "f")


def test_the_non_finite_exit_code_and_line_from_the_command_line(tmp_path):
    run_dir = tmp_path / "snake"
    proc = python(
        "-m", "jaxrl.train", "env=snake", "env.reward_apple=3e38", "total_timesteps=1e6", "num_envs=64",
        "algo.num_steps=64", "progress=false", f"run_dir={run_dir}",
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert NON_FINITE.match(proc.stderr) and "Traceback" not in proc.stderr, proc.stderr


# -- 2. saves that fail --------------------------------------------------------------------------


def failing_writes(monkeypatch, fail) -> list[int]:
    """Make checkpoint writes of the steps `fail(step)` picks raise ENOSPC; returns the steps tried."""
    import errno

    from jaxrl.run.checkpoint import Checkpointer

    tried: list[int] = []
    original = Checkpointer._write

    def write(self, step, state, meta):
        tried.append(step)
        if fail(step):
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(self, step, state, meta)

    monkeypatch.setattr(Checkpointer, "_write", write)
    return tried


def test_a_failed_save_warns_keeps_the_previous_checkpoint_and_training_goes_on(tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "run"
    tried = failing_writes(monkeypatch, lambda step: step == 4096)
    assert main([*CARTPOLE, "num_chunks=4", "checkpoint.every_steps=1", f"run_dir={run_dir}"]) == 0
    err = capsys.readouterr().err
    assert tried == [2048, 4096, 6144, 8192]
    assert f"warning: checkpoint {run_dir / 'checkpoints' / '4096'} could not be written" in err
    assert f"last good checkpoint: {run_dir / 'checkpoints' / '2048'}; training goes on" in err
    assert steps(run_dir) == [2048, 6144, 8192] and (run_dir / "summary.json").exists()


def test_a_final_save_that_fails_stops_with_exit_4_and_the_last_good_checkpoint(tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "run"
    failing_writes(monkeypatch, lambda step: step >= 6144)
    assert main([*CARTPOLE, "num_chunks=4", "checkpoint.every_steps=1", f"run_dir={run_dir}"]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (
        f"error: the final checkpoint {run_dir / 'checkpoints' / '8192'} could not be written ([Errno 28] No space"
        f" left on device); last good checkpoint: {run_dir / 'checkpoints' / '4096'}"
    )
    assert steps(run_dir) == [2048, 4096]


def test_a_full_disk_is_survived_and_reported(tmp_path):
    """A real full disk (a 1 MB tmpfs; skipped where mounting is not allowed): warnings, then exit 4, no traceback."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(mount)], capture_output=True, check=False
    )
    if made.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        proc = python(
            "-m", "jaxrl.train", *CARTPOLE, "num_chunks=8", "checkpoint.every_steps=1", "checkpoint.keep=8",
            f"run_dir={mount / 'run'}",
        )  # fmt: skip
        assert proc.returncode == 4, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr and "could not be written" in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert lines[-1].startswith("error: the final checkpoint") and "last good checkpoint: " in lines[-1]
        kept = lines[-1].rsplit("last good checkpoint: ", 1)[1]
        assert Path(kept).is_dir() and int(Path(kept).name) in steps(mount / "run")
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_checkpoint_of_another_run_is_never_replaced(tmp_path):
    from jaxrl.errors import SaveError
    from jaxrl.run.checkpoint import Checkpointer

    runner = {"w": jnp.ones(3)}
    theirs = Checkpointer(tmp_path, run_id="theirs")
    assert theirs.save(10, runner, {"done_updates": 1}, wait=True).error is None
    theirs.close()
    before = hashes(tmp_path)
    ours = Checkpointer(tmp_path, run_id="ours")
    ours.save(10, {"w": jnp.zeros(3)}, {"done_updates": 1})
    with pytest.raises(SaveError, match="belongs to another run"):
        ours.close()
    assert hashes(tmp_path) == before


# -- 4. determinism ------------------------------------------------------------------------------


def learning_columns(run_dir: Path) -> list[dict[str, str]]:
    import csv

    with open(run_dir / "metrics.csv") as f:
        return [{k: v for k, v in row.items() if k not in ("sps", "wall_s")} for row in csv.DictReader(f)]


@pytest.mark.parametrize(
    "settings", [CARTPOLE, pytest.param([*DQN, "progress=false"], marks=pytest.mark.slow)], ids=["ppo", "dqn"]
)
def test_the_same_config_and_seed_give_the_same_bits_in_two_processes(settings, tmp_path):
    runs = [tmp_path / "a", tmp_path / "b"]
    for run_dir in runs:  # each process compiles its own programs: not the test run's shared compilation cache
        proc = python(
            "-m", "jaxrl.train", *settings, "num_chunks=4", f"run_dir={run_dir}", JAX_ENABLE_COMPILATION_CACHE="false"
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert_same(leaves(runs[0]), leaves(runs[1]))
    assert learning_columns(runs[0]) == learning_columns(runs[1])
    assert len(learning_columns(runs[0])) == 4 and "grad_norm" in learning_columns(runs[0])[0]


# optimized: the same bits from two programs (5 and 50 chunks) hold for code compiled as users compile it;
# without XLA:CPU's fusion emitters (the suite's faster compile) PPO's two programs rounded apart by 1e-8
@pytest.mark.optimized
@pytest.mark.parametrize("settings", [CARTPOLE, [*DQN, "progress=false"]], ids=["ppo", "dqn"])
def test_the_number_of_chunks_does_not_change_the_result(settings, tmp_path):
    for chunks in (5, 50):
        assert main([*settings, f"num_chunks={chunks}", f"run_dir={tmp_path / str(chunks)}"]) == 0
    assert_same(leaves(tmp_path / "5"), leaves(tmp_path / "50"))


@pytest.mark.parametrize("name, settings", [("snake", {"size": 6}), ("grid", {"num_agents": 3})])
def test_vmap_over_envs_equals_separate_single_env_runs(name, settings):
    from jaxrl import envs

    env, params = envs.make(name, **settings)
    n, length = 6, 300  # past the grid's 256-step episodes
    keys = jax.random.split(jax.random.key(3), n)
    action_shape = env.action_space(params).shape

    def run_one(key):
        reset_key, key = jax.random.split(key)
        obs, state = env.reset(reset_key, params)

        def step(carry, key):
            obs, state = carry
            act_key, step_key = jax.random.split(key)
            action = jax.random.randint(act_key, action_shape, 0, env.num_actions)
            obs, state, reward, terminated, truncated, _ = env.step(step_key, state, action, params)
            return (obs, state), (obs, reward, terminated, truncated)

        return jax.lax.scan(step, (obs, state), jax.random.split(key, length))[1]

    batched = jax.device_get(jax.jit(jax.vmap(run_one))(keys))
    single = jax.jit(run_one)
    for i in range(n):
        alone = jax.device_get(single(keys[i]))
        for together, by_itself in zip(jax.tree.leaves(batched), jax.tree.leaves(alone), strict=True):
            np.testing.assert_array_equal(together[i], by_itself)
    assert np.asarray(batched[2]).any() or np.asarray(batched[3]).any()  # episodes ended and reset inside


# optimized: vmapped and separate programs agree to rtol 1e-5 as optimized code rounds; unoptimized, they drift apart
@pytest.mark.optimized
@pytest.mark.parametrize("algo", ["ppo", pytest.param("dqn", marks=pytest.mark.slow)])
def test_vmap_over_seeds_equals_separate_runs(algo):
    from jaxrl import build
    from jaxrl.algos.base import get
    from jaxrl.config.schema import TrainConfig
    from tests.helpers import env_config

    spec = get(algo)
    small = {"num_steps": 16, "num_minibatches": 2} if algo == "ppo" else {"buffer_size": 256, "learning_starts": 64}
    cfg = TrainConfig(env=env_config("CartPole-v1"), algo=spec.config(**small), num_envs=4, total_timesteps=1024)
    program = build.program(cfg)
    algo_ = program.algo
    from jaxrl.core.loop import make_train

    train = make_train(algo_)
    keys = jax.random.split(jax.random.key(0), 3)
    together = jax.device_get(jax.jit(jax.vmap(train))(keys))
    for i in range(3):
        alone = jax.device_get(jax.jit(train)(keys[i]))
        params_together = jax.tree.leaves(algo_.policy_params(together[0]))
        params_alone = jax.tree.leaves(algo_.policy_params(alone[0]))
        for a, b in zip(params_together, params_alone, strict=True):
            # Not bit for bit: XLA orders a batched reduction differently (measured: up to 4e-9 apart here).
            np.testing.assert_allclose(a[i], b, rtol=1e-5, atol=1e-7)


KEY_REUSE = """
import sys
import jax
jax.config.update("jax_debug_key_reuse", True)
import jaxrl
algo, env = sys.argv[1], sys.argv[2]
try:  # the checker is on: reusing a key inside jit is an error
    jax.jit(lambda k: jax.random.uniform(k) + jax.random.uniform(k))(jax.random.key(0))
    raise SystemExit("the key reuse checker is off")
except jax.errors.KeyReuseError:
    pass
small = {"ppo": {"algo.num_steps": 16, "algo.num_minibatches": 2},
         "dqn": {"algo.buffer_size": 1024, "algo.learning_starts": 256,
                 "algo.batch_size": 32, "algo.train_freq": 8}}[algo]
env_settings = {"name": "grid", "num_agents": 2} if env == "grid" else env
jaxrl.train(env=env_settings, algo=algo, num_envs=8, total_timesteps=2048, num_chunks=4, progress=False,
            run_dir=sys.argv[3], **small)
print("no key reused")
"""


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
@pytest.mark.parametrize("env", ["snake", pytest.param("grid", marks=pytest.mark.slow)])
def test_training_passes_the_key_reuse_checker(algo, env, tmp_path):
    proc = python("-c", KEY_REUSE, algo, env, str(tmp_path / "run"))
    assert proc.returncode == 0 and "no key reused" in proc.stdout, proc.stderr[-3000:]


def test_a_run_of_1e11_env_steps_fits_its_counters():
    """1e11 env steps per seed: accepted when the updates fit the int32 update counter (the algorithms' env-step
    figures are float32 or exact integer arithmetic on it: tests/algos/test_dqn.py, tests/algos/test_ppo.py),
    refused with one line when they would not."""
    from jaxrl import build
    from jaxrl.config.compose import compose_config
    from jaxrl.config.schema import ConfigError

    cfg, _ = compose_config(["env=snake", "total_timesteps=1e11"])
    program = build.program(cfg)
    assert program.num_updates * program.steps_per_update <= 1e11 < (program.num_updates + 1) * program.steps_per_update
    assert program.num_updates < 2**31 - 1
    runner = program.abstract_runner()
    assert runner.update.dtype == jnp.int32
    cfg, _ = compose_config(["env=CartPole-v1", "algo=dqn", "num_envs=4", "algo.train_freq=4", "total_timesteps=1e11"])
    with pytest.raises(ConfigError, match=r"^total_timesteps=1e\+11 is 25,000,000,000 updates of 4 env steps"):
        build.program(cfg)
