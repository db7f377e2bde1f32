"""Runs outlive the version that wrote them: every frozen fixture of every run format (tests/data/runs/,
written by tests/data/make_runs.py at the commit that introduced the format) loads, evaluates to its recorded
greedy figures and resumes with the current code, through its migrations (jaxrl/config/formats.py). Loading
changes nothing on disk; `python -m jaxrl.upgrade` and a resume write the migrated checkpoints beside the old
ones. A newer format, one older than any migration, another env version, a damaged run.json: one line each."""

import hashlib
import json
import shutil
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxrl
from jaxrl.cli.upgrade import main as upgrade_main
from jaxrl.config import formats
from jaxrl.config.schema import ConfigError
from jaxrl.run.checkpoint import Checkpointer
from tests.helpers import one_line_error

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
FIXTURES = sorted(p for p in RUNS.glob("format-*/*") if (p / "expected.json").is_file())
# Greedy figures across CPUs: a near-tie between two actions can break the other way where XLA rounds
# differently, and one changed action changes an episode. On the CPU that wrote a fixture they are equal.
TOLERANCE = {"return": 0.15, "score": 0.15, "win_rate": 0.15}


def copy_of(fixture: Path, tmp_path: Path) -> Path:
    """The fixture copied where a test may write (tests write nothing into the source tree)."""
    return Path(shutil.copytree(fixture, tmp_path / fixture.name))


def files(run_dir: Path) -> dict[str, str]:
    """Every file under `run_dir` with its content's hash."""
    return {
        str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file()
    }


def expected(run_dir: Path) -> dict:
    return json.loads((run_dir / "expected.json").read_text())


def env_versions(run_dir: Path) -> tuple[str, int, int]:
    """(env, the version the fixture's checkpoint played, this jaxrl's version of it)."""
    from jaxrl import envs

    (meta,) = run_dir.glob("checkpoints/*/meta/metadata")
    env = json.loads(meta.read_text())["env"]
    return env["name"], env.get("version", 1), envs.spec(env["name"]).version


CURRENT = [f for f in FIXTURES if env_versions(f)[1] == env_versions(f)[2]]
EARLIER = [f for f in FIXTURES if f not in CURRENT]  # of an env whose rules changed since: refused in one line


def test_there_is_a_fixture_of_each_kind_for_every_format_from_the_oldest():
    kinds = {"ppo-cartpole", "dqn-snake", "rppo-memorychain", "arena-selfplay"}
    for version in range(formats.OLDEST, formats.FORMAT + 1):
        assert {p.name for p in (RUNS / f"format-{version}").iterdir() if p.is_dir()} >= kinds, version
    for fixture in FIXTURES:
        assert sum(f.stat().st_size for f in fixture.rglob("*") if f.is_file()) < 2**20, fixture
        assert expected(fixture)["format"] == int(fixture.parent.name.removeprefix("format-"))


@pytest.mark.parametrize("fixture", EARLIER, ids=[f"{p.parent.name}/{p.name}" for p in EARLIER])
def test_a_fixture_of_an_earlier_env_version_is_refused_in_one_line_changing_nothing(fixture, tmp_path, capsys):
    from jaxrl.cli.eval import main as eval_main

    run_dir = copy_of(fixture, tmp_path)
    before = files(run_dir)
    name, saved, current = env_versions(run_dir)
    line = one_line_error(capsys, eval_main([str(run_dir), "episodes=2"]))
    assert f"{name}-v{saved}" in line and f"{name}-v{current}" in line, line
    with pytest.raises(formats.FormatError, match=f"trained on {name}-v{saved}"):
        jaxrl.train(resume=run_dir, total_timesteps=2 * expected(run_dir)["env_steps_per_seed"], progress=False)
    assert files(run_dir) == before


@pytest.mark.parametrize("fixture", CURRENT, ids=[f"{p.parent.name}/{p.name}" for p in CURRENT])
def test_a_fixture_loads_and_evaluates_to_its_recorded_figures_changing_nothing_on_disk(fixture, tmp_path):
    run_dir = copy_of(fixture, tmp_path)
    before = files(run_dir)
    want = expected(run_dir)
    got = jaxrl.load(run_dir).evaluate(episodes=want["episodes"], seed=0)
    for name, value in want["greedy"].items():
        figure = got["win_rate"] if name == "win_rate" else got[name]["mean"]
        assert abs(figure - value) <= TOLERANCE[name] * max(abs(value), 1.0), (name, figure, value)
    after = files(run_dir)
    after.pop("eval.json")  # what evaluate writes; the run's own files are as they were
    assert after == before


