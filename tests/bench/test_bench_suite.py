"""`python -m bench` end to end on its tiny (smoke) budget: every part's JSON, the plots and
report.md are written and parse; figures are not timed here. The smoke run takes about four minutes alone,
so the tests that read it are slow tests (`-m slow`). Plus its edges: a bad --only, an
--out that is a file, earlier results kept, and the README block generator."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

from jaxrl.bench import readme as bench_readme
from jaxrl.bench.parts import ORDER

ROOT = Path(__file__).resolve().parents[2]


def bench(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args], check=False, cwd=cwd, capture_output=True, text=True, timeout=1200
    )


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("bench") / "results"
    return out, bench("--quick", "--smoke", "--out", str(out))


@pytest.mark.slow
def test_every_part_writes_its_json_plot_and_report(smoke_run):
    out, proc = smoke_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for i, name in enumerate(ORDER, 1):
        assert f"[{i}/{len(ORDER)}] {name}:" in proc.stdout  # a progress line per part
        record = json.loads((out / f"{name}.json").read_text())
        assert record["part"] == name and record["mode"] == "smoke"
        assert record["machine"]["jax"] and record["machine"]["cores"] >= 1
        assert record["result"]["headlines"], name
    for name in ("env", "train", "memory", "score"):
        png = (out / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    report = (out / "report.md").read_text()
    assert "jax " in report and "cores" in report  # the machine is named
    for name in ("env", "train", "memory", "score"):
        assert f"]({name}.png)" in report
    assert "| num_envs |" in report and "x |" in report  # tables carry ratios


@pytest.mark.slow
def test_figures_are_the_ones_measured(smoke_run):
    out, _ = smoke_run
    env = json.loads((out / "env.json").read_text())["result"]
    snake = next(s for s in env["suites"] if s["id"] == "snake")
    for row in snake["rows"]:
        assert row["sps"]["jaxrl"] > 0 and row["compile_s"]["jaxrl"] > 0
        for peer, ratio in row["ratio"].items():
            assert ratio == pytest.approx(row["sps"]["jaxrl"] / row["sps"][peer])
    memory = json.loads((out / "memory.json").read_text())["result"]
    one = memory["snake_env"]
    assert one["bytes"] == pytest.approx(one["streams"] + one["rollout"]) and one["state"] > 0
    train = json.loads((out / "train.json").read_text())["result"]
    assert train["series"]["jaxrl_ppo_snake"]["rows"][0]["sps"] > 0
    default = train["default_snake"]  # the shipped Snake run against the ceilings the run measured once
    assert default["limit"]["per_s"]["matmul_flops"] == pytest.approx(
        default["limit"]["per_step"]["matmul_flops"] * default["sps"]
    )
    assert default["limit"]["bound"] in ("compute-bound", "memory-bound", "overhead-bound")
    assert all("limit" in r for s in train["series"].values() if s["ours"] for r in s["rows"])
    assert json.loads((out / "train.json").read_text())["ceilings"] == train["ceilings"]
    precision = json.loads((out / "precision.json").read_text())["result"]
    assert [r["precision"] for r in precision["rows"]] == ["fp32", "tf32", "bf16"]
    parity = json.loads((out / "parity.json").read_text())["result"]
    for row in parity["rows"]:
        for side in ("jaxrl", "reference_side"):
            values = row[side]["per_seed"]
            assert len(values) == row["seeds"] and row[side]["mean"] == pytest.approx(sum(values) / len(values))
        assert row["difference"] == pytest.approx(row["jaxrl"]["mean"] - row["reference_side"]["mean"])
    score = json.loads((out / "score.json").read_text())["result"]
    for curve in (c for c in score["curves"].values() if "runs" in c):
        for run in curve["runs"]:  # each seed's final checkpoint played greedy episodes
            greedy = run["greedy"]
            assert greedy["episodes"] == 4 and 0 <= greedy["wins"] <= 4
            assert greedy["score_min"] <= greedy["score_mean"] <= greedy["score_max"]
            assert greedy["checkpoint_step"] == run["steps"]
    arena = json.loads((out / "arena.json").read_text())["result"]
    for row in arena["env"]:
        assert all(v > 0 for v in row["snake_sps"].values()) and all(v > 0 for v in row["compile_s"].values())
    kinds = ("greedy", "space", "lookahead", "random_safe")
    assert [(r["seat"], r["against"]) for r in arena["bots"]] == [(a, f"3 {b}") for a in kinds for b in kinds]
    assert all(0 <= r["win_rate"] <= 1 and 1 <= r["placement"] <= 4 for r in arena["bots"])
    assert arena["ppo"]["sps"] > 0
    league = arena["league"]
    assert [r["label"] for r in league["rows"]] == ["arena_selfplay", "arena_league"] and league["league_sps"] > 0
    assert set(league["kind_ms"]) == {"greedy", "space", "lookahead"} and all(v > 0 for v in league["kind_ms"].values())
    # one device, then (on a CPU of several usable cores) one CPU device per core, each with one world
    cores = min(arena["open"][0]["cores"], len(os.sched_getaffinity(0)))
    per_core = cores > 1 and jax.default_backend() == "cpu"
    split = [("battlesnake", cores, cores), ("pufferlib", cores, cores)] if per_core else []
    assert [(r["rules"], r["worlds"], r["devices"]) for r in arena["open"]] == [
        ("battlesnake", 1, 1),
        ("pufferlib", 1, 1),
        *split,
    ]
    for row in arena["open"]:
        assert row["snake_sps"] > 0 and row["per_core"] == pytest.approx(row["snake_sps"] / row["cores"])
    algos = json.loads((out / "algos.json").read_text())["result"]
    assert [r["network"] for r in algos["grid"]] == ["cnn", "cnn + gru", "cnn, the GRU's wall-clock"]
    assert [r["algo"] for r in algos["q_grid"]] == ["dqn", "pqn"] and all(r["sps"] > 0 for r in algos["q_grid"])
    sweep = json.loads((out / "sweep.json").read_text())["result"]
    for c in sweep["cases"]:  # one member, the sweep in one process, a process per member
        assert c["sweep"]["env_steps"] == 3 * c["one"]["env_steps"] and len(c["apart"]) == 3
        assert c["ratio_to_one"] == pytest.approx(c["sweep"]["seconds"] / c["one"]["seconds"])
        assert sorted(r["lr"] for r in c["ranking"]) == sweep["rates"]
    perfect = score["curves"]["jaxrl snake_perfect"]
    assert perfect["target_met"] == [False] * perfect["seeds"]  # 20k steps cannot win a game
    report = (out / "report.md").read_text()
    assert "Greedy evaluation of each seed's final checkpoint" in report
    assert "- ceilings (train part" in report and "**Against this machine's ceilings**" in report


@pytest.mark.slow
def test_a_second_run_keeps_the_first_runs_files(smoke_run):
    out, _ = smoke_run
    before = (out / "report.md").read_text()
    proc = bench("--smoke", "--only", "memory", "--out", str(out))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (kept,) = out.glob("previous-*")
    assert (kept / "memory.json").exists() and (kept / "report.md").read_text() == before
    assert (out / "env.json").exists()  # parts not re-run stay, and stay in the report
    assert "](env.png)" in (out / "report.md").read_text()


def test_without_out_the_results_go_to_the_current_folder_not_the_source_tree(tmp_path, monkeypatch):
    """bench/results/ holds what a commit records on purpose (`--out`); a plain run writes under the folder
    it runs in, so from the repository root it writes into an ignored folder and git sees nothing."""
    from datetime import date

    from jaxrl.bench import RESULTS
    from jaxrl.bench.__main__ import output_dir

    machine = {"platform": "cpu", "cores": 2, "cpu": "AMD EPYC"}
    monkeypatch.chdir(tmp_path)
    out = output_dir(None, machine)
    assert out.resolve() == tmp_path / RESULTS / f"cpu-2c-amd-epyc-{date.today().isoformat()}" and out.is_dir()
    ignored = subprocess.run(["git", "check-ignore", "-q", f"{RESULTS}/x.json"], cwd=ROOT, check=False)
    assert ignored.returncode == 0, f"{RESULTS}/ must be in .gitignore"
    assert "bench/results" not in RESULTS


def test_bad_arguments_are_one_line(tmp_path):
    proc = bench("--only", "envs", "--out", str(tmp_path / "x"))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "'envs' is not a part: choose from env, arena, serve, train, memory, score, precision" in proc.stderr
    afile = tmp_path / "file"
    afile.write_text("keep me")
    proc = bench("--only", "env", "--out", str(afile))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and "is a file" in proc.stderr
    assert afile.read_text() == "keep me"


def test_the_readme_stands_a_device_on_its_newest_full_report_not_a_newer_quick_one(tmp_path):
    """A quick run of one part on a CPU must not take the place of that device's full report in README."""

    def report(name: str, mode: str, when: str, device: str = "cpu:cpu") -> None:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "report.md").write_text("x")
        machine = {"device": device, "platform": device.split(":")[0]}
        (folder / "env.json").write_text(json.dumps({"part": "env", "mode": mode, "when": when, "machine": machine}))

    report("cpu-full-old", "full", "2026-11-27T00:00:00")
    report("cpu-quick-new", "quick", "2026-12-04T00:00:00")
    report("gpu-full", "full", "2026-11-24T00:00:00", device="gpu:NVIDIA H100")
    chosen = [folder.name for folder, _ in bench_readme.latest_reports(tmp_path)]
    assert chosen == ["gpu-full", "cpu-full-old"]  # accelerators first
    report("cpu-full-new", "full", "2026-12-05T00:00:00")
    assert [folder.name for folder, _ in bench_readme.latest_reports(tmp_path)] == ["gpu-full", "cpu-full-new"]


