"""Env-only steps/s against num_envs: Snake beside Jumanji's Snake, the grid world (1 agent beside
navix and xminigrid Empty-8x8; 8 agents in agent-steps/s) and gymnax CartPole-v1.

Every env is stepped by the same harness (`bench/env_throughput.py`): random actions drawn in
one threefry call, auto-reset, and the observation consumed (summed into the scan's output, or
XLA would drop the work). Each size compiles each env apart (compile seconds kept), then the
envs of a size take turns in timed calls (best of `repeats`). A size an env runs out of memory
on ends that env's sweep.
"""

from __future__ import annotations

import math
from typing import Any

import jax
from jaxrl.bench import env_throughput as E
from jaxrl.bench.common import (
    Context,
    best_times,
    compile_timed,
    fmt_rate,
    fmt_ratio,
    log_axes,
    out_of_memory,
    peer_missing,
    save_figure,
)

NAME = "env"
TITLE = "Env-only steps/s against num_envs"


def suites() -> list[dict[str, Any]]:
    """Each suite: our env and its peers, as builders (n, steps) -> jitted run(key)."""
    return [
        {
            "id": "snake",
            "title": "Snake 10x10",
            "agents": 1,
            "ours": {"jaxrl": lambda n, s: E.ours(10, n, s)},
            "peers": {"jumanji Snake-v1": ("jumanji", lambda n, s: E.jumanji_snake(10, n, s))},
        },
        {
            "id": "grid1",
            "title": "Grid world 8x8, 1 agent",
            "agents": 1,
            "ours": {"jaxrl": lambda n, s: E.ours_grid(8, n, s, 1)},
            "peers": {
                "navix Empty-8x8": ("navix", lambda n, s: E.navix_empty(8, n, s)),
                "xminigrid Empty-8x8": ("xminigrid", lambda n, s: E.xminigrid_empty(8, n, s)),
            },
        },
        {
            "id": "grid8",
            "title": "Grid world 8x8, 8 agents (agent-steps/s)",
            "agents": 8,
            "ours": {"jaxrl": lambda n, s: E.ours_grid(8, n, s, 8)},
            "peers": {},
        },
        {
            "id": "cartpole",
            "title": "CartPole-v1 (gymnax)",
            "agents": 1,
            "ours": {"gymnax": lambda n, s: E.gymnax_env("CartPole-v1", n, s)},
            "peers": {},
        },
    ]


