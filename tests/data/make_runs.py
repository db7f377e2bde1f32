"""Write the frozen run fixtures of the installed jaxrl's run format into tests/data/runs/format-<N>/.

    python tests/data/make_runs.py            # by hand, once per new run format; never by a test
    python tests/data/make_runs.py NAME ...   # only these fixtures, into this format's folder (a new env version)

Each fixture is a small finished run (one checkpoint, under 1 MB) and its `expected.json`: the greedy figures
it evaluated to when written, the env steps it holds, and where and with what it was written. tests/run/
test_formats.py loads, evaluates and resumes every fixture of every format with the current code, so a change
to what a run holds fails CI until it comes with a migration (jaxrl/config/formats.py). A format's fixtures are
written once, by the commit that introduced it, and never rewritten.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
EPISODES = 20  # greedy episodes per fixture (seed 0): what expected.json records and the test replays

# name -> the run's settings (the API's keywords); every one keeps a single checkpoint
FIXTURES = {
    "ppo-cartpole": {"env": "CartPole-v1", "algo": "ppo", "num_envs": 8, "total_timesteps": 8192},
    "dqn-snake": {  # with its replay: a buffer small enough to keep, half full
        "env": "snake",
        "algo": "dqn",
        "num_envs": 8,
        "total_timesteps": 4096,
        "algo.buffer_size": 8192,
        "algo.learning_starts": 1024,
        "algo.train_freq": 8,
        "algo.target_update_interval": 1024,
        "algo.hidden": [32],
    },
    "rppo-memorychain": {  # recurrent PPO: the GRU's carries are part of the saved state
        "env": "MemoryChain-bsuite",
        "algo": "ppo",
        "num_envs": 16,
        "total_timesteps": 8192,
    },
    "arena-selfplay": {  # self-play with its pool of past policies
        "env": "arena",
        "algo": "ppo",
        "experiment": "arena_selfplay",
        "num_envs": 8,
        "total_timesteps": 4096,
        "selfplay.pool_size": 2,
        "selfplay.snapshot_every": 2,
        "algo.hidden": [32],
        "algo.num_steps": 16,
    },
}
# arena-v2 (the engine's rules): the format-3 "arena-selfplay" fixture played arena-v1 and is refused now
FIXTURES["arena-selfplay-v2"] = dict(FIXTURES["arena-selfplay"])
# format 4: the self-play fixture plays a league of two scripted kinds beside its pool (a count per kind)
FIXTURES["arena-selfplay"] = {
    **FIXTURES["arena-selfplay"],
    "selfplay.league": ["greedy", "space"],
    "selfplay.bot_share": 0.5,
}


def cpu() -> str:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or platform.machine()
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    get = lambda k: fields.get(k, "").strip()
    return f"{get('CPU(s)')}-core {get('Model name')}, family {get('CPU family')} model {get('Model')}"


def commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> int:
    import jax

    import jaxrl
    from jaxrl.run.checkpoint import FORMAT

    out = HERE / "runs" / f"format-{FORMAT}"
    only = sys.argv[1:]
    unknown = sorted(set(only) - set(FIXTURES))
    if unknown:
        print(f"unknown fixture {unknown[0]}: one of {', '.join(FIXTURES)}")
        return 2
    if not only and out.exists():
        print(f"{out} exists: a format's fixtures are written once (remove it to write them again)")
        return 1
    out.mkdir(parents=True, exist_ok=True)
    for name, settings in FIXTURES.items():
        if only and name not in only:
            continue
        run_dir = out / name
        if run_dir.exists():
            print(f"{run_dir} exists: a fixture is written once")
            return 1
        run = jaxrl.train(run_dir=run_dir, **{"checkpoint.keep": 1, "seed": 0, **settings})
        figures = run.evaluate(episodes=EPISODES, seed=0)
        (run_dir / "eval.json").unlink(missing_ok=True)  # the test evaluates again; the figures are below
        shutil.rmtree(run_dir / "tb", ignore_errors=True)
        expected = {
            "settings": settings,
            "episodes": EPISODES,
            "greedy": {
                **{k: figures[k]["mean"] for k in ("return", "score") if k in figures},
                **({"win_rate": figures["win_rate"]} if "win_rate" in figures else {}),
            },
            "env_steps_per_seed": run.summary["env_steps_per_seed"],
            "format": FORMAT,
            "written": {
                "jaxrl": jaxrl.__version__,
                "commit": commit(),
                "jax": jax.__version__,
                "python": sys.version.split()[0],
                "cpu": cpu(),
                "date": datetime.now(UTC).date().isoformat(),
            },
        }
        (run_dir / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")
        print(f"{run_dir}: {size(run_dir) / 1e6:.2f} MB, greedy {expected['greedy']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
