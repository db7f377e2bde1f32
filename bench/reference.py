"""python -m bench.reference --against COMMIT: did a change move what a seed learns, on this machine?

Runs the short reference runs (Snake PPO, DQN and PQN, the 4-agent grid, recurrent PPO on
MemoryChain, self-play in the arena: seed 3, a few chunks each) in this checkout and in COMMIT, one
after the other on this machine, and compares their metrics rows. XLA's float code generation differs
between CPUs, so a pinned figure only holds on the CPU that took it; two commits side by side on one
machine need no pin. Use it when a change touches the hot path (env step, rollout, losses, the random
stream). Prints a table and saves the rows and the verdict to `--out` (default
bench-results/reference-<commit>.json). Exit code 0 when every run gives the same rows, 1 when one
differs, 2 on bad input.

    python -m bench.reference --against HEAD~1
    python -m bench.reference --against main --runs snake_ppo
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from jaxrl.bench import RESULTS

ROOT = Path(__file__).resolve().parents[1]

# The default Snake run became egocentric (issue 16); the PPO reference run keeps the board and actions it
# was first pinned with, the entropy bonus it had before issue 35 doubled the default's, and the 128x128 MLP
# and plain reward it had before issue 79 gave the default a 64x64 LayerNorm MLP and a cost per step for 1e7 steps.
WORLD_SNAKE = {"name": "snake", "view": "world", "actions": "absolute", "mirror_prob": 0.0, "shaping": 0.0}
RUNS = {
    "snake_ppo": {
        "env": WORLD_SNAKE,
        "total_timesteps": 1e5,
        "seed": 3,
        "num_chunks": 3,
        "algo.ent_coef": 0.01,
        "algo.hidden": [128, 128],
        "algo.layer_norm": False,
        "curriculum": [],
    },
    "snake_dqn": {
        "env": "snake",
        "algo": "dqn",
        "total_timesteps": 6e4,
        "seed": 3,
        "num_chunks": 3,
        "algo.learning_starts": 20000,
    },
    "grid_4_agents": {
        "env": {"name": "grid", "num_agents": 4, "max_steps_in_episode": 64},
        "total_timesteps": 4.1e4,
        "seed": 3,
        "num_chunks": 5,
    },
    "snake_pqn": {"env": "snake", "algo": "pqn", "total_timesteps": 6e4, "seed": 3, "num_chunks": 3},
    "memory_chain_gru": {"env": "MemoryChain-bsuite", "total_timesteps": 2e4, "seed": 3, "num_chunks": 3},
    "arena_selfplay": {
        "env": "arena",
        "opponents": "selfplay",
        "selfplay.snapshot_every": 1,
        "num_envs": 16,
        "algo.num_steps": 16,
        "total_timesteps": 4096,
        "seed": 3,
        "num_chunks": 4,
    },
}

# Run inside the tree under test (its own jaxrl first on sys.path): settings as JSON in, rows as JSON out.
CHILD = """
import csv, json, sys, tempfile
import jaxrl
runs = json.loads(sys.argv[1])
out = {}
for name, settings in runs.items():
    run_dir = tempfile.mkdtemp() + "/run"
    run = jaxrl.train(run_dir=run_dir, progress=False, **settings)
    with open(run.run_dir / "metrics.csv", newline="") as f:
        out[name] = list(csv.DictReader(f))
print("ROWS " + json.dumps(out))
"""


def rows_of(tree: Path, runs: dict) -> dict:
    """The metrics rows of `runs` trained by the jaxrl in `tree` (a fresh process, that tree first on sys.path)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(runs)], cwd=tree, env=env, capture_output=True, text=True, check=False
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("ROWS ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"the runs failed in {tree}:\n{proc.stderr[-3000:]}")
    return json.loads(line[len("ROWS ") :])


def same(a: str, b: str) -> bool:
    """Two CSV cells are the same figure (NaN equals NaN; no tolerance: one machine gives the same bits)."""
    try:
        x, y = float(a), float(b)
    except ValueError:
        return a == b
    return (math.isnan(x) and math.isnan(y)) or x == y


def first_difference(ours: list[dict], theirs: list[dict]) -> str | None:
    """Where two runs' metrics rows part first ('row 2, score: 0.1 vs 0.2'), None when they agree."""
    if len(ours) != len(theirs):
        return f"{len(ours)} rows vs {len(theirs)}"
    skip = {"time_s", "steps_per_s", "wall_s", "sps"}  # wall-clock columns
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        for key in sorted(set(a) & set(b) - skip):
            if not same(a[key], b[key]):
                return f"row {i + 1}, {key}: {a[key]} vs {b[key]}"
    return None


def resolve(commit: str) -> str:
    proc = subprocess.run(
        ["git", "rev-parse", "--verify", f"{commit}^{{commit}}"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise ValueError(f"--against {commit}: not a commit of this repository")
    return proc.stdout.strip()


def compare(commit: str, names: list[str]) -> dict:
    """Both trees' rows and, per run, where they first differ (None: identical)."""
    sha = resolve(commit)
    runs = {n: RUNS[n] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        other = Path(tmp) / "tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(other), sha], cwd=ROOT, capture_output=True, check=True
        )
        try:
            theirs = rows_of(other, runs)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, capture_output=True, check=False
            )
    ours = rows_of(ROOT, runs)
    return {
        "against": sha,
        "runs": {
            n: {"difference": first_difference(ours[n], theirs[n]), "ours": ours[n], "theirs": theirs[n]} for n in names
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reference", description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="the commit to compare this checkout with")
    parser.add_argument("--runs", default=",".join(RUNS), help=f"comma-separated: {', '.join(RUNS)}")
    parser.add_argument("--out", default=None, help=f"JSON file (default {RESULTS}/reference-<commit>.json)")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.runs.split(",") if n.strip()]
    bad = [n for n in names if n not in RUNS] or ([] if names else [args.runs])
    if bad:
        print(f"error: --runs {','.join(bad)} is unknown: choose from {', '.join(RUNS)}", file=sys.stderr)
        return 2
    try:
        result = compare(args.against, names)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from jaxrl.bench.machine import cpu_signature

    result["cpu"] = cpu_signature()
    print(f"this checkout against {result['against'][:10]} on {result['cpu']}:")
    for name, r in result["runs"].items():
        print(f"  {name:16s} {'same rows' if r['difference'] is None else 'DIFFERS at ' + r['difference']}")
    out = Path(args.out) if args.out else Path(RESULTS) / f"reference-{result['against'][:10]}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"saved: {out}")
    return 0 if all(r["difference"] is None for r in result["runs"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
