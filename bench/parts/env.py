"""Env-only steps/s against num_envs: Snake beside Jumanji's Snake, the grid world (1 agent beside
navix and xminigrid Empty-8x8; 8 agents in agent-steps/s) and gymnax CartPole-v1.

Every env is stepped by the same harness (below): random actions drawn in one threefry call,
auto-reset, and the observation consumed (summed into the scan's output, or XLA would drop the
work). Each size compiles each env apart (compile seconds kept), then the envs of a size take
turns in timed calls (best of `repeats`). A size an env runs out of memory on ends that env's
sweep.

The harness consumes every env's observations the same way, `consume`: summed over the env axis
first (one vectorized pass over the batch), then over the cells. Each env is stepped the way its
own API is meant to be used: ours through gymnax's `step` with one key per env per step, drawn
with the actions in one `jax.random.bits` call; Jumanji's through its `VmapAutoResetWrapper` (it
keeps its keys in its state), with actions drawn the same way. navix and xminigrid run empty
rooms (ours also simulates walls, resources and regrowth).

On its own, one table, saved as JSON under bench-results/ (or `--out`):

    python -m bench.parts.env [--sizes 1 64 1024 4096 16384] [--steps 200] [--board 10]
    python -m bench.parts.env --env grid [--board 8] [--agents 1 8] [--repeats 3]

Snake beside Jumanji's; `--env grid`: the grid world (1 agent, and agent-steps/s with `--agents`)
beside navix `Navix-Empty-8x8-v0` and xminigrid `MiniGrid-Empty-8x8`, and beside each agent count a
floor: the same harness around a step that only writes that many agents' observations
(`obs_floor_grid`), so the table splits every step into floor and simulation. (This command was
`python -m bench.env_throughput`.)
"""

from __future__ import annotations

import argparse
import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from jaxrl import envs
from jaxrl.bench import RESULTS, machine
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
from jaxrl.envs.grid import materialize

NAME = "env"
TITLE = "Env-only steps/s against num_envs"


# -- The harness: `steps` vector steps of `n` envs of each kind, one jitted call of a key --------------


def consume(obs: jax.Array) -> jax.Array:
    """A scalar that reads every element of a batch of observations (sum over envs, then cells)."""
    return obs.sum(axis=0, dtype=obs.dtype).sum(dtype=jnp.float32)


def actions_and_keys(key: jax.Array, n: int, num_actions: int = 4) -> tuple[jax.Array, jax.Array]:
    """n random actions and n independent PRNG keys from one threefry draw."""
    bits = jax.random.bits(key, (n, 3), jnp.uint32)
    actions = (bits[:, 2] % num_actions).astype(jnp.int32)
    return actions, jax.random.wrap_key_data(bits[:, :2])


def jaxrl_snake(board: int, n: int, steps: int):
    env, params = envs.make("snake", size=board)

    def run(key):
        _obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, n), params)

        def body(carry, key):
            state, acc = carry
            actions, keys = actions_and_keys(key, n)
            obs, state, reward, _, _, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(keys, state, actions, params)
            return (state, acc + consume(obs) + reward.sum()), None

        (_, acc), _ = jax.lax.scan(body, (state, jnp.float32(0)), jax.random.split(key, steps))
        return acc

    return jax.jit(run)


def jumanji_snake(board: int, n: int, steps: int):
    import jumanji
    from jumanji.wrappers import VmapAutoResetWrapper

    env = VmapAutoResetWrapper(jumanji.make("Snake-v1", num_rows=board, num_cols=board))

    def run(key):
        state, _ = env.reset(jax.random.split(key, n))

        def body(carry, key):
            state, acc = carry
            actions, _ = actions_and_keys(key, n)
            state, ts = env.step(state, actions)
            return (state, acc + consume(ts.observation.grid) + ts.reward.sum()), None

        (_, acc), _ = jax.lax.scan(body, (state, jnp.float32(0)), jax.random.split(key, steps))
        return acc

    return jax.jit(run)


