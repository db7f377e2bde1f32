"""Memory per env against num_envs: env state, the PPO rollout buffer and the DQN replay, from the
shapes of the training state and from the compiled update program, and on an accelerator the
allocator's measured peak.

For each num_envs the default Snake PPO and DQN configs are built and compiled for one update.
Per env: the env state (the env's own pytree) and the streams beside it (current observation,
episode sums), the rollout buffer (transitions an update stores: `algo.memory()`, num_steps
per env), the replay (DQN), and the compiled program's whole footprint (its arguments, i.e. the
training state, plus its temporaries: rollout, shuffled minibatches, activations). Per-env
figures are slopes between consecutive sizes, so fixed costs (parameters, optimizer) drop out.
On a GPU the allocator's peak after running an update is measured too (`peak_bytes_in_use`).
"""

from __future__ import annotations

import math
from typing import Any

import jax

from jaxrl.bench.common import Context, fmt_bytes, log_axes, out_of_memory, save_figure

NAME = "memory"
TITLE = "Memory per env against num_envs"
TARGET = 4096  # bytes: one Snake env, state plus its share of the rollout at the default settings


def nbytes(tree: Any) -> int:
    return sum(math.prod(x.shape) * x.dtype.itemsize for x in jax.tree.leaves(tree))


def measure(algo: str, n: int, accelerator: bool) -> dict[str, Any]:
    from jaxrl import build
    from jaxrl.config.compose import compose_config

    cfg, _ = compose_config(["env=snake", f"algo={algo}", f"num_envs={n}", "progress=false"])
    program = build.program(cfg, chunk=1)
    runner = program.abstract_runner()
    row: dict[str, Any] = {
        "n_envs": n,
        "num_steps": getattr(cfg.algo, "num_steps", 1),
        "env_state": nbytes(runner.envs.state),
        "streams": nbytes(runner.envs),
        "training_state": nbytes(runner),
    }
    if algo == "ppo":
        row["rollout"] = sum(block.nbytes for block in program.algo.memory())
    else:
        row["replay"] = nbytes(runner.replay)
        row["replay_transitions"] = cfg.algo.buffer_size
    live, _compile_s = program.compile()
    stats = program._compiled.memory_analysis()
    if stats is not None:
        row["compiled_arguments"] = stats.argument_size_in_bytes
        row["compiled_temp"] = stats.temp_size_in_bytes
        row["compiled_total"] = stats.argument_size_in_bytes + stats.temp_size_in_bytes
    if accelerator:
        live, _ = program.run_chunk(live, 1)
        jax.block_until_ready(live)
        device = jax.devices()[0]
        row["device_peak"] = (device.memory_stats() or {}).get("peak_bytes_in_use")
    del live
    return row


KEYS = ("env_state", "streams", "rollout", "replay", "compiled_total", "compiled_temp", "device_peak")


