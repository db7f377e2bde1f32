"""`python -m jaxrl.pretrained list | export ...`: the shelf of trained agents (`jaxrl.trained.shelf`)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from jaxrl.api import PretrainedRun
from jaxrl.cli import command
from jaxrl.config.schema import ConfigError
from jaxrl.trained import shelf

USAGE = """usage: python -m jaxrl.pretrained list
       python -m jaxrl.pretrained export RUN_DIR OUT.npz [episodes=1000] [seed=0]

  list      the agents on the shelf: name, env version, algorithm, measured figures, training steps
  export    a finished run's greedy policy (seed 0) as a policy file, with its greedy figures measured over
            `episodes` episodes; use it as pretrained:OUT.npz wherever a run directory goes

Use one wherever a run directory goes, as pretrained:NAME:
  python -m jaxrl.eval pretrained:snake-v1 episodes=100
  python -m jaxrl.train env=arena env.bot_policy=pretrained:arena-selfplay-v2
  python -m jaxrl.eval runs/mine vs=pretrained:arena-selfplay-v2
  python -m jaxrl.rate pretrained:arena-selfplay-v2 runs/mine
"""


def listing() -> list[str]:
    """One line per shelf agent."""
    lines = []
    for name in shelf.names():
        meta = shelf.info(name)
        figures, trained = meta.get("figures") or {}, meta.get("trained") or {}
        shown = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items())
        steps = trained.get("env_steps")
        trained_on = f"{steps:,} env steps" if isinstance(steps, int) else ""
        label = meta["env"].get("label", meta["env"]["name"])
        algo = meta["config"]["algo"]["name"]
        lines.append(f"{name:<20} {label:<12} {algo:<4} {shown}; {trained_on}")
    return lines


def parse_export(argv: list[str]) -> tuple[str, str, int, int]:
    from jaxrl.config.compose import integer_setting

    plain = [a for a in argv if "=" not in a]
    settings = dict(a.split("=", 1) for a in argv if "=" in a)
    unknown = sorted(set(settings) - {"episodes", "seed"})
    if len(plain) != 2 or unknown:
        bad = (
            f"unknown setting '{unknown[0]}'"
            if unknown
            else f"expected RUN_DIR OUT.npz, got {' '.join(plain) or 'nothing'}"
        )
        raise ConfigError(f"{bad} (python -m jaxrl.pretrained export RUN_DIR OUT.npz [episodes=1000] [seed=0])")
    if not plain[1].endswith(".npz"):
        raise ConfigError(f"{plain[1]} is invalid: a policy file's name ends in .npz")
    episodes = integer_setting("episodes", settings.get("episodes", 1000), 1)
    return plain[0], plain[1], episodes, integer_setting("seed", settings.get("seed", 0), 0)


def export(run_dir: str, out: str, episodes: int = 1000, seed: int = 0) -> Path:
    """`run_dir`'s greedy policy as the policy file `out`, with its greedy figures over `episodes` episodes
    (evaluation seed `seed`) measured from the file itself."""
    from jaxrl.api import load

    target = Path(out).expanduser()
    if target.exists():
        raise ConfigError(f"{target} exists: a policy file is never replaced (remove it, or pick another name)")
    run = load(run_dir)
    if isinstance(run, PretrainedRun):
        raise ConfigError(f"{run_dir} is a shelf agent already")
    written = shelf.write(run, target.stem, target, figures={})
    try:
        agent = PretrainedRun(shelf.PREFIX + str(written))
        with tempfile.TemporaryDirectory() as scratch:  # its eval.json is not kept: the figures go in the file
            agent.run_dir = Path(scratch)
            measured = agent.evaluate(episodes=episodes, seed=seed)
        shelf.set_figures(written, shelf.figures_of(measured, episodes, seed))
    except BaseException:
        written.unlink(missing_ok=True)
        raise
    return written


def run(argv: list[str]) -> int:
    if argv == ["list"]:
        lines = listing()
        print("\n".join(lines) if lines else "the shelf is empty")
        return 0
    if argv[:1] == ["export"]:
        path = export(*parse_export(argv[1:]))
        print(f"wrote {path}: use it as pretrained:{path}")
        return 0
    got = " ".join(argv) or "nothing"
    raise ConfigError(f"expected list or export, got {got} (python -m jaxrl.pretrained --help)")


main = command(__name__)
