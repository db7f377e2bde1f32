"""The SB3 peer of `python -m bench` times PPO and DQN on Snake through the Gymnasium adapter, leaves no
worker process behind, and its score curve stays inside its wall-clock cap."""

import math
import multiprocessing

import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("gymnasium")
pytest.importorskip("torch")

from jaxrl.bench.peers import sb3_peer


def workers() -> set[int]:
    """Pids of this process's descendants, less multiprocessing's own helpers (its forkserver and resource
    tracker live until this process exits; the workers are the forkserver's children)."""
    psutil = pytest.importorskip("psutil")
    found = set()
    for child in psutil.Process().children(recursive=True):
        try:
            helper = child.ppid() == psutil.Process().pid and "from multiprocessing." in " ".join(child.cmdline())
        except psutil.NoSuchProcess:
            continue
        if not helper:
            found.add(child.pid)
    return found


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_throughput_times_whole_training_steps_and_reports_its_settings(algo):
    r = sb3_peer.throughput(algo, "dummy", n_envs=1, steps=100, threads=1)
    assert math.isfinite(r["sps"]) and r["sps"] > 0
    assert r["sps"] == pytest.approx(r["steps"] / r["seconds"])
    assert r["setup_s"] > r["env_start_s"] > 0
    assert (r["algo"], r["vec"], r["n_envs"]) == (algo, "dummy", 1)
    assert r["settings"]["torch_threads"] == 1
    if algo == "ppo":  # the fast preset; the timed steps rounded up to one whole rollout
        assert r["steps"] == 256
        assert {k: r["settings"][k] for k in ("n_steps", "batch_size", "n_epochs", "net_arch")} == {
            "n_steps": 256,
            "batch_size": 256,
            "n_epochs": 15,
            "net_arch": [512, 512],
        }
    else:  # SB3's defaults
        assert r["steps"] == 100
        assert r["settings"]["learning_starts"] == 100 and r["settings"]["net_arch"] == [64, 64]


def test_subproc_workers_are_gone_after_a_run():
    before = workers()
    r = sb3_peer.throughput("ppo", "subproc", n_envs=2, steps=1, threads=1)
    assert r["steps"] == 512 and r["sps"] > 0
    assert multiprocessing.active_children() == []
    assert workers() <= before


def test_workers_started_before_a_failure_are_ended(monkeypatch):
    from stable_baselines3.common.vec_env import SubprocVecEnv

    started = SubprocVecEnv.__init__

    def start_then_fail(self, *args, **kwargs):
        started(self, *args, **kwargs)
        raise RuntimeError("failed after the workers started")

    before = workers()
    monkeypatch.setattr(SubprocVecEnv, "__init__", start_then_fail)
    with pytest.raises(RuntimeError, match="after the workers started"):
        sb3_peer.throughput("ppo", "subproc", n_envs=2, steps=1)
    assert multiprocessing.active_children() == [] and workers() <= before


def test_the_score_curve_has_a_point_per_rollout_inside_the_cap():
    cap_s = 7.0  # alone on the 2-core CPU: ~2.6 s to start, then a point every ~0.35 s
    r = sb3_peer.score_curve(cap_s, n_envs=1, vec="dummy", threads=1)
    points = r["points"]
    assert len(points) >= 2, r  # random play ends an episode every ~12 steps, so every rollout has a point
    walls, steps, scores = zip(*points, strict=True)
    assert list(walls) == sorted(walls) and list(steps) == sorted(steps)
    assert all(s % 256 == 0 for s in steps)  # rollout ends: 1 env x 256 steps
    # Collection stops at the cap, so a completed rollout's last step came before it; its point follows
    # within one forward pass.
    assert walls[-1] <= cap_s + 0.5
    assert all(math.isfinite(s) and s >= 0 for s in scores)
    assert r["steps"] >= steps[-1] and r["seconds"] >= walls[-1] > r["env_start_s"] > 0
    assert r["settings"]["n_envs"] == 1 and r["settings"]["batch_size"] == 256


def test_an_unknown_vec_or_algo_is_one_line_naming_the_allowed_ones():
    with pytest.raises(ValueError, match="vec='threads' is not supported; allowed: subproc, dummy"):
        sb3_peer.throughput("ppo", "threads", n_envs=1, steps=1)
    with pytest.raises(ValueError, match="algo='sac' is not supported; allowed: ppo, dqn"):
        sb3_peer.throughput("sac", "dummy", n_envs=1, steps=1)
