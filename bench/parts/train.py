"""End-to-end training steps/s (PPO and DQN) against num_envs, on Snake and on CartPole, beside
Stable-Baselines3 (SubprocVecEnv and DummyVecEnv, stepping the same Snake through
`envs.to_gymnasium`) and PureJaxRL-shaped reference PPO and DQN on CartPole.

Snake: jaxrl's default config at each num_envs (`algo.minibatch_size=auto`; DQN with
`algo.learning_starts=0`, so every timed step pays for its gradient steps), timed over one
compiled chunk of updates after a warm-up update. SB3 (`bench/peers/sb3_peer.py`): PPO with the seed
guides' "fast" settings and DQN with SB3's defaults, timed after a warm-up. CartPole: whole
runs of jaxrl (`jaxrl.train`, run directory, metrics and checkpoint included) and of the
references (`bench/peers/purejaxrl_ref.py`, `bench/peers/purejaxrl_dqn_ref.py`) with PureJaxRL's
settings and the num_envs of the row, steps/s after compile; jaxrl runs with the reference's
learning work (DQN: its replay of 10k, batches of 128, 1-step targets, not the tuned config's
50k, 256 and 3-step targets, which do twice the gradient work). Each jaxrl figure, and the default
Snake run as shipped, comes with its work per env step and its share of the machine's ceilings
(`bench/roofline.py`, measured once per run): compute-, memory- or overhead-bound.

On its own, three single measurements, each saved as JSON under bench-results/ (or `--out`):

    python -m bench.parts.train [--algo ppo|dqn] [--env snake] [--updates 100] [key=value overrides ...]
    python -m bench.parts.train --vs purejaxrl [--env CartPole-v1 Breakout-MinAtar] [--rounds 3]
    python -m bench.parts.train --vs sb3 [--sb3-steps 20000] [--updates 300]

The first times one compiled chunk of updates of an env's default config. DQN is timed with
learning on from the first update (`algo.learning_starts=0`), so every timed step pays for its
gradient steps.

`--vs purejaxrl` trains PPO with PureJaxRL's CartPole settings (4 envs x 128 steps, 4 epochs x
4 minibatches, 64x64 tanh, 5e5 steps) twice per round in one process: the reference in PureJaxRL's
shape (`bench/peers/purejaxrl_ref.py`), then `jaxrl.train` with the same hyperparameters, a whole
run each (its run directory, chunks, metrics and checkpoint included). Rounds interleave the two,
so a slow spell of a shared machine hits both. Figures: steps/s over the training run (after
compile), compile seconds, and the final return (mean over the episodes of the last 10% of the run).

`--vs sb3` times DQN on Snake 10x10: jaxrl's default config (learning from the first update, after
a warm-up chunk that fills part of the replay) beside Stable-Baselines3 DQN with its defaults
(`bench/peers/sb3_peer.py`, 2 torch threads), timed after its `learning_starts`. SB3 steps the same
Snake through the Gymnasium adapter (`envs.to_gymnasium`), so both learn the very same rules. The
adapter dispatches one jitted call per step from Python, so a Python env written for speed would
make SB3 faster than this figure (by how much: docs/benchmarks.md, "Measured choices in the code").

(These were `python -m bench.train_throughput` and `python -m bench.dqn_vs_sb3`.)
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jaxrl
from jaxrl.bench import RESULTS, roofline
from jaxrl.bench.common import (
    Context,
    fmt_rate,
    fmt_ratio,
    log_axes,
    out_of_memory,
    save_figure,
    timed_program,
    whole_run,
)

NAME = "train"
TITLE = "End-to-end training steps/s against num_envs"
VS_ENVS = ("CartPole-v1", "Breakout-MinAtar")  # --vs purejaxrl's default envs


def timed_chunk(cfg: Any, updates: int, warmup: int = 1) -> dict[str, Any]:
    """`timed_program`'s figures alone."""
    return timed_program(cfg, updates, warmup)[0]


def with_limit(row: dict[str, Any], cfg: Any, program: Any, ceiling: dict[str, Any] | None) -> dict[str, Any]:
    """A row of steps/s with its work per env step and its share of the machine's ceilings (bench.roofline)."""
    if ceiling is None:
        return row
    precision = "bf16" if cfg.precision == "bf16" else "fp32"
    return {**row, "limit": roofline.limit_of(row["sps"], roofline.program_cost(program), ceiling, precision)}