def grid_actions(key: jax.Array, n: int, num_agents: int, num_actions: int) -> tuple[jax.Array, jax.Array]:
    """(n, num_agents) random actions and n PRNG keys from one threefry draw: one random byte
    per agent, so 8 agents draw 4 words per world and 1 agent 3."""
    bits = jax.random.bits(key, (n, 2 + -(-num_agents // 4)), jnp.uint32)
    lanes = jax.lax.bitcast_convert_type(bits[:, 2:], jnp.uint8).reshape(n, -1)[:, :num_agents]
    return (lanes % num_actions).astype(jnp.int32), jax.random.wrap_key_data(bits[:, :2])


def jaxrl_grid(board: int, n: int, steps: int, num_agents: int = 1):
    env, params = envs.make("grid", size=board, num_agents=num_agents)

    def run(key):
        _obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, n), params)

        def body(carry, key):
            state, acc = carry
            actions, keys = grid_actions(key, n, num_agents, env.num_actions)
            actions = actions[:, 0] if num_agents == 1 else actions
            obs, state, reward, _, _, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(keys, state, actions, params)
            return (state, acc + consume(obs) + reward.sum()), None

        (_, acc), _ = jax.lax.scan(body, (state, jnp.float32(0)), jax.random.split(key, steps))
        return acc

    return jax.jit(run)


def obs_floor_grid(board: int, n: int, steps: int, num_agents: int):
    """The harness of `jaxrl_grid` around no simulation: each step only writes the grid's
    (num_agents, view, view, 4) observation, through the grid's own `expand_view_words`, from
    view-row words that depend on the actions (so nothing can be hoisted out of the loop).

    What is left to the grid step is its figure minus this one: the 4x target for 8 agents asks
    the whole 8-agent step to cost at most twice the single-agent step, and this floor alone
    takes part of that budget.
    """
    env, _ = envs.make("grid", size=board, num_agents=num_agents)
    mask = jnp.uint32(((1 << env.view) - 1) * 0x010101)  # the view's lanes of walls, resources and agents

    def null_step(t, actions):
        t = t + actions.sum() + 1
        words = materialize((t.astype(jnp.uint32) + jnp.arange(num_agents * env.view, dtype=jnp.uint32)) & mask)
        return env.expand_view_words(words.reshape(num_agents, env.view)), t

    def run(key):
        def body(carry, key):
            t, acc = carry
            actions, _keys = grid_actions(
                key, n, num_agents, env.num_actions
            )  # the keys drawn for the grid's step go unused
            obs, t = jax.vmap(null_step)(t, actions)
            return (t, acc + consume(obs)), None

        (_, acc), _ = jax.lax.scan(body, (jnp.zeros(n, jnp.int32), jnp.float32(0)), jax.random.split(key, steps))
        return acc

    return jax.jit(run)


def navix_empty(board: int, n: int, steps: int):
    import navix

    env = navix.make(f"Navix-Empty-{board}x{board}-v0")  # auto-resets inside step

    def run(key):
        timestep = jax.vmap(env.reset)(jax.random.split(key, n))

        def body(carry, key):
            timestep, acc = carry
            actions, _ = actions_and_keys(key, n, 3)
            timestep = jax.vmap(env.step)(timestep, actions)
            return (timestep, acc + consume(timestep.observation) + timestep.reward.sum()), None

        (_, acc), _ = jax.lax.scan(body, (timestep, jnp.float32(0)), jax.random.split(key, steps))
        return acc

    return jax.jit(run)


def xminigrid_empty(board: int, n: int, steps: int):
    import xminigrid
    from xminigrid.wrappers import GymAutoResetWrapper

    env, params = xminigrid.make(f"MiniGrid-Empty-{board}x{board}")
    env = GymAutoResetWrapper(env)

    def run(key):
        timestep = jax.vmap(env.reset, in_axes=(None, 0))(params, jax.random.split(key, n))

        def body(carry, key):
            timestep, acc = carry
            actions, _ = actions_and_keys(key, n, 3)
            timestep = jax.vmap(env.step, in_axes=(None, 0, 0))(params, timestep, actions)
            return (timestep, acc + consume(timestep.observation) + timestep.reward.sum()), None

        (_, acc), _ = jax.lax.scan(body, (timestep, jnp.float32(0)), jax.random.split(key, steps))
        return acc

    return jax.jit(run)


def gymnax_env(name: str, n: int, steps: int, **settings: Any):
    """Any registered env or gymnax id (CartPole-v1, ...) with its constructor settings, through `envs.make`,
    stepped like ours with uniform random actions."""
    env, params = envs.make(name, **settings)
    num_actions = env.action_space(params).n

    def run(key):
        _obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, n), params)

        def body(carry, key):
            state, acc = carry
            actions, keys = actions_and_keys(key, n, num_actions)
            obs, state, reward, _, _, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(keys, state, actions, params)
            return (state, acc + consume(obs) + reward.sum()), None

        (_, acc), _ = jax.lax.scan(body, (state, jnp.float32(0)), jax.random.split(key, steps))
        return acc

    return jax.jit(run)


