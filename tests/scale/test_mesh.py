"""Several devices (`devices=N`, `jaxrl.scale.mesh`) and env groups (`env_groups`, `jaxrl.core.groups`).

The multi-device runs happen in a subprocess on 4 forced host CPU devices (`tests/scale/multi_device.py`):
jax fixes its device count when it starts. Environment states and actions are integers, so any
difference in what the sharded program did shows as an exact mismatch; float leaves (parameters,
optimizer state) may differ by the rounding of reductions split across devices.
"""

import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.core import groups
from jaxrl.core.groups import permutations as group_permutations
from jaxrl.core.replay import ReplayBuffer

SCRIPT = Path(__file__).with_name("multi_device.py")
TOLERANCE = 2e-3  # float leaves; Adam's eps of 1e-5 magnifies rounding in near-zero gradients (grid, 2 agents)


def run_checks(tmp_path: Path, *checks: str) -> dict:
    out = tmp_path / "multi_device.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(out), *checks], capture_output=True, text=True, timeout=1200, check=False
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["devices"] == 4
    return results


def test_four_devices_train_like_one_device_with_four_env_groups(tmp_path):
    results = run_checks(tmp_path, "ppo", "dqn", "restore", "sweep")
    for algo in ("ppo", "dqn"):
        assert results[algo]["difference"] <= TOLERANCE, results
        # the mean return sums float rewards (a step cost) in a per-device order: equal to rounding
        assert results[algo]["summary_4"] == pytest.approx(results[algo]["summary_1"], rel=1e-5, abs=1e-6)
    # a sweep's members and seeds split along `seed`, each member's envs along `env`
    assert results["sweep"]["difference"] <= TOLERANCE and len(set(results["sweep"]["best"])) == 1, results
    # saved on 4 devices, resumed half-way on 1 and on 2: the 4-device run's end
    assert results["restore"]["devices_1"] <= TOLERANCE and results["restore"]["devices_2"] <= TOLERANCE, results


# optimized: one and four devices agree within TOLERANCE as optimized code rounds (unoptimized: 0.027 apart)
@pytest.mark.optimized
@pytest.mark.slow
def test_four_devices_match_one_for_pqn_recurrent_ppo_agents_and_selfplay(tmp_path):
    results = run_checks(tmp_path, "pqn", "ppo_gru", "ppo_agents", "selfplay")
    for check in ("pqn", "ppo_gru", "ppo_agents", "selfplay"):
        assert results[check]["difference"] <= TOLERANCE, results


def test_group_major_and_merge_are_inverse():
    x = jnp.arange(2 * 12 * 3).reshape(2, 12, 3)
    g = groups.group_major(x, 4, 1)
    assert g.shape == (4, 2, 3, 3)
    np.testing.assert_array_equal(g[1], x[:, 3:6])  # group 1 holds streams 3..5
    np.testing.assert_array_equal(groups.merge_groups(g, 1), x)
    assert groups.by_group(lambda a: a * 2, 3)(jnp.arange(6)).tolist() == [0, 2, 4, 6, 8, 10]


def test_each_group_shuffles_only_its_own_items():
    perms = group_permutations(jax.random.key(0), 24, 3, 4)  # 3 epochs, 4 groups of 6
    assert perms.shape == (3, 4, 6)
    for epoch in np.asarray(perms):
        for row in epoch:
            assert sorted(row.tolist()) == list(range(6))
    assert len({tuple(r) for r in np.asarray(perms).reshape(-1, 6).tolist()}) > 1  # not one order repeated
    for epoch in np.asarray(perms):  # each group its own key: no order shared by the groups of an epoch
        assert len({tuple(row) for row in epoch.tolist()}) > 1
    one = group_permutations(jax.random.key(0), 24, 3, 1)
    assert one.shape == (3, 1, 24)  # one group: the whole-batch shuffle


def test_grouped_replay_samples_each_group_from_its_own_columns():
    buffer = ReplayBuffer(capacity=64, num_envs=8, obs_shape=(1,), obs_dtype=jnp.float32, binary=False)
    state = buffer.init()
    for t in range(8):  # the observation names its column: 100 * column + row
        obs = (100 * jnp.arange(8) + t).astype(jnp.float32)[:, None]
        state = buffer.add(
            state, obs, jnp.zeros(8, jnp.int32), jnp.zeros(8), obs, jnp.zeros(8, bool), jnp.zeros(8, bool)
        )
    batch = buffer.sample(state, jax.random.key(1), 32, 1, 0.9, groups=4)
    column = np.asarray(batch.obs[:, 0]) // 100
    assert column.shape == (32,)
    for group in range(4):  # transitions 8g..8g+7 come from columns 2g and 2g+1
        assert set(column[8 * group : 8 * group + 8].tolist()) <= {2 * group, 2 * group + 1}
