"""Multi-device checks on 4 forced host CPU devices, run by `test_mesh.py` in a subprocess (the
device count is fixed when jax starts): python tests/scale/multi_device.py OUT_JSON CHECK...

Each check trains tiny runs through the Python API and writes the largest difference it found.
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # only the script forces 4 devices (jax fixes the count when it starts)
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"

import json
import shutil
import sys
import tempfile
from pathlib import Path

import jax

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: `tests.helpers`

import jaxrl
from tests.helpers import difference

RUNS = {  # (env, settings): every algorithm, recurrent PPO, several agents per world
    "ppo": ("snake", {}),
    "ppo_gru": ("MemoryChain-bsuite", {"algo.network": "gru", "algo.rnn_hidden": 16}),
    # 8 updates: over more, a rounding-level difference can flip a sampled action and the runs part (docs/tests.md)
    "ppo_agents": ({"name": "grid", "num_agents": 2}, {"algo.num_steps": 8, "total_timesteps": 1024}),
    "pqn": ("snake", {"algo": "pqn"}),
    "dqn": ("snake", {"algo": "dqn", "algo.learning_starts": 512, "algo.batch_size": 64}),
    "selfplay": (
        "arena",
        {"opponents": "selfplay", "selfplay.snapshot_every": 1, "selfplay.bot_share": 0.25, "algo.num_steps": 16},
    ),
}


def train(root: Path, name: str, env, **settings):
    base = {"num_envs": 16, "total_timesteps": 4096, "num_chunks": 2, "device": "cpu", "progress": False}
    return jaxrl.train(env=env, run_dir=root / name, **{**base, **settings})


def same_math(root: Path, which: str) -> dict:
    """4 devices against 1 device with the same envs in 4 env groups: the same final runner."""
    env, settings = RUNS[which]
    four = train(root, f"{which}-4", env, devices=4, **settings)
    one = train(root, f"{which}-1", env, devices=1, env_groups=4, **settings)
    return {
        "difference": difference(four.restore()[1], one.restore()[1]),
        "summary_4": four.summary["final_return"],
        "summary_1": one.summary["final_return"],
    }


def sweep_on_seed_devices(root: Path) -> dict:
    """A 2-member sweep x 2 seeds on a 2 x 2 mesh (members and seeds split along `seed`, envs along `env`)
    against one device with the same 2 env groups."""
    settings = {"num_seeds": 2, "sweep": {"algo.lr": [3e-4, 1e-3]}}
    four = train(root, "sweep-4", "CartPole-v1", devices=4, seed_devices=2, **settings)
    one = train(root, "sweep-1", "CartPole-v1", devices=1, env_groups=2, **settings)
    return {
        "difference": difference(four.restore()[1], one.restore()[1]),
        "best": [four.summary["best_member"], one.summary["best_member"]],
    }


def restore_elsewhere(root: Path) -> dict:
    """A run saved on 4 devices, resumed from its half-way checkpoint on 1 and on 2 devices, ends
    where the 4-device run ended (env_groups kept at 4, so the math is the same)."""
    settings = {"total_timesteps": 8192, "checkpoint.every_steps": 4096, "checkpoint.keep": 5}
    whole = train(root, "save-4", "snake", devices=4, **settings)
    end = whole.restore()[1]
    out = {}
    for n in (1, 2):
        copy = root / f"resume-{n}"
        shutil.copytree(whole.run_dir, copy)
        last = max((p for p in (copy / "checkpoints").iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
        shutil.rmtree(last)  # back to the half-way checkpoint
        resumed = jaxrl.train(resume=copy, devices=n, env_groups=4, progress=False)
        out[f"devices_{n}"] = difference(end, resumed.restore()[1])
    return out


def main() -> None:
    path, checks = Path(sys.argv[1]), sys.argv[2:]
    results = {"devices": len(jax.devices("cpu"))}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for check in checks:
            special = {"restore": restore_elsewhere, "sweep": sweep_on_seed_devices}
            results[check] = special[check](root) if check in special else same_math(root, check)
    path.write_text(json.dumps(results))


if __name__ == "__main__":
    main()