def test_the_readme_block_names_each_figures_date_and_cpu(tmp_path):
    """Two CPU models of one name are two machines, each standing on its own report; every row of the table
    names the date its part ran and the CPU, a model known only from its folder's name included."""
    results = tmp_path / "results"

    def report(name: str, mode: str, when: str, machine: dict, figure: str) -> None:
        folder = results / name
        folder.mkdir(parents=True)
        (folder / "report.md").write_text("x")
        head = {"what": "Snake 10x10, env only", "figure": figure}
        rec = {"part": "env", "mode": mode, "when": when, "machine": machine, "result": {"headlines": [head]}}
        (folder / "env.json").write_text(json.dumps(rec))

    xeon = {"device": "cpu:cpu", "platform": "cpu", "cpu": "Intel(R) Xeon(R) Processor", "cores": 2}
    report("cpu-2c-intel-xeon-model-207-2026-12-02", "quick", "2026-12-02T10:00:00", xeon, "1.0M steps/s")
    model_167 = {**xeon, "cpu_family": "6", "cpu_model_number": "167"}
    report("cpu-2c-intel-xeon-model-167-2026-12-04", "quick", "2026-12-04T10:00:00", model_167, "2.0M steps/s")
    readme = tmp_path / "README.md"
    rows = [line for line in bench_readme.block(results, readme).splitlines() if line.startswith("| env |")]
    assert rows == [
        "| env | Snake 10x10, env only | 1.0M steps/s | 2026-12-02, 2-core Intel Xeon model 207, quick mode |",
        "| env | Snake 10x10, env only | 2.0M steps/s | 2026-12-04, 2-core Intel Xeon family 6 model 167, quick mode |",
    ]

    # a report of a CPU whose model was not recorded, measured again on a model that may be it: the newer
    # figure stands alone; another known model keeps its own row
    unknown = {**xeon, "cpu": "AMD EPYC"}
    report("cpu-2c-amd-epyc-2026-11-24", "full", "2026-11-24T10:00:00", unknown, "3.0M steps/s")
    report("cpu-2c-amd-epyc-f26-2026-12-07", "full", "2026-12-07T10:00:00", {**unknown, "cpu_family": "26"}, "4.0M")
    rows = [line for line in bench_readme.block(results, readme).splitlines() if line.startswith("| env |")]
    assert [row.split(" | ")[2] for row in rows] == ["1.0M steps/s", "2.0M steps/s", "4.0M"]


@pytest.mark.slow
def test_the_readme_block_is_generated_from_the_latest_report(smoke_run, tmp_path):
    out, _ = smoke_run
    results = tmp_path / "results"
    results.mkdir()
    (results / out.name).symlink_to(out, target_is_directory=True)
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\nbefore\n{bench_readme.START}\nold\n{bench_readme.END}\nafter\n")
    text = bench_readme.block(results, readme)
    assert text.startswith(bench_readme.START) and text.endswith(bench_readme.END)
    headline = json.loads((out / "env.json").read_text())["result"]["headlines"][0]["figure"]
    assert headline in text and "report.md" in text and "jax " in text
