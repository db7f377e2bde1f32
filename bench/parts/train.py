"""End-to-end training steps/s (PPO and DQN) against num_envs, on Snake and on CartPole, beside
Stable-Baselines3 (SubprocVecEnv and DummyVecEnv, stepping the same Snake through
`envs.to_gymnasium`) and PureJaxRL-shaped reference PPO and DQN on CartPole.

Snake: jaxrl's default config at each num_envs (`algo.minibatch_size=auto`; DQN with
`algo.learning_starts=0`, so every timed step pays for its gradient steps), timed over one
compiled chunk of updates after a warm-up update. SB3 (`bench/sb3_peer.py`): PPO with the seed
guides' "fast" settings and DQN with SB3's defaults, timed after a warm-up. CartPole: whole
runs of jaxrl (`jaxrl.train`, run directory, metrics and checkpoint included) and of the
references (`bench/purejaxrl_ref.py`, `bench/purejaxrl_dqn_ref.py`) with PureJaxRL's
settings and the num_envs of the row, steps/s after compile.
"""

from __future__ import annotations

import math
import time
from typing import Any

import jax
from jaxrl.bench.common import Context, fmt_rate, fmt_ratio, log_axes, out_of_memory, save_figure, whole_run

NAME = "train"
TITLE = "End-to-end training steps/s against num_envs"


def program_sps(overrides: list[str], target_steps: int) -> dict[str, Any]:
    """Steps/s of one timed chunk of updates (about `target_steps` env steps) of a config."""
    from jaxrl.config.compose import compose_config
    from jaxrl.config.schema import make_env
    from jaxrl.run.driver import Program

    cfg, _ = compose_config([*overrides, "progress=false"])
    env, params = make_env(cfg)
    probe = Program(cfg, env, params)
    updates = max(2, target_steps // probe.steps_per_update)
    program = Program(cfg, env, params, chunk=updates)
    runner, compile_s = program.compile()
    runner, _ = program.run_chunk(runner, 1)  # warm-up: first-call allocations
    jax.block_until_ready(runner)
    t0 = time.perf_counter()
    runner, _ = program.run_chunk(runner, updates)
    jax.block_until_ready(runner)
    seconds = time.perf_counter() - t0
    steps = updates * program.steps_per_update * program.population
    return {"sps": steps / seconds, "compile_s": compile_s, "steps": steps, "seconds": seconds}


def jaxrl_run(env: str, settings: dict[str, Any]) -> dict[str, Any]:
    """One whole `jaxrl.train` run: steps/s after compile, compile seconds, final return."""
    s, _, _ = whole_run(env, **settings)
    return {"sps": s["sps"], "compile_s": s["compile_s"], "final_return": s["final_return"]}


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
    target = ctx.pick(2_000, 300_000, 1_000_000, 30_000_000)
    series: dict[str, dict[str, Any]] = {}

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
        sweep(ctx, "jaxrl PPO Snake", ppo_sizes, lambda n: program_sps([*base, f"num_envs={n}"], target)),
        True,
    )
    dqn_sizes = ctx.pick([8], [64, 256], [16, 64, 256, 1024, 4096], [256, 1024, 4096, 16384, 65536])
    base = ["env=snake", "algo=dqn", "algo.learning_starts=0"]
    add(
        "jaxrl_dqn_snake",
        "jaxrl DQN",
        "DQN on Snake 10x10",
        sweep(ctx, "jaxrl DQN Snake", dqn_sizes, lambda n: program_sps([*base, f"num_envs={n}"], target // 2)),
        True,
    )

    # -- Snake: Stable-Baselines3 ---------------------------------------------------------------
    from jaxrl.bench import sb3_peer

    missing = sb3_peer.available()
    if missing:
        ctx.skip(f"Stable-Baselines3: {missing}")
    else:
        sb3_steps = ctx.pick(512, 4096, 16384)
        for algo, vecs, sizes in (
            ("ppo", ("subproc", "dummy"), ctx.pick([2], [4], [1, 4, 16])),
            ("dqn", ("subproc", "dummy"), ctx.pick([2], [4], [1, 4, 16])),
        ):
            for vec in vecs:
                if ctx.mode == "smoke" and (algo, vec) != ("ppo", "dummy"):
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
    from jaxrl.bench.purejaxrl_ref import run_reference as ppo_reference
    from jaxrl.bench.train_throughput import purejaxrl_settings

    cart_sizes = ctx.pick([4], [4, 64], [4, 16, 64, 256, 1024], [4, 64, 1024, 4096, 16384])
    tmin = ctx.pick(4_096, 100_000, 500_000, 500_000)
    min_updates = ctx.pick(2, 10, 20, 20)

    def ppo_total(n: int) -> int:
        return max(tmin, n * 128 * min_updates)

    def jaxrl_ppo(n: int) -> dict[str, Any]:
        settings = purejaxrl_settings(seed=0) | {"num_envs": n, "total_timesteps": ppo_total(n)}
        settings.pop("progress", None)
        return jaxrl_run("CartPole-v1", settings)

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
        from jaxrl.bench.purejaxrl_dqn_ref import run_reference as dqn_reference
    except ImportError as e:
        ctx.skip(f"PureJaxRL-shaped DQN: {e}")
        dqn_reference = None
    # PureJaxRL trains when the env-step count is a multiple of TRAINING_INTERVAL (10) and copies
    # the target at multiples of 500: every lcm(num_envs, 10) and lcm(num_envs, 500) env steps.
    # jaxrl is given the same two intervals, so both do the same learning work at every size.
    dqn_cart_sizes = ctx.pick([10], [10, 100], [10, 100, 1000], [10, 1000, 10000])
    dqn_tmin = ctx.pick(4_000, 60_000, 500_000, 500_000)

    def dqn_total(n: int) -> int:
        return max(dqn_tmin, n * 200)

    def jaxrl_dqn(n: int) -> dict[str, Any]:
        settings = {
            "algo": "dqn",
            "seed": 0,
            "num_envs": n,
            "total_timesteps": dqn_total(n),
            "algo.tau": 1.0,  # PureJaxRL's hard target copy
            "algo.target_update_interval": math.lcm(n, 500),
            "algo.train_freq": math.lcm(n, 10),
            "algo.learning_starts": min(10_000, dqn_total(n) // 5),
        }
        return jaxrl_run("CartPole-v1", settings)

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
    out = {"series": series}
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
    return lines


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
                    f"\nBest against best: {ours['title']} {fmt_rate(sps)} ({n:,} envs) / {s['title']} {fmt_rate(psps)} ({pn:,} envs) = {fmt_ratio(sps / psps)}."
                )
        md.append("")
    return "\n".join(md)


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