def run(ctx: Context) -> dict[str, Any]:
    sizes = ctx.pick(
        [4],
        [1, 64, 1024, 4096],
        [1, 16, 256, 4096, 16384, 65536],
        [1, 16, 256, 4096, 65536, 262144, 1048576, 4194304],
    )
    work = ctx.pick(2_000, 400_000, 2_000_000, 200_000_000)  # env steps per timed call
    lo, hi = ctx.pick((2, 20), (10, 1000), (20, 1000), (20, 1000))
    repeats = ctx.pick(1, 2, 3)
    out: dict[str, Any] = {"sizes": sizes, "repeats": repeats, "suites": []}
    for suite in suites():
        impls = dict(suite["ours"])
        for label, (module, build) in suite["peers"].items():
            missing = peer_missing(module, label)
            if missing:
                ctx.skip(missing)
            else:
                impls[label] = build
        ours = next(iter(suite["ours"]))
        rows, dead = [], set()
        for n in sizes:
            steps = int(min(hi, max(lo, work // n)))
            row: dict[str, Any] = {"n_envs": n, "steps_per_call": steps, "sps": {}, "compile_s": {}}
            calls = {}
            for label, build in impls.items():
                if label in dead:
                    continue
                try:
                    fn, row["compile_s"][label] = compile_timed(build(n, steps), jax.random.key(0))
                    calls[label] = lambda i, fn=fn: fn(jax.random.key(i))
                except Exception as e:
                    if not out_of_memory(e):
                        raise
                    dead.add(label)
                    ctx.skip(f"{suite['title']}, {label}: out of memory at {n:,} envs (and above)")
            if not calls:
                break
            try:
                seconds = best_times(calls, repeats)
            except Exception as e:  # a run that compiles can still fail to allocate
                if not out_of_memory(e):
                    raise
                ctx.skip(f"{suite['title']}: out of memory running {n:,} envs (and above)")
                break
            for label, s in seconds.items():
                row["sps"][label] = n * steps * suite["agents"] / s
            row["ratio"] = {p: row["sps"][ours] / row["sps"][p] for p in row["sps"] if p != ours}
            rows.append(row)
            peers = ", ".join(f"{p} {fmt_rate(v)}" for p, v in row["sps"].items() if p != ours)
            ctx.say(
                f"{suite['title']}: {n:>9,} envs: {ours} {fmt_rate(row['sps'][ours])}"
                + (f" | {peers}" if peers else "")
            )
        out["suites"].append(
            {"id": suite["id"], "title": suite["title"], "agents": suite["agents"], "ours": ours, "rows": rows}
        )
    out["headlines"] = headlines(out)
    return out


def best(suite: dict[str, Any], label: str) -> tuple[float, int | None]:
    """The best steps/s of `label` over the sizes, and the num_envs it came at."""
    top = max(((r["sps"].get(label, -math.inf), r["n_envs"]) for r in suite["rows"]), default=(math.nan, None))
    return top


def headlines(out: dict[str, Any]) -> list[dict[str, str]]:
    lines = []
    for suite in out["suites"]:
        if not suite["rows"]:
            continue
        sps, n = best(suite, suite["ours"])
        unit = "agent-steps/s" if suite["agents"] > 1 else "steps/s"
        text = f"{fmt_rate(sps)} {unit} at {n:,} envs"
        peers = {p for r in suite["rows"] for p in r["sps"] if p != suite["ours"]}
        for p in sorted(peers):
            psps, pn = best(suite, p)
            text += f"; {p} {fmt_rate(psps)} at {pn:,} ({fmt_ratio(sps / psps)})"
        lines.append({"what": f"{suite['title']}, env only, best num_envs", "figure": text})
    return lines


def report(result: dict[str, Any]) -> str:
    """Markdown tables: steps/s per size and implementation, ratios to each peer, compile seconds."""
    md = []
    for suite in result["suites"]:
        if not suite["rows"]:
            continue
        labels = list(dict.fromkeys(label for r in suite["rows"] for label in r["sps"]))
        peers = [p for p in labels if p != suite["ours"]]
        unit = "agent-steps/s" if suite["agents"] > 1 else "steps/s"
        md.append(f"**{suite['title']}** ({unit}; compile seconds in brackets)\n")
        head = ["num_envs"] + labels + [f"{suite['ours']} / {p}" for p in peers]
        md.append("| " + " | ".join(head) + " |")
        md.append("|" + "---|" * len(head))
        for r in suite["rows"]:
            cells = [f"{r['n_envs']:,}"]
            for label in labels:
                if label in r["sps"]:
                    c = r["compile_s"].get(label)
                    cells.append(fmt_rate(r["sps"][label]) + ("" if c is None else f" ({c:.1f} s)"))
                else:
                    cells.append("-")
            cells += [fmt_ratio(r["ratio"].get(p)) for p in peers]
            md.append("| " + " | ".join(cells) + " |")
        md.append("")
    return "\n".join(md)


def plot(result: dict[str, Any], axes_title: str, path) -> None:
    import matplotlib.pyplot as plt

    suites = [s for s in result["suites"] if s["rows"]]
    fig, axes = plt.subplots(1, len(suites), figsize=(4.6 * len(suites), 4.2), squeeze=False)
    for ax, suite in zip(axes[0], suites, strict=True):
        labels = list(dict.fromkeys(label for r in suite["rows"] for label in r["sps"]))
        for label in labels:
            pts = [(r["n_envs"], r["sps"][label]) for r in suite["rows"] if label in r["sps"]]
            ax.plot(*zip(*pts, strict=True), marker="o", label=label, lw=2.2 if label == suite["ours"] else 1.4)
        unit = "agent-steps / s" if suite["agents"] > 1 else "env steps / s"
        log_axes(ax, suite["title"], "num_envs (parallel envs)", unit)
    save_figure(fig, f"Env-only throughput, observation consumed - {axes_title}", path)