def suites() -> list[dict[str, Any]]:
    """Each suite: our env and its peers, as builders (n, steps) -> jitted run(key)."""
    return [
        {
            "id": "snake",
            "title": "Snake 10x10",
            "agents": 1,
            "ours": {"jaxrl": lambda n, s: jaxrl_snake(10, n, s)},
            "peers": {"jumanji Snake-v1": ("jumanji", lambda n, s: jumanji_snake(10, n, s))},
        },
        {
            "id": "grid1",
            "title": "Grid world 8x8, 1 agent",
            "agents": 1,
            "ours": {"jaxrl": lambda n, s: jaxrl_grid(8, n, s, 1)},
            "peers": {
                "navix Empty-8x8": ("navix", lambda n, s: navix_empty(8, n, s)),
                "xminigrid Empty-8x8": ("xminigrid", lambda n, s: xminigrid_empty(8, n, s)),
            },
        },
        {
            "id": "grid8",
            "title": "Grid world 8x8, 8 agents (agent-steps/s)",
            "agents": 8,
            "ours": {"jaxrl": lambda n, s: jaxrl_grid(8, n, s, 8)},
            "peers": {},
        },
        {
            "id": "cartpole",
            "title": "CartPole-v1 (gymnax)",
            "agents": 1,
            "ours": {"gymnax": lambda n, s: gymnax_env("CartPole-v1", n, s)},
            "peers": {},
        },
    ]