def per_env(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-env bytes: each key's slope from the previous size (the first size: its value / n)."""
    out, prev = [], None
    for r in rows:
        slope = {"n_envs": r["n_envs"]}
        for k in KEYS:
            if r.get(k) is None:
                continue
            if prev is None or prev.get(k) is None:
                slope[k] = r[k] / r["n_envs"]
            else:
                slope[k] = (r[k] - prev[k]) / (r["n_envs"] - prev["n_envs"])
        out.append(slope)
        prev = r
    return out


def run(ctx: Context) -> dict[str, Any]:
    sizes = ctx.pick([8, 16], [256, 512], [64, 256, 512, 2048, 8192, 32768], [512, 2048, 8192, 32768, 131072])
    out: dict[str, Any] = {"sizes": sizes}
    for algo in ("ppo", "dqn"):
        rows = []
        for n in sizes:
            try:
                # the allocator's peak only grows within a process: read it for the first sweep (PPO) only
                rows.append(measure(algo, n, ctx.accelerator and algo == "ppo"))
            except Exception as e:
                if not out_of_memory(e):
                    raise
                ctx.skip(f"{algo.upper()} Snake: out of memory at {n:,} envs (and above)")
                break
            r = rows[-1]
            ctx.say(
                f"{algo.upper()} Snake {n:>7,} envs: training state {fmt_bytes(r['training_state'])},"
                f" compiled temporaries {fmt_bytes(r.get('compiled_temp'))}"
            )
        out[algo] = {"rows": rows, "per_env": per_env(rows)}
    out["snake_env"] = snake_statement(out)
    out["headlines"] = [{"what": "one Snake 10x10 env, default PPO settings", "figure": out["snake_env"]["text"]}]
    return out


def snake_statement(out: dict[str, Any]) -> dict[str, Any]:
    """What one Snake env costs at the default rollout length, against the 4 KB target."""
    rows = [r for r in out["ppo"]["rows"] if r["n_envs"] == 512] or out["ppo"]["rows"]
    r = rows[0]
    n = r["n_envs"]
    state, streams, rollout = r["env_state"] / n, r["streams"] / n, r["rollout"] / n
    total = streams + rollout
    slope = out["ppo"]["per_env"][-1].get("compiled_total")
    text = (
        f"{fmt_bytes(total)} = env state {state:.0f} B + current observation and episode sums {streams - state:.0f} B"
        f" + its {r['num_steps']} stored transitions {fmt_bytes(rollout)}"
        f" ({'meets' if total <= TARGET else 'misses'} the 4 KiB target"
        + ("" if total <= TARGET else f" by {total / TARGET:.2f}x")
        + ")"
    )
    if slope is not None:
        text += f"; the compiled update's whole footprint (shuffled copies, activations) {fmt_bytes(slope)} per env"
    return {
        "bytes": total,
        "state": state,
        "streams": streams,
        "rollout": rollout,
        "compiled_per_env": slope,
        "text": text,
    }


def report(result: dict[str, Any]) -> str:
    md = [f"One Snake env: {result['snake_env']['text']}.", ""]
    for algo in ("ppo", "dqn"):
        rows = result[algo]["per_env"]
        if not rows:
            continue
        keys = [k for k in KEYS if any(k in r for r in rows)]
        md += [f"**{algo.upper()} on Snake 10x10, bytes per env** (slope from the previous size)", ""]
        md += ["| num_envs | " + " | ".join(keys) + " |", "|" + "---|" * (len(keys) + 1)]
        for r in rows:
            md.append(f"| {r['n_envs']:,} | " + " | ".join(fmt_bytes(r.get(k)) for k in keys) + " |")
        md.append("")
        totals = result[algo]["rows"]
        md += [
            f"{algo.upper()} totals: "
            + "; ".join(
                f"{r['n_envs']:,} envs: state {fmt_bytes(r['training_state'])},"
                f" compiled {fmt_bytes(r.get('compiled_total'))}"
                + (f", device peak {fmt_bytes(r['device_peak'])}" if r.get("device_peak") else "")
                + (
                    f", replay {fmt_bytes(r['replay'])} for {r['replay_transitions']:,} transitions"
                    f" ({r['replay'] / r['replay_transitions']:.0f} B each)"
                    if r.get("replay")
                    else ""
                )
                for r in totals
            ),
            "",
        ]
    return "\n".join(md)


def plot(result: dict[str, Any], axes_title: str, path) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    for ax, algo in zip(axes, ("ppo", "dqn"), strict=True):
        rows = result[algo]["per_env"]
        for key in KEYS:
            pts = [(r["n_envs"], r[key]) for r in rows if r.get(key)]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=key.replace("_", " "))
        if algo == "ppo":
            ax.axhline(TARGET, color="grey", ls="--", lw=1, label="4 KiB target (state + rollout)")
        log_axes(ax, f"{algo.upper()} on Snake 10x10, default config", "num_envs (parallel envs)", "bytes per env")
    save_figure(fig, f"Memory per env - {axes_title}", path)
