"""Upgrade a run directory to this jaxrl's run format, keeping everything it held.

Each checkpoint `checkpoints/<step>/` of an earlier format is loaded through its migrations and written
again in this format; the old one stays beside it as `checkpoints/<step>.format-<N>/` (orbax lists only
plain step numbers, so it is never loaded, pruned or replaced), as does the old `config.yaml` as
`config.format-<N>.yaml`. run.json then names the new format. An upgrade stopped half-way leaves every
checkpoint either upgraded or in its old place, and running it again finishes it.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jaxrl.config.formats import FORMAT, run_format, write_run_file
from jaxrl.config.schema import ConfigError

ASIDE = re.compile(r"^(\d+)\.format-(\d+)$")


def aside_name(step: int, found: int) -> str:
    return f"{step}.format-{found}"


def _put_back_unfinished(checkpoints: Path) -> None:
    """An old checkpoint set aside by an upgrade that stopped before writing its new one goes back in place."""
    for path in checkpoints.iterdir() if checkpoints.is_dir() else []:
        match = ASIDE.match(path.name)
        if match and not (checkpoints / match.group(1)).exists():
            path.rename(checkpoints / match.group(1))


def upgrade_run(run_dir: Path, say: Callable[[str], Any] = print) -> list[Path]:
    """Write `run_dir`'s checkpoints of earlier formats again in this format, beside the old ones; the new
    checkpoints' paths ([] when the run is already of this format). ConfigError, one line, when it is not a
    run this jaxrl can read."""
    from omegaconf import OmegaConf

    from jaxrl.config.compose import resume_config
    from jaxrl.config.environment import make_env
    from jaxrl.run.checkpoint import Checkpointer
    from jaxrl.run.driver import Program
    from jaxrl.trained.frozen import with_frozen_bots

    run_dir = Path(run_dir).expanduser()
    where = f"run_dir={run_dir}"
    cfg, resolved, _ = resume_config(run_dir, [], flag="run_dir")  # the run's config, migrated in memory
    found = run_format(run_dir, where)
    directory = run_dir / "checkpoints"
    if found == FORMAT:
        say(f"{run_dir} is already of run format {FORMAT}; nothing written")
        return []
    _put_back_unfinished(directory)
    env, env_params = make_env(cfg)
    abstract = Program(cfg, with_frozen_bots(env), env_params).abstract_runner()
    checkpoints = Checkpointer(directory, keep=None, reader=True)  # keep=None: the upgrade prunes nothing
    written: list[Path] = []
    try:
        for step in checkpoints.steps():
            meta = checkpoints.read_meta(step)
            if meta.get("format") == FORMAT:  # upgraded by an earlier, unfinished upgrade
                continue
            runner, migrated = checkpoints.restore(step, abstract)
            kept = directory / aside_name(step, int(meta.get("format")))
            if kept.exists():
                raise ConfigError(f"{where}: {kept} exists already; move it away to upgrade checkpoint {step}")
            checkpoints.path(step).rename(kept)
            checkpoints.reload()
            checkpoints.run_id = migrated.get("run_id")
            kept_meta = {k: v for k, v in migrated.items() if k not in ("format", "step", "run_id", "saved_at")}
            kept_meta["upgraded_from"] = {"format": meta.get("format"), "saved_at": meta.get("saved_at")}
            outcome = checkpoints.save(step, runner, kept_meta, wait=True)
            if outcome.error is not None:
                checkpoints.reload()
                kept.rename(checkpoints.path(step))  # the old one back in its place
                raise ConfigError(f"{where}: {outcome.error}; the run is unchanged")
            written.append(outcome.path)
    finally:
        checkpoints.close()
    config = run_dir / "config.yaml"
    old_config = run_dir / f"config.format-{found}.yaml"
    if not old_config.exists():
        shutil.copy2(config, old_config)
    config.write_text(OmegaConf.to_yaml(resolved, resolve=True))  # as written: without a launch's settings
    write_run_file(run_dir)
    say(
        f"upgraded {run_dir} from run format {found} to {FORMAT}: {len(written)} checkpoint(s) written; the format-"
        f"{found} ones are kept beside them as checkpoints/<step>.format-{found}, config.yaml as {old_config.name}"
    )
    return written