def program_sps(overrides: list[str], target_steps: int, ceiling: dict[str, Any] | None = None) -> dict[str, Any]:
    """Steps/s of one timed chunk of updates (about `target_steps` env steps) of a config, with its share of
    `ceiling` when given."""
    from jaxrl import build
    from jaxrl.config.compose import compose_config

    cfg, _ = compose_config([*overrides, "progress=false"])
    updates = max(2, target_steps // build.program(cfg).steps_per_update)
    row, program = timed_program(cfg, updates)
    return with_limit(row, cfg, program, ceiling)


def jaxrl_run(env: str, settings: dict[str, Any], ceiling: dict[str, Any] | None = None) -> dict[str, Any]:
    """One whole `jaxrl.train` run: steps/s after compile, compile seconds, final return; with `ceiling`,
    its share of it (its update compiled once more, apart, for its work per step)."""
    s, _, _ = whole_run(env, **settings)
    row = {"sps": s["sps"], "compile_s": s["compile_s"], "final_return": s["final_return"]}
    if ceiling is None:
        return row
    from jaxrl import build

    cfg = jaxrl.make_config(env=env, **settings)
    program = build.program(cfg, chunk=1)
    program.compile()
    return with_limit(row, cfg, program, ceiling)


def sweep(ctx: Context, label: str, sizes: list[int], measure) -> list[dict[str, Any]]:
    """`measure(n)` for each size; an out-of-memory size ends the sweep with one line."""
    rows = []
    for n in sizes:
        try:
            row = {"n_envs": n, **measure(n)}
        except Exception as e:
            if not out_of_memory(e):
                raise
            ctx.skip(f"{label}: out of memory at {n:,} envs (and above)")
            break
        rows.append(row)
        ctx.say(f"{label}: {n:>7,} envs: {fmt_rate(row['sps'])} steps/s (compile {row.get('compile_s', 0):.1f} s)")
    return rows


def run(ctx: Context) -> dict[str, Any]:
    target = ctx.pick(2_000, 200_000, 1_000_000, 30_000_000)
    series: dict[str, dict[str, Any]] = {}
    ceiling = roofline.shared_ceilings(ctx)

    # -- The default Snake run as shipped (python -m jaxrl.train env=snake), against the ceilings --------
    default = program_sps(["env=snake"], target, ceiling)
    ctx.say(f"default Snake PPO run: {fmt_rate(default['sps'])} steps/s; {roofline.describe_limit(default['limit'])}")

    def add(key: str, title: str, group: str, rows: list[dict[str, Any]], ours: bool) -> None:
        if rows:
            series[key] = {"title": title, "group": group, "ours": ours, "rows": rows}

    # -- Snake: jaxrl -------------------------------------------------------------------------
    ppo_sizes = ctx.pick([8], [64, 512], [16, 64, 256, 512, 2048, 8192], [64, 512, 2048, 8192, 32768, 131072])
    base = ["env=snake", "algo=ppo", "algo.minibatch_size=auto"]
    add(
        "jaxrl_ppo_snake",
        "jaxrl PPO",
        "PPO on Snake 10x10",
        sweep(ctx, "jaxrl PPO Snake", ppo_sizes, lambda n: program_sps([*base, f"num_envs={n}"], target, ceiling)),
        True,
    )
    dqn_sizes = ctx.pick([8], [256], [16, 64, 256, 1024, 4096], [256, 1024, 4096, 16384, 65536])
    base = ["env=snake", "algo=dqn", "algo.learning_starts=0"]
    add(
        "jaxrl_dqn_snake",
        "jaxrl DQN",
        "DQN on Snake 10x10",
        sweep(ctx, "jaxrl DQN Snake", dqn_sizes, lambda n: program_sps([*base, f"num_envs={n}"], target // 2, ceiling)),
        True,
    )

    # -- Snake: Stable-Baselines3 ---------------------------------------------------------------
    from jaxrl.bench.peers import sb3_peer

    missing = sb3_peer.available()
    if missing:
        ctx.skip(f"Stable-Baselines3: {missing}")
    else:
        sb3_steps = ctx.pick(512, 2048, 16384)
        for algo, vecs, sizes in (
            ("ppo", ("subproc", "dummy"), ctx.pick([2], [4], [1, 4, 16])),
            ("dqn", ("subproc", "dummy"), ctx.pick([2], [4], [1, 4, 16])),
        ):
            for vec in vecs:
                if ctx.mode == "smoke" and (algo, vec) != ("ppo", "dummy"):
                    continue
                if ctx.mode == "quick" and vec == "subproc":  # its workers take most of a minute to start
                    ctx.skip("SB3 with SubprocVecEnv: full mode only (quick mode times DummyVecEnv)")
                    continue
                title = f"SB3 {algo.upper()} ({'SubprocVecEnv' if vec == 'subproc' else 'DummyVecEnv'})"
                add(
                    f"sb3_{algo}_{vec}_snake",
                    title,
                    f"{algo.upper()} on Snake 10x10",
                    sweep(
                        ctx,
                        f"{title} Snake",
                        sizes,
                        lambda n, algo=algo, vec=vec: rename(
                            sb3_peer.throughput(algo, vec, n, sb3_steps), compile_s="setup_s"
                        ),
                    ),
                    False,
                )

    # -- CartPole: jaxrl beside the PureJaxRL-shaped references --------------------------------
    from jaxrl.bench.peers.purejaxrl_ref import run_reference as ppo_reference

    cart_sizes = ctx.pick([4], [4], [4, 16, 64, 256, 1024], [4, 64, 1024, 4096, 16384])  # quick: PureJaxRL's 4
    tmin = ctx.pick(4_096, 50_000, 500_000, 500_000)
    min_updates = ctx.pick(2, 10, 20, 20)

    def ppo_total(n: int) -> int:
        return max(tmin, n * 128 * min_updates)

    def jaxrl_ppo(n: int) -> dict[str, Any]:
        settings = purejaxrl_settings(seed=0) | {"num_envs": n, "total_timesteps": ppo_total(n)}
        return jaxrl_run("CartPole-v1", settings, ceiling)

    add(
        "jaxrl_ppo_cartpole",
        "jaxrl PPO",
        "PPO on CartPole-v1",
        sweep(ctx, "jaxrl PPO CartPole", cart_sizes, jaxrl_ppo),
        True,
    )
    add(
        "ref_ppo_cartpole",
        "PureJaxRL-shaped PPO",
        "PPO on CartPole-v1",
        sweep(
            ctx,
            "PureJaxRL-shaped PPO CartPole",
            cart_sizes,
            lambda n: ppo_reference("CartPole-v1", 0, NUM_ENVS=n, TOTAL_TIMESTEPS=ppo_total(n)),
        ),
        False,
    )
    try:
        from jaxrl.bench.peers.purejaxrl_dqn_ref import run_reference as dqn_reference
    except ImportError as e:
        ctx.skip(f"PureJaxRL-shaped DQN: {e}")
        dqn_reference = None
    # PureJaxRL trains when the env-step count is a multiple of TRAINING_INTERVAL (10) and copies
    # the target at multiples of 500: every lcm(num_envs, 10) and lcm(num_envs, 500) env steps.
    # jaxrl is given the same two intervals, so both do the same learning work at every size.
    dqn_cart_sizes = ctx.pick([10], [10], [10, 100, 1000], [10, 1000, 10000])
    dqn_tmin = ctx.pick(4_000, 30_000, 500_000, 500_000)

    def dqn_total(n: int) -> int:
        return max(dqn_tmin, n * 200)

    def jaxrl_dqn(n: int) -> dict[str, Any]:
        from jaxrl.bench.peers.purejaxrl_dqn_ref import PUREJAXRL_DQN_CARTPOLE as c

        settings = {  # the reference's learning work, not the tuned config's (batch 256, 3-step targets, 50k replay)
            "algo": "dqn",
            "seed": 0,
            "num_envs": n,
            "total_timesteps": dqn_total(n),
            "algo.tau": 1.0,  # PureJaxRL's hard target copy
            "algo.target_update_interval": math.lcm(n, 500),
            "algo.train_freq": math.lcm(n, 10),
            "algo.learning_starts": min(10_000, dqn_total(n) // 5),
            "algo.buffer_size": c["BUFFER_SIZE"],
            "algo.batch_size": c["BUFFER_BATCH_SIZE"],
            "algo.n_step": 1,
            "algo.double": False,
            "algo.lr": c["LR"],
            "algo.gamma": c["GAMMA"],
            "algo.epsilon_end": c["EPSILON_FINISH"],
            "algo.epsilon_decay": c["EPSILON_ANNEAL_TIME"] / c["TOTAL_TIMESTEPS"],
        }
        return jaxrl_run("CartPole-v1", settings, ceiling)

    add(
        "jaxrl_dqn_cartpole",
        "jaxrl DQN",
        "DQN on CartPole-v1",
        sweep(ctx, "jaxrl DQN CartPole", dqn_cart_sizes, jaxrl_dqn),
        True,
    )
    if dqn_reference is not None:
        add(
            "ref_dqn_cartpole",
            "PureJaxRL-shaped DQN",
            "DQN on CartPole-v1",
            sweep(
                ctx,
                "PureJaxRL-shaped DQN CartPole",
                dqn_cart_sizes,
                lambda n: dqn_reference(
                    "CartPole-v1",
                    0,
                    NUM_ENVS=n,
                    TOTAL_TIMESTEPS=dqn_total(n),
                    LEARNING_STARTS=min(10_000, dqn_total(n) // 5),
                ),
            ),
            False,
        )
    out = {"series": series, "default_snake": default, "ceilings": ceiling}
    out["headlines"] = headlines(out)
    return out


def rename(d: dict[str, Any], **names: str) -> dict[str, Any]:
    """`d` with keys renamed new=old (SB3's setup seconds shown where jaxrl's compile seconds are)."""
    return {**d, **{new: d[old] for new, old in names.items() if old in d}}


def best(series: dict[str, Any]) -> tuple[float, int]:
    row = max(series["rows"], key=lambda r: r["sps"])
    return row["sps"], row["n_envs"]


def headlines(out: dict[str, Any]) -> list[dict[str, str]]:
    lines = []
    groups = dict.fromkeys(s["group"] for s in out["series"].values())
    for group in groups:
        members = [s for s in out["series"].values() if s["group"] == group]
        ours = [s for s in members if s["ours"]]
        if not ours:
            continue
        sps, n = best(ours[0])
        text = f"{ours[0]['title']} {fmt_rate(sps)} steps/s at {n:,} envs"
        peers = [s for s in members if not s["ours"]]
        if peers:
            top = max(peers, key=lambda s: best(s)[0])
            psps, pn = best(top)
            text += f"; best peer {top['title']} {fmt_rate(psps)} at {pn:,} envs: {fmt_ratio(sps / psps)}"
            if group == "PPO on Snake 10x10":
                text += " (target >= 200x)"
        lines.append({"what": f"{group}, best num_envs", "figure": text})
    if out.get("default_snake", {}).get("limit"):
        d = out["default_snake"]
        lines.append(
            {
                "what": "Default Snake PPO run (env=snake), against this machine's ceilings",
                "figure": f"{fmt_rate(d['sps'])} steps/s: {roofline.describe_limit(d['limit'])}",
            }
        )
    return lines


def limits_report(result: dict[str, Any]) -> list[str]:
    """The jaxrl rows against the machine's ceilings: work per env step, achieved rates, what bounds each."""
    if "ceilings" not in result:
        return []
    md = [
        (
            f"**Against this machine's ceilings** ({roofline.describe_ceilings(result['ceilings'])}; how to read it:"
            ' docs/benchmarks.md, "How close to the limit")'
        ),
        "",
        (
            "| run | num_envs | steps/s | matmul kFLOP / step | kB / step | matmul GFLOP/s (share) |"
            " GB/s (share of streaming; in cache) | bound |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [("default Snake PPO run (env=snake)", result["default_snake"])] if "default_snake" in result else []
    for s in result["series"].values():
        if s["ours"]:
            rows += [(f"{s['title']}, {s['group'].split(' on ')[-1]}", r) for r in s["rows"] if "limit" in r]
    for what, r in rows:
        lim = r["limit"]
        md.append(
            f"| {what} | {r.get('n_envs', 512):,} | {fmt_rate(r['sps'])} | {lim['per_step']['matmul_flops'] / 1e3:.1f}"
            f" | {lim['per_step']['bytes'] / 1e3:.1f} | {lim['per_s']['matmul_flops'] / 1e9:.1f}"
            f" ({lim['matmul_share']:.0%})"
            f" | {lim['per_s']['bytes'] / 1e9:.1f} ({lim['bytes_share']:.0%}; {lim['cache_share']:.0%})"
            f" | {lim['bound']} |"
        )
    return [*md, ""]


def report(result: dict[str, Any]) -> str:
    md = ["Steps/s (compile or setup seconds in brackets); ratio: jaxrl at that num_envs over the peer.", ""]
    groups = dict.fromkeys(s["group"] for s in result["series"].values())
    for group in groups:
        members = {k: s for k, s in result["series"].items() if s["group"] == group}
        ours = next((s for s in members.values() if s["ours"]), None)
        sizes = sorted({r["n_envs"] for s in members.values() for r in s["rows"]})
        head = ["num_envs"] + [s["title"] for s in members.values()]
        peers = [s for s in members.values() if not s["ours"]]
        if ours:
            head += [f"ratio to {s['title']}" for s in peers]
        md += [f"**{group}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for n in sizes:
            cells = [f"{n:,}"]
            at = {s["title"]: next((r for r in s["rows"] if r["n_envs"] == n), None) for s in members.values()}
            for s in members.values():
                r = at[s["title"]]
                extra = f" ({r['compile_s']:.1f} s)" if r and r.get("compile_s") is not None else ""
                ret = f", return {r['final_return']:.0f}" if r and r.get("final_return") is not None else ""
                cells.append(f"{fmt_rate(r['sps'])}{extra}{ret}" if r else "-")
            if ours:
                mine = at[ours["title"]]
                for s in peers:
                    theirs = at[s["title"]]
                    cells.append(fmt_ratio(mine["sps"] / theirs["sps"]) if mine and theirs else "-")
            md.append("| " + " | ".join(cells) + " |")
        if ours and peers:
            sps, n = best(ours)
            for s in peers:
                psps, pn = best(s)
                md.append(
                    f"\nBest against best: {ours['title']} {fmt_rate(sps)} ({n:,} envs)"
                    f" / {s['title']} {fmt_rate(psps)} ({pn:,} envs) = {fmt_ratio(sps / psps)}."
                )
        md.append("")
    return "\n".join(md + limits_report(result))


def plot(result: dict[str, Any], axes_title: str, path) -> None:
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys(s["group"] for s in result["series"].values()))
    cols = min(2, len(groups))
    rows = math.ceil(len(groups) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 4.4 * rows), squeeze=False)
    for ax, group in zip(axes.flat, groups, strict=False):
        for s in (s for s in result["series"].values() if s["group"] == group):
            pts = [(r["n_envs"], r["sps"]) for r in s["rows"]]
            ax.plot(*zip(*pts, strict=True), marker="o", label=s["title"], lw=2.2 if s["ours"] else 1.4)
        log_axes(ax, group, "num_envs (parallel envs)", "env steps / s, training end to end")
    for ax in list(axes.flat)[len(groups) :]:
        ax.axis("off")
    save_figure(fig, f"Training throughput - {axes_title}", path)


# -- On its own: python -m bench.parts.train [--vs purejaxrl | --vs sb3] ----------------------------


def purejaxrl_settings(seed: int) -> dict[str, Any]:
    """jaxrl's settings for PureJaxRL's CartPole PPO config (`bench.peers.purejaxrl_ref.PUREJAXRL_CARTPOLE`)."""
    from jaxrl.bench.peers.purejaxrl_ref import PUREJAXRL_CARTPOLE as c

    return {
        "algo": "ppo",
        "num_envs": c["NUM_ENVS"],
        "total_timesteps": c["TOTAL_TIMESTEPS"],
        "seed": seed,
        "algo.num_steps": c["NUM_STEPS"],
        "algo.update_epochs": c["UPDATE_EPOCHS"],
        "algo.num_minibatches": c["NUM_MINIBATCHES"],
        "algo.lr": c["LR"],
        "algo.anneal_lr": c["ANNEAL_LR"],
        "algo.gamma": c["GAMMA"],
        "algo.gae_lambda": c["GAE_LAMBDA"],
        "algo.clip_eps": c["CLIP_EPS"],
        "algo.ent_coef": c["ENT_COEF"],
        "algo.vf_coef": c["VF_COEF"],
        "algo.max_grad_norm": c["MAX_GRAD_NORM"],
        "algo.activation": c["ACTIVATION"],
        "algo.hidden": [64, 64],
        "algo.network": "mlp",
        "algo.shared_torso": False,
        "algo.normalize_obs": False,
        "algo.reward_scale": 1.0,
    }


def run_jaxrl(env: str, seed: int) -> dict[str, float]:
    """One whole `jaxrl.train` run with PureJaxRL's settings: steps/s, compile seconds, final return."""
    s, _, _ = whole_run(env, **purejaxrl_settings(seed))
    return {"sps": s["sps"], "compile_s": s["compile_s"], "final_return": s["final_return"], "seconds": s["train_s"]}


def vs_purejaxrl(envs: list[str], rounds: int, seed: int) -> dict[str, Any]:
    """Both trainers on each env, interleaved over `rounds` rounds; per env the runs and their summary."""
    from jaxrl.bench.peers.purejaxrl_ref import run_reference

    out: dict[str, Any] = {}
    for env in envs:
        runs: dict[str, list[dict[str, float]]] = {"purejaxrl": [], "jaxrl": []}
        for r in range(rounds):
            runs["purejaxrl"].append(run_reference(env, seed + r))
            runs["jaxrl"].append(run_jaxrl(env, seed + r))
            for name, rs in runs.items():
                x = rs[-1]
                print(
                    f"  {env} round {r + 1}/{rounds} {name:9s}: {x['sps']:,.0f} steps/s, compile {x['compile_s']:.2f}s,"
                    f" final return {x['final_return']:.1f}",
                    flush=True,
                )
        out[env] = summarize(runs)
    return out


def summarize(runs: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    """Best and median steps/s and compile seconds per trainer, and jaxrl's ratios (best against best)."""
    table: dict[str, Any] = {"runs": runs}
    for name, rs in runs.items():
        table[name] = {
            "sps_best": max(x["sps"] for x in rs),
            "sps_median": statistics.median(x["sps"] for x in rs),
            "compile_s_best": min(x["compile_s"] for x in rs),
            "compile_s_median": statistics.median(x["compile_s"] for x in rs),
            "final_return_mean": statistics.fmean(x["final_return"] for x in rs),
        }
    ours, ref = table["jaxrl"], table["purejaxrl"]
    table["sps_ratio"] = ours["sps_best"] / ref["sps_best"]
    table["sps_ratio_median"] = ours["sps_median"] / ref["sps_median"]
    table["compile_ratio"] = ours["compile_s_best"] / ref["compile_s_best"]
    return table


def print_vs(results: dict[str, Any]) -> None:
    print("\nPPO with PureJaxRL's CartPole settings, one process, interleaved (best of rounds; median in brackets)")
    print(
        f"{'env':18s} {'jaxrl steps/s':>22s} {'PureJaxRL steps/s':>22s} {'ratio':>12s}"
        f" {'compile jaxrl / ref':>22s} {'return':>14s}"
    )
    for env, t in results.items():
        o, r = t["jaxrl"], t["purejaxrl"]
        print(
            f"{env:18s} {o['sps_best']:>12,.0f} ({o['sps_median']:>7,.0f})"
            f" {r['sps_best']:>12,.0f} ({r['sps_median']:>7,.0f})"
            f" {t['sps_ratio']:>5.2f}x ({t['sps_ratio_median']:.2f})"
            f" {o['compile_s_best']:>9.2f}s / {r['compile_s_best']:.2f}s"
            f" {o['final_return_mean']:>6.1f} / {r['final_return_mean']:.1f}"
        )


def chunk_throughput(args: argparse.Namespace) -> dict[str, Any]:
    """Steps/s of one timed chunk of an env's default config (after a warm-up update)."""
    from jaxrl import build
    from jaxrl.config.compose import compose_config

    overrides = [f"env={args.env}", f"algo={args.algo}"]
    overrides += ["algo.learning_starts=0"] if args.algo == "dqn" else []
    overrides += args.overrides
    cfg, _ = compose_config(overrides)
    steps_per_update = build.program(cfg).steps_per_update
    if args.updates is None:
        args.updates = max(20, 300_000 // steps_per_update)
    t = timed_chunk(cfg, args.updates)
    print(
        f"{args.algo.upper()} on {cfg.env.name}: {t['sps']:,.0f} env steps/s"
        f" ({t['steps']:,} steps in {t['seconds']:.1f}s); compile {t['compile_s']:.1f}s"
    )
    return {
        "benchmark": "train_throughput",
        "algo": args.algo,
        "env": cfg.env.name,
        "overrides": overrides,
        "num_envs": cfg.num_envs,
        "steps_per_update": steps_per_update,
        "network": cfg.algo.network,
        "hidden": list(cfg.algo.hidden),
        "sps": t["sps"],
        "compile_s": t["compile_s"],
        "timed_steps": t["steps"],
    }


def vs_sb3(sb3_steps: int, updates: int) -> dict[str, Any]:
    """DQN on Snake 10x10: jaxrl's default config beside Stable-Baselines3 DQN (defaults), one process."""
    from jaxrl.bench.peers import sb3_peer
    from jaxrl.config.compose import compose_config

    cfg, _ = compose_config(["env=snake", "algo=dqn", "algo.learning_starts=0"])  # time learning updates only
    ours = timed_chunk(cfg, updates, warmup=updates)
    print(
        f"jaxrl DQN (default Snake config): {ours['sps']:,.0f} env steps/s (compile {ours['compile_s']:.1f}s)",
        flush=True,
    )
    sb3 = sb3_peer.throughput("dqn", "dummy", n_envs=1, steps=sb3_steps, threads=2)["sps"]
    print(f"Stable-Baselines3 DQN (defaults, Snake through envs.to_gymnasium): {sb3:,.0f} env steps/s")
    print(f"ratio: {ours['sps'] / sb3:.0f}x")
    return {
        "benchmark": "dqn_vs_sb3",
        "board": 10,
        "jaxrl_sps": ours["sps"],
        "jaxrl_compile_s": ours["compile_s"],
        "sb3_sps": sb3,
        "sb3_env": "envs.to_gymnasium('snake', size=10)",
        "ratio": ours["sps"] / sb3,
    }


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=f"python -m {__spec__.name}" if __spec__ else None,
        description="End-to-end training steps/s (PPO or DQN), compile time reported apart; "
        "`--vs purejaxrl` beside PureJaxRL's PPO, `--vs sb3` DQN beside Stable-Baselines3's.",
    )
    parser.add_argument("--algo", default="ppo", choices=["ppo", "dqn"])
    parser.add_argument(
        "--env",
        nargs="+",
        default=None,
        help="env id(s); default snake (with --vs purejaxrl: CartPole-v1 Breakout-MinAtar)",
    )
    parser.add_argument(
        "--updates",
        type=int,
        default=None,
        help="updates timed after compile (default: ~300k env steps; --vs sb3: 300)",
    )
    parser.add_argument("--vs", choices=["purejaxrl", "sb3"], default=None, help="train beside a peer in one process")
    parser.add_argument("--rounds", type=int, default=3, help="--vs purejaxrl: interleaved rounds per env")
    parser.add_argument(
        "--seed", type=int, default=30, help="--vs purejaxrl: seed of the first round (one more per round)"
    )
    parser.add_argument("--sb3-steps", type=int, default=20_000, help="--vs sb3: SB3 env steps timed")
    parser.add_argument(
        "--out", default=None, help=f"JSON path (default {RESULTS}/train_throughput_<...>.json or dqn_vs_sb3.json)"
    )
    parser.add_argument("overrides", nargs="*", help="config overrides, as for python -m jaxrl.train")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    from jaxrl.bench.machine import describe

    if args.vs == "purejaxrl":
        envs = args.env or list(VS_ENVS)
        result = {"benchmark": "train_throughput_vs_purejaxrl", "envs": vs_purejaxrl(envs, args.rounds, args.seed)}
        print_vs(result["envs"])
        default_out = f"{RESULTS}/train_throughput_vs_purejaxrl.json"
    elif args.vs == "sb3":
        from jaxrl.bench.peers import sb3_peer

        if (missing := sb3_peer.available()) is not None:
            print(f"error: {missing}", file=sys.stderr)
            return 2
        result = vs_sb3(args.sb3_steps, args.updates or 300)
        default_out = f"{RESULTS}/dqn_vs_sb3.json"
    else:
        args.env = (args.env or ["snake"])[0]
        result = chunk_throughput(args)
        suffix = "" if args.env == "snake" else f"_{args.env}"
        default_out = f"{RESULTS}/train_throughput_{args.algo}{suffix}.json"
    result.update(when=datetime.now(UTC).isoformat(timespec="seconds"), machine=describe())
    out = Path(args.out or default_out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
