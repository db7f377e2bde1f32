"""Memory and replay-free Q-learning: recurrent PPO (GRU) against feed-forward PPO, and PQN against DQN.

- MemoryChain-bsuite (the shipped GRU config) beside the same run with `algo.network=mlp`: final
  training return per seed, and the env steps at which the mean over seeds first reached 0.9.
- PQN on CartPole-v1 (shipped config), seeds in one program.
- PQN against DQN on Snake, each with its shipped config (seed 0): wall-clock, steps/s after
  compile, final training score and a greedy evaluation.
- Recurrent PPO's steps/s against feed-forward PPO's on the default Snake config (one timed chunk
  each, as the `train` part times): a GRU of 128 and of 64 units after one 128-unit layer.
- The grid world with 8 agents and `env.view=3`: the shipped one-conv CNN against the same CNN
  feeding a GRU, the same env steps each; greedy world return, and the GRU's training return at
  the CNN run's wall-clock (read off its metrics).
  A third run gives the CNN as many steps as fit in the GRU run's wall-clock.
- PQN against DQN on the grid world (1 agent), each with its shipped config (seed 0).
- PQN on Breakout-MinAtar with purejaxql's MinAtar settings, as far as the mode's budget goes.

Quick mode leaves out PQN on CartPole (the seeds part trains it), PQN against DQN, the 64-unit GRU and the
grid's third run (`QUICK_SKIPS`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from jaxrl.bench.common import Context, evaluated_run, fmt_rate, whole_run
from jaxrl.bench.parts.train import program_sps

NAME = "algos"
TITLE = "Recurrent PPO and PQN"

GRU_GRID = {"algo.network": "gru", "algo.torso": "cnn", "algo.rnn_hidden": 64}
MINATAR = {  # purejaxql's pqn_minatar.yaml, with PPO's grid CNN (one 3x3 conv of 16, then 128)
    "algo": "pqn",
    "num_envs": 128,
    "algo.num_steps": 32,
    "algo.num_minibatches": 32,
    "algo.update_epochs": 2,
    "algo.lr": 5e-4,
    "algo.anneal_lr": True,
    "algo.q_lambda": 0.65,
    "algo.epsilon_decay": 0.1,
    "algo.network": "cnn",
    "algo.channels": [16],
    "algo.hidden": [128],
}


def first_reaching(rows: list[dict[str, str]], column: str, level: float) -> int | None:
    """The env steps of the first metrics row whose `column` is at least `level` (None: never)."""
    for r in rows:
        if r.get(column) not in (None, "") and float(r[column]) >= level:
            return int(float(r["env_steps"]))
    return None


def last_logged(rows: list[tuple[float, float]], seconds: float) -> float | None:
    """The last figure of (wall-clock, figure) rows logged by `seconds`, skipping NaN (a chunk in which
    no world episode ended: the grid's are 256 steps long)."""
    seen = [v for w, v in rows if w <= seconds and not math.isnan(v)]
    return seen[-1] if seen else None


def num(x: float | None, digits: int = 1) -> str:
    """A figure for the report; a run too short for one finished episode has none."""
    return "n/a" if x is None else f"{x:.{digits}f}"


def grid_row(label: str, world: dict[str, Any], episodes: int, total: float, extra: dict[str, Any]) -> dict[str, Any]:
    """One PPO run on the 8-agent grid, evaluated greedily, with its (wall-clock, world return) rows."""
    s, rows, _, figures = evaluated_run(world, episodes, total_timesteps=total, **extra)
    row = {"network": label, "env_steps": s["env_steps_per_seed"], "wall_s": s["wall_s"], "sps": s["sps"]}
    row.update(final_world_return=s.get("final_world_return"), greedy_world_return=figures["return"]["mean"])
    row["rows"] = [(float(r["wall_s"]), float(r.get("world_return") or r["episode_return"])) for r in rows]
    return row


# What quick mode leaves to full mode, and why.
QUICK_SKIPS = (
    "PQN on CartPole-v1: full mode only (the seeds part trains it over several seeds)",
    "Snake and the grid, PQN against DQN: full mode only (they learn in their shipped budgets, not in 2e5-5e5 steps)",
    "Snake PPO with a GRU of 64 after [128]: full mode only (the 128-unit GRU's code at another width)",
    "grid, the CNN for the GRU run's wall-clock: full mode only",
)


def run(ctx: Context) -> dict[str, Any]:
    seeds = ctx.pick(1, 2, 4)
    episodes = ctx.pick(2, 5, 100)
    quick = ctx.mode == "quick"
    out: dict[str, Any] = {"memory_chain": memory_chain(ctx, seeds)}
    for line in QUICK_SKIPS if quick else ():
        ctx.skip(line)
    if not quick:
        out["pqn_cartpole"] = pqn_cartpole(ctx, seeds)
        out["snake"] = q_learners(ctx, "snake", episodes)
    out["recurrent_sps"] = recurrent_sps(ctx)
    out["grid"] = grid_runs(ctx, episodes)
    if not quick:
        out["q_grid"] = q_learners(ctx, "grid", episodes)
    out["minatar"] = minatar(ctx)
    out["headlines"] = headlines(out)
    return out


def memory_chain(ctx: Context, seeds: int) -> list[dict[str, Any]]:
    """MemoryChain-bsuite with the shipped GRU config and with a feed-forward network."""
    memory = []
    for label, extra in (("gru", {}), ("mlp", {"algo.network": "mlp"})):
        total = ctx.pick(4096, 2e5, None)
        length = {} if total is None else {"total_timesteps": total}
        s, rows, _ = whole_run("MemoryChain-bsuite", num_seeds=seeds, **length, **extra)
        row = {"network": label, "per_seed": s["final_return_per_seed"], "mean": s["final_return"]}
        row.update(env_steps=s["env_steps_per_seed"], wall_s=s["wall_s"], sps=s["sps"])
        row["reached_0.9"] = first_reaching(rows, "episode_return", 0.9)
        memory.append(row)
        ctx.say(f"MemoryChain {label}: mean {row['mean']:.2f} over {seeds} seeds, {row['wall_s']:.0f} s")
    return memory


def pqn_cartpole(ctx: Context, seeds: int) -> dict[str, Any]:
    total = ctx.pick(4096, 2.5e5, None)
    s, rows, _ = whole_run(
        "CartPole-v1", algo="pqn", num_seeds=seeds, **({} if total is None else {"total_timesteps": total})
    )
    out = {"per_seed": s["final_return_per_seed"], "mean": s["final_return"], "wall_s": s["wall_s"]}
    out.update(env_steps=s["env_steps_per_seed"], sps=s["sps"])
    ctx.say(f"PQN CartPole: mean {s['final_return']:.1f} over {seeds} seeds in {s['wall_s']:.0f} s")
    return out


def q_learners(ctx: Context, env: str, episodes: int) -> list[dict[str, Any]]:
    """DQN and PQN with their shipped configs on Snake or the grid (seed 0), evaluated greedily."""
    snake = env == "snake"
    rows = []
    for algo in ("dqn", "pqn"):
        total = ctx.pick(8192, 5e5, None) if snake else ctx.pick(8192, 2e5, None)
        length = {} if total is None else {"total_timesteps": total}
        if algo == "dqn" and total is not None:  # learning starts within the shortened run
            length["algo.learning_starts"] = min(20_000 if snake else 10_000, int(total) // 4)
        s, _, _, figures = evaluated_run(env, episodes, algo=algo, **length)
        row = {"algo": algo, "env_steps": s["env_steps_per_seed"], "wall_s": s["wall_s"], "sps": s["sps"]}
        if snake:
            row.update(final_score=s.get("final_score"), greedy_score=figures["score"]["mean"])
            ctx.say(
                f"Snake {algo}: score {num(row['final_score'], 2)} (greedy {row['greedy_score']:.2f})"
                f" in {row['wall_s']:.0f} s, {fmt_rate(row['sps'])} steps/s"
            )
        else:
            row.update(final_return=s.get("final_return"), greedy_return=figures["return"]["mean"])
            ctx.say(
                f"grid {algo}: greedy {row['greedy_return']:.1f} in {row['wall_s']:.0f} s,"
                f" {fmt_rate(row['sps'])} steps/s"
            )
        rows.append(row)
    return rows


def recurrent_sps(ctx: Context) -> list[dict[str, Any]]:
    """PPO steps/s on the default Snake config, feed-forward and with a GRU (quick and smoke: one width)."""
    target = ctx.pick(2_000, 100_000, 1_000_000)
    rates = []
    networks = [
        ("feed-forward (default)", []),
        ("gru 128 after [128]", ["algo.network=gru", "algo.hidden=[128]", "algo.rnn_hidden=128"]),
        ("gru 64 after [128]", ["algo.network=gru", "algo.hidden=[128]", "algo.rnn_hidden=64"]),
    ]
    for label, extra in networks[: ctx.pick(2, 2, 3)]:  # the 64-unit GRU is the same code at another width
        row = {"network": label, **program_sps(["env=snake", *extra], target)}
        rates.append(row)
        ctx.say(f"Snake PPO {label}: {fmt_rate(row['sps'])} steps/s")
    return rates


def grid_runs(ctx: Context, episodes: int) -> list[dict[str, Any]]:
    """The 8-agent grid (view 3): the CNN and the CNN with a GRU for the same steps, and in full mode the
    CNN again for the GRU run's wall-clock."""
    grid = []
    total = ctx.pick(1024, 2.5e4, 3e5)
    # smoke: 4 worlds, not 256, so that one 256-step episode ends within the run at a 64th of the work
    worlds = ctx.pick({"num_envs": 4}, {}, {})
    world = {"name": "grid", "num_agents": 8, "view": 3}
    for label, extra in (("cnn", {}), ("cnn + gru", GRU_GRID)):
        grid.append(grid_row(label, world, episodes, total, {**extra, **worlds}))
        row = grid[-1]
        ctx.say(f"grid 8 agents view 3, {label}: greedy {row['greedy_world_return']:.1f} in {row['wall_s']:.0f} s")
    cnn_wall = grid[0]["wall_s"]
    grid[1]["world_return_at_cnn_wall"] = last_logged(grid[1]["rows"], cnn_wall)
    if ctx.mode == "quick":
        return grid
    # The CNN again, for as many steps as fit in the GRU run's wall-clock (scaled by the two runs' times),
    # and never fewer than the first run's: in a tiny smoke run the GRU can finish first, and fewer steps
    # could fall below one update.
    longer = max(int(total), int(total * grid[1]["wall_s"] / cnn_wall))
    if ctx.mode == "smoke":  # the first run's steps: its row again, not the same run a second time
        longer = int(total)
        grid.append({**grid[0], "network": "cnn, the GRU's wall-clock"})
    else:
        grid.append(grid_row("cnn, the GRU's wall-clock", world, episodes, longer, worlds))
    ctx.say(
        f"grid 8 agents view 3, cnn for {longer:,} steps: greedy {grid[2]['greedy_world_return']:.1f}"
        f" in {grid[2]['wall_s']:.0f} s"
    )
    return grid


def minatar(ctx: Context) -> dict[str, Any]:
    total = ctx.pick(4096, 2.5e4, 2e6)
    s, _, _ = whole_run("Breakout-MinAtar", **MINATAR, total_timesteps=total)
    ctx.say(
        f"PQN Breakout-MinAtar: {num(s['final_return'])} at {s['env_steps_per_seed']:,} steps in {s['wall_s']:.0f} s"
    )
    keys = {"env_steps": "env_steps_per_seed", "wall_s": "wall_s", "sps": "sps", "final_return": "final_return"}
    return {k: s[v] for k, v in keys.items()}


def headlines(out: dict[str, Any]) -> list[dict[str, str]]:
    """The part's headline figures; a piece quick mode left out has no line."""
    gru, mlp = out["memory_chain"]
    ff, *recurrent = out["recurrent_sps"]
    cnn, rnn, *longer = out["grid"]
    lines = [
        {
            "what": "MemoryChain-bsuite, PPO + GRU against feed-forward",
            "figure": f"{gru['mean']:.2f} against {mlp['mean']:.2f} at {gru['env_steps']:,.0f} steps",
        }
    ]
    if "pqn_cartpole" in out:
        c = out["pqn_cartpole"]
        lines.append({"what": "PQN on CartPole-v1", "figure": f"{c['mean']:.1f} at {c['env_steps']:,.0f} steps"})
    if "snake" in out:
        figure = pqn_against_dqn(out["snake"], lambda r: f"score {num(r['final_score'])}")
        lines.append({"what": "Snake, PQN against DQN (shipped configs)", "figure": figure})
    lines.append(
        {
            "what": "Snake PPO steps/s, recurrent over feed-forward",
            "figure": ", ".join(f"{r['network']} {r['sps'] / ff['sps']:.2f}x" for r in recurrent),
        }
    )
    grid = (
        f"{rnn['greedy_world_return']:.1f} in {rnn['wall_s']:.0f} s"
        f" against {cnn['greedy_world_return']:.1f} in {cnn['wall_s']:.0f} s (same steps)"
    )
    for r in longer:
        grid += f" and {r['greedy_world_return']:.1f} in {r['wall_s']:.0f} s ({r['env_steps']:,} steps)"
    lines.append({"what": "grid, 8 agents, view 3: greedy world return, CNN + GRU against CNN", "figure": grid})
    if "q_grid" in out:
        figure = pqn_against_dqn(out["q_grid"], lambda r: f"{r['greedy_return']:.1f}")
        lines.append({"what": "grid, PQN against DQN (shipped configs): greedy return", "figure": figure})
    return lines


def pqn_against_dqn(rows: list[dict[str, Any]], figure: Callable[[dict[str, Any]], str]) -> str:
    """PQN's figure, wall-clock and steps/s against DQN's, from `q_learners` rows."""
    by = {r["algo"]: r for r in rows}
    side = lambda r: f"{figure(r)} in {r['wall_s']:.0f} s ({fmt_rate(r['sps'])}/s)"
    return f"{side(by['pqn'])} against {side(by['dqn'])}"


def report(result: dict[str, Any]) -> str:
    md = ["MemoryChain-bsuite (training return per seed, shipped config):", ""]
    md += [
        "| network | env steps | per seed | mean | mean first >= 0.9 at | wall-clock s |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["memory_chain"]:
        seeds = ", ".join(f"{v:.2f}" for v in r["per_seed"])
        md.append(
            f"| {r['network']} | {r['env_steps']:,} | {seeds} | {r['mean']:.2f} |"
            f" {r['reached_0.9'] or 'never'} | {r['wall_s']:.0f} |"
        )
    if "pqn_cartpole" in result:  # quick mode leaves it to the seeds part
        c = result["pqn_cartpole"]
        md += [
            "",
            (
                f"PQN on CartPole-v1: {', '.join(f'{v:.1f}' for v in c['per_seed'])} (mean {c['mean']:.1f})"
                f" at {c['env_steps']:,} steps, {c['wall_s']:.0f} s."
            ),
        ]
    if "snake" in result:
        md += [
            "",
            "Snake, shipped configs, seed 0:",
            "",
            "| algo | env steps | wall-clock s | steps/s | final score | greedy score |",
            "|---|---|---|---|---|---|",
        ]
        for r in result["snake"]:
            md.append(
                f"| {r['algo']} | {r['env_steps']:,} | {r['wall_s']:.0f} | {fmt_rate(r['sps'])} |"
                f" {num(r['final_score'], 2)} | {r['greedy_score']:.2f} |"
            )
    ff = result["recurrent_sps"][0]["sps"]
    md += [
        "",
        "PPO steps/s on the default Snake config:",
        "",
        "| network | steps/s | over feed-forward |",
        "|---|---|---|",
    ]
    for r in result["recurrent_sps"]:
        md.append(f"| {r['network']} | {fmt_rate(r['sps'])} | {r['sps'] / ff:.2f}x |")
    md += [
        "",
        "Grid world, 8 agents, view 3 (PPO):",
        "",
        "| network | env steps | wall-clock s | steps/s | final world return | greedy world return |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["grid"]:
        md.append(
            f"| {r['network']} | {r['env_steps']:,} | {r['wall_s']:.0f} | {fmt_rate(r['sps'])} |"
            f" {num(r['final_world_return'])} | {r['greedy_world_return']:.1f} |"
        )
    at = result["grid"][1].get("world_return_at_cnn_wall")
    if at is not None:
        md.append(f"\nThe GRU run's training world return at the CNN run's wall-clock: {at:.1f}.")
    if "q_grid" in result:
        md += [
            "",
            "Grid world, 1 agent, shipped configs, seed 0:",
            "",
            "| algo | env steps | wall-clock s | steps/s | final return | greedy return |",
            "|---|---|---|---|---|---|",
        ]
        for r in result["q_grid"]:
            md.append(
                f"| {r['algo']} | {r['env_steps']:,} | {r['wall_s']:.0f} | {fmt_rate(r['sps'])} |"
                f" {num(r['final_return'], 2)} | {r['greedy_return']:.2f} |"
            )
    m = result["minatar"]
    md += [
        "",
        (
            f"PQN on Breakout-MinAtar (purejaxql's MinAtar settings): {num(m['final_return'])}"
            f" at {m['env_steps']:,} steps in {m['wall_s']:.0f} s ({fmt_rate(m['sps'])} steps/s)."
        ),
    ]
    return "\n".join(md)