@pytest.mark.parametrize("fixture", CURRENT, ids=[f"{p.parent.name}/{p.name}" for p in CURRENT])
def test_a_fixture_resumes_through_its_migrations_keeping_the_old_checkpoint(fixture, tmp_path, capsys):
    run_dir = copy_of(fixture, tmp_path)
    want = expected(run_dir)
    (step,) = Checkpointer(run_dir / "checkpoints", reader=True).steps()
    old = files(run_dir / "checkpoints" / str(step))
    more = 2 * want["env_steps_per_seed"]
    run = jaxrl.train(resume=run_dir, total_timesteps=more, progress=False)
    out = capsys.readouterr().out
    assert run.summary["env_steps_per_seed"] == more
    assert formats.run_info(run_dir)["format"] == formats.FORMAT
    if want["format"] < formats.FORMAT:
        assert f"from run format {want['format']} to {formats.FORMAT}" in out
        kept = run_dir / "checkpoints" / f"{step}.format-{want['format']}"
        assert files(kept) == old  # the old checkpoint, byte for byte, beside the new ones
        assert (run_dir / f"config.format-{want['format']}.yaml").is_file()
    checkpoints = Checkpointer(run_dir / "checkpoints", reader=True)
    try:
        assert checkpoints.steps()[-1] == more
        assert checkpoints.read_meta(more)["format"] == formats.FORMAT
        assert checkpoints.read_meta(more)["env"]["version"] == env_versions(fixture)[2]
    finally:
        checkpoints.close()
    summary = run.summary
    assert np.isfinite(summary["final_return"])


def by_path(tree) -> dict[tuple, np.ndarray]:
    """The arrays of a state tree by their path of field names and indices (typed keys as their data)."""
    out = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        out[tuple(str(formats.key_name(k)) for k in path)] = np.asarray(leaf)
    return out


@pytest.mark.parametrize("fixture", CURRENT, ids=[f"{p.parent.name}/{p.name}" for p in CURRENT])
def test_a_migrated_fixture_keeps_every_array_it_saved(fixture):
    """What the old code wrote, read as plain data by orbax alone, is what the migrated state holds, bit for bit."""
    import orbax.checkpoint as ocp

    from jaxrl import build

    run = jaxrl.load(fixture)
    checkpoints = Checkpointer(fixture / "checkpoints", reader=True)
    try:
        (step,) = checkpoints.steps()
        raw = checkpoints._manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore()))["state"]
        migrated, _ = checkpoints.restore(step, build.program(run.config).abstract_runner())
    finally:
        checkpoints.close()
    saved, now = by_path(raw), by_path(migrated)
    assert saved.keys() <= now.keys()  # a migration drops no field of the state
    added = sorted(now.keys() - saved.keys())
    written = int(fixture.parent.name.removeprefix("format-"))
    if written < 4 and "selfplay" in fixture.name:  # 3 to 4: the pool's counts per kind, the arena's fewest_bots
        assert sorted(p[-1] for p in added) == ["bot_games", "bot_wins", "fewest_bots"], added
        pool = [p for p in added if p[-2] == "pool"]
        assert all(now[p].shape[-1] == 1 and not now[p].any() for p in pool)
        assert all(np.all(now[p] == -1) for p in added if p[-1] == "fewest_bots")
    else:
        assert not added, added
    for path, array in saved.items():
        assert array.dtype == now[path].dtype and array.shape == now[path].shape, path
        assert array.tobytes() == now[path].tobytes(), path


def oldest_fixture(name: str = "ppo-cartpole") -> Path:
    return RUNS / f"format-{formats.OLDEST}" / name