def run(ctx: Context) -> dict[str, Any]:
    sizes = ctx.pick(
        [4],
        [1, 4096],  # quick: one env (per-step overhead) and a batch that fills a CPU
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


# -- On its own: python -m bench.parts.env [--env grid] ----------------------------------------------


def measure(fns: dict, n: int, steps: int, repeats: int = 3) -> dict[str, float]:
    """Best-of-`repeats` env steps per second of each compiled run, compile excluded (`best_times`: the runs
    take turns, so a slow spell of a shared machine hits all of them alike)."""
    calls = {name: (lambda i, fn=fn: fn(jax.random.key(i))) for name, fn in fns.items()}
    return {name: n * steps / seconds for name, seconds in best_times(calls, repeats).items()}


def snake_table(args) -> list[dict]:
    try:
        import jumanji  # noqa: F401

        peers = {"jumanji": jumanji_snake}
    except ImportError:
        print("jumanji not installed (pip install '.[bench]'): measuring ours only")
        peers = {}
    rows = []
    print(f"Snake {args.board}x{args.board}, env steps/s (observation consumed)")
    print(f"{'n_envs':>8} {'jaxrl':>14} " + " ".join(f"{p:>14}" for p in peers) + "   ratio")
    for n in args.sizes:
        steps = args.steps if n >= 64 else args.steps * 10
        runs = {"jaxrl": jaxrl_snake(args.board, n, steps)} | {
            p: make(args.board, n, steps) for p, make in peers.items()
        }
        row = {"n_envs": n, **measure(runs, n, steps, args.repeats)}
        ratio = row["jaxrl"] / row["jumanji"] if "jumanji" in row else float("nan")
        row["ratio_vs_jumanji"] = ratio
        rows.append(row)
        print(f"{n:>8} {row['jaxrl']:>14,.0f} " + " ".join(f"{row[p]:>14,.0f}" for p in peers) + f"   {ratio:.2f}x")
    return rows


def grid_table(args) -> list[dict]:
    peers = {}
    for name, module, make in (("navix", "navix", navix_empty), ("xminigrid", "xminigrid", xminigrid_empty)):
        try:
            __import__(module)
            peers[name] = make
        except ImportError:
            print(f"{module} not installed (pip install '.[bench]'): skipped")
    rows = []
    print(f"Grid {args.board}x{args.board}, world steps/s and agent-steps/s (observation consumed)")
    for n in args.sizes:
        steps = args.steps if n >= 64 else args.steps * 10
        runs = {f"jaxrl_{k}_agents": jaxrl_grid(args.board, n, steps, k) for k in args.agents}
        runs |= {f"obs_floor_{k}_agents": obs_floor_grid(args.board, n, steps, k) for k in args.agents}
        runs |= {p: make(args.board, n, steps) for p, make in peers.items()}
        row: dict = {"n_envs": n, **measure(runs, n, steps, args.repeats)}
        for k in args.agents:
            row[f"jaxrl_{k}_agents_agent_sps"] = row[f"jaxrl_{k}_agents"] * k
        rows.append(row)
        ours_line = " ".join(
            f"jaxrl {k} agent(s) {row[f'jaxrl_{k}_agents']:,.0f}"
            f" ({row[f'jaxrl_{k}_agents_agent_sps']:,.0f} agent-steps/s)"
            for k in args.agents
        )
        print(f"{n:>8} envs: {ours_line} | " + " | ".join(f"{p} {row[p]:,.0f}" for p in peers), flush=True)
        # Milliseconds per step of n worlds: the whole step, and the floor (harness and observation
        # write alone); their difference is the simulation and the view.
        ms = {k: (1e3 * n / row[f"jaxrl_{k}_agents"], 1e3 * n / row[f"obs_floor_{k}_agents"]) for k in args.agents}
        for k, (step, floor) in ms.items():
            print(
                f"{'':>8} {k} agent(s): {step:.3f} ms per step of {n} worlds"
                f" = floor {floor:.3f} + simulation {step - floor:.3f}"
            )
        for k in (k for k in args.agents if k > 1 and 1 in args.agents):
            row[f"jaxrl_{k}_agents_ratio"] = row[f"jaxrl_{k}_agents_agent_sps"] / row["jaxrl_1_agents"]
            line = f"{'':>8} {k} agents: {row[f'jaxrl_{k}_agents_ratio']:.2f}x the single-agent agent-steps/s"
            if k == 8:  # the target: 8 agents at 4x, i.e. an 8-agent step costing 2 single-agent steps
                budget = 2 * ms[1][0] - ms[k][1]
                line += (
                    f"; 4x would leave {budget:.3f} ms for their simulation (1 agent's: {ms[1][0] - ms[1][1]:.3f} ms)"
                )
            print(line, flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog=f"python -m {__spec__.name}" if __spec__ else None,
        description="Env-only steps/s of our envs beside peer JAX envs, same board, same batch, same run.",
    )
    parser.add_argument("--env", default="snake", choices=["snake", "grid"])
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="n_envs values")
    parser.add_argument("--steps", type=int, default=200, help="scan length per timed call")
    parser.add_argument("--board", type=int, default=None, help="board side (snake 10, grid 8)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per figure (the best one counts)")
    parser.add_argument("--agents", type=int, nargs="+", default=[1, 8], help="agents per grid world")
    parser.add_argument("--out", default=None, help=f"default {RESULTS}/env_throughput[_grid].json")
    args = parser.parse_args(argv)
    args.board = args.board or (10 if args.env == "snake" else 8)
    args.sizes = args.sizes or ([1, 64, 1024, 4096, 16384] if args.env == "snake" else [1024, 4096])
    rows = snake_table(args) if args.env == "snake" else grid_table(args)
    result = {
        "benchmark": "env_throughput",
        "env": args.env,
        "board": args.board,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine.describe(),
        "rows": rows,
    }
    out = Path(args.out or f"{RESULTS}/env_throughput{'' if args.env == 'snake' else '_grid'}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {out}")


if __name__ == "__main__":
    main()