def test_upgrade_writes_beside_the_old_checkpoint_and_reloads_the_same_state(tmp_path, capsys):
    run_dir = copy_of(oldest_fixture(), tmp_path)
    cfg = jaxrl.load(run_dir).config
    from jaxrl import build

    abstract = build.program(cfg).abstract_runner()
    checkpoints = Checkpointer(run_dir / "checkpoints", reader=True)
    (step,) = checkpoints.steps()
    migrated, _ = checkpoints.restore(step, abstract)  # in memory
    checkpoints.close()
    before = files(run_dir)

    assert upgrade_main([str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert f"upgraded {run_dir} from run format {formats.OLDEST} to {formats.FORMAT}" in out
    after = files(run_dir)
    for name, digest in before.items():  # every old file is still there, unchanged, under its kept name
        kept = name.replace(f"checkpoints/{step}/", f"checkpoints/{step}.format-{formats.OLDEST}/")
        kept = kept if kept != "config.yaml" else f"config.format-{formats.OLDEST}.yaml"
        assert after[kept] == digest, name
    checkpoints = Checkpointer(run_dir / "checkpoints", reader=True)
    try:
        assert checkpoints.steps() == [step]
        upgraded, meta = checkpoints.restore(step, abstract)
    finally:
        checkpoints.close()
    assert meta["format"] == formats.FORMAT and meta["upgraded_from"]["format"] == formats.OLDEST
    assert jax.tree.structure(upgraded) == jax.tree.structure(migrated)
    for a, b in zip(jax.tree.leaves(upgraded), jax.tree.leaves(migrated), strict=True):
        a, b = (jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x for x in (a, b))
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    assert upgrade_main([str(run_dir)]) == 0  # a second upgrade: nothing to do, nothing written
    assert "already of run format" in capsys.readouterr().out
    assert files(run_dir) == after


def test_an_upgrade_stopped_half_way_is_finished_by_the_next(tmp_path, capsys):
    run_dir = copy_of(oldest_fixture(), tmp_path)
    (step,) = [int(p.name) for p in (run_dir / "checkpoints").iterdir() if p.name.isdigit()]
    aside = run_dir / "checkpoints" / f"{step}.format-{formats.OLDEST}"
    (run_dir / "checkpoints" / str(step)).rename(aside)  # set aside, its new one never written
    assert upgrade_main([str(run_dir)]) == 0
    assert aside.is_dir() and (run_dir / "checkpoints" / str(step)).is_dir()
    assert formats.run_info(run_dir)["format"] == formats.FORMAT


def test_a_newer_format_names_both_formats_and_the_jaxrl_that_wrote_it(tmp_path, capsys):
    from jaxrl.cli.eval import main as eval_main

    run_dir = copy_of(oldest_fixture(), tmp_path)
    (run_dir / "run.json").write_text(json.dumps({"format": formats.FORMAT + 7, "jaxrl": "9.1.0"}))
    before = files(run_dir)
    line = one_line_error(capsys, eval_main([str(run_dir), "episodes=2"]))
    assert f"run format {formats.FORMAT + 7}" in line and "jaxrl 9.1.0" in line
    assert f"formats {formats.OLDEST} to {formats.FORMAT}" in line and "upgrade jaxrl to 9.1.0" in line
    line = one_line_error(capsys, upgrade_main([str(run_dir)]))
    assert "9.1.0" in line
    assert files(run_dir) == before


def test_a_checkpoint_older_than_any_migration_is_one_line(tmp_path, capsys):
    from jaxrl.cli.eval import main as eval_main

    run_dir = copy_of(oldest_fixture(), tmp_path)
    (meta_file,) = (run_dir / "checkpoints").glob("*/meta/metadata")
    meta = json.loads(meta_file.read_text())
    meta["format"] = formats.OLDEST - 1
    meta_file.write_text(json.dumps(meta))
    line = one_line_error(capsys, eval_main([str(run_dir), "episodes=2", "render=none"]))
    assert f"run format {formats.OLDEST - 1}" in line and "train it again" in line


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"format": "three"}'])
def test_a_damaged_run_file_is_one_line(tmp_path, capsys, content):
    run_dir = copy_of(oldest_fixture(), tmp_path)
    (run_dir / "run.json").write_text(content)
    with pytest.raises(ConfigError) as e:
        jaxrl.load(run_dir)
    assert "run.json" in str(e.value) or "names no run format" in str(e.value)
    assert "\n" not in str(e.value)


def test_another_version_of_the_env_refuses_the_run_in_one_line(tmp_path, monkeypatch):
    import dataclasses

    from jaxrl.envs import registry

    run_dir = copy_of(oldest_fixture(), tmp_path)
    run = jaxrl.load(run_dir)
    newer = dataclasses.replace(registry.spec("CartPole-v1"), version=2)
    monkeypatch.setattr(registry, "spec", lambda name: newer)
    with pytest.raises(ConfigError) as e:
        run.restore()
    assert "CartPole-v1-v1" in str(e.value) and "CartPole-v1-v2" in str(e.value)


def test_a_layout_change_without_a_migration_names_the_first_missing_leaf(tmp_path, monkeypatch):
    run_dir = copy_of(oldest_fixture(), tmp_path)
    run = jaxrl.load(run_dir)
    real = formats.MIGRATIONS[formats.OLDEST]

    def loses_a_field(saved):
        saved = real(saved)
        tree = dict(saved.tree)
        tree.pop(sorted(tree)[0])
        return formats.Saved(tree, saved.meta, saved.config)

    monkeypatch.setitem(formats.MIGRATIONS, formats.OLDEST, loses_a_field)
    with pytest.raises(formats.FormatError) as e:
        run.restore()
    assert "after its migrations" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("argv", [[], ["a", "b"], ["episodes=3"]])
def test_upgrade_bad_arguments_are_one_line(capsys, argv):
    one_line_error(capsys, upgrade_main(argv))


def test_upgrade_of_a_directory_that_is_not_a_run_is_one_line_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("hello")
    line = one_line_error(capsys, upgrade_main([str(tmp_path)]))
    assert "not a jaxrl run directory" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    one_line_error(capsys, upgrade_main([str(tmp_path / "missing")]))
