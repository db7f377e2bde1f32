"""The arena: env-only snake-steps/s against num_envs beside Snake alone, the bots against each other, and PPO.

- Env only (the harness of `bench.parts.env`: random learner actions, auto-reset, the observation
  consumed): the 4-snake 11x11 arena with 3 greedy bots and with 4 learners and no bots, 32 snakes
  on 19x19 (31 greedy bots), and jaxrl's Snake alone at the same num_envs, twice: on 11x11 with the
  turned view and relative actions (as the arena's learner plays), and with its defaults (10x10,
  the whole board as it lies, absolute moves: its fastest). A snake-step is one snake of a game
  moving once: a game step of the 4-snake arena is 4 snake-steps. The headline is the arena's
  snake-steps/s over each Snake's steps/s, each at its best num_envs.
- Bots: each kind in the first seat against 3 of each kind, 4 snakes on 11x11, a game ending when the
  first seat dies (as a learner's does): its win rate (last snake standing), mean placement and length.
- PPO: steps/s of the shipped `env=arena` config (one compiled chunk, after compile).
- Self-play: the same config with `opponents=selfplay` (a pool of 8, the first snapshot after update 1,
  timed after 8 updates so that nearly every game plays the pool), beside bots-only training measured
  right before it, and where a self-play step's time goes at the config's num_envs: the env step with
  the bots against the env step with given opponents, the opponents' views, their forward pass through
  the pool's segments, and one forward pass shared by all (the floor no per-game choice can beat).
- League: the league recipe (`experiment=arena_league`: half the worlds play scripted kinds drawn per game,
  half a pool of 8) beside the self-play recipe it extends, measured side by side, and one vector step of
  each scripted kind's moves at the recipe's num_envs.
- PufferLib's configuration: `env=arena_open` (envs/arena_open.py) on PufferLib Snake's default map per
  world (640x360, 256 snakes, 4096 food, an 11x11 crop: its vision 5), env only against the number of
  worlds, under both rule sets (Battlesnake's, and PufferLib's own: `env.rules=pufferlib`,
  envs/arena_puffer.py), beside PufferLib's own C Snake measured in the same run: its `snake.h` from
  the pufferlib 3.0.0 sdist on PyPI (downloaded once into ~/.cache/jaxrl, its sha256 checked; or at
  $JAXRL_PUFFERLIB_SNAKE) inside the project's timing harness (bench/peers/pufferlib_snake.py), built with
  `cc -O3 -march=native` and run as one process per core at once (the whole machine). jaxrl is one
  process on every core, measured on one XLA device and on one XLA CPU device per core (a process of its
  own with JAX_NUM_CPU_DEVICES, each device stepping its own worlds under shard_map). Without the source
  (offline, a wrong checksum, no C compiler) it says so in one line and goes on.
  The harnesses match: random actions from a cache of 1024 steps, every observation read.
- PPO on the open arena at PufferLib's defaults, both rule sets: training snake-steps/s beside env only,
  and per core beside PufferLib's published training figure (theirs, labelled as such).

On its own: python -m bench.parts.arena [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl import envs
from jaxrl.bench import RESULTS, machine
from jaxrl.bench.common import Context, best_times, compile_timed, fmt_rate, fmt_ratio, log_axes, save_figure
from jaxrl.bench.parts.env import consume, gymnax_env
from jaxrl.envs.base import hook, table_params

NAME = "arena"
TITLE = "Arena: snake-steps/s beside Snake alone, bots against bots, PPO"
PUFFERLIB_PUBLISHED = "over 10M env steps/s per CPU core (PufferLib's own figure for its C Snake, on its machine)"
PUFFERLIB_TRAINING = 235.7e3  # PufferLib's published Snake training steps/s: an M4 Mac mini, 10 cores (PR #318)
PUFFERLIB_TRAINING_CORES = 10
PUFFERLIB_MISSING = "PufferLib source not available"
RULES = ("battlesnake", "pufferlib")
KINDS = ("greedy", "space", "lookahead", "random_safe")


ACTION_CACHE = 1024  # steps of random actions drawn before the timed loop (as PufferLib's harness caches them)


def world_run(name: str, n: int, steps: int, **settings: Any):
    """`steps` vector steps of `n` games of env `name` (arena or arena_open) with random actions for its
    learners (every snake of the open arena), observations consumed. The actions come from a cache of
    `ACTION_CACHE` steps drawn before the loop, as PufferLib's harness does, so that drawing them is not timed
    as the env's work."""
    env, params = envs.make(name, **settings)
    return env_run(env, params, n, steps)


def env_run(env: Any, params: Any, n: int, steps: int):
    """`world_run` for an env object (the arena of another version of its rules, beside this one)."""
    agents = env.num_agents

    def run(key):
        _obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, n), params)
        cache = jax.random.randint(jax.random.fold_in(key, 1), (ACTION_CACHE, n, agents), 0, env.num_actions)
        cache = cache if agents > 1 else cache[..., 0]

        def body(carry, t):
            state, acc = carry
            keys = jax.random.split(jax.random.fold_in(key, t), n)
            obs, state, reward, _, _, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                keys, state, cache[t % ACTION_CACHE], params
            )
            return (state, acc + consume(obs) + reward.sum()), None

        (_, acc), _ = jax.lax.scan(body, (state, jnp.float32(0)), jnp.arange(steps))
        return acc

    return jax.jit(run)


def cores_run(name: str, per_device: int, steps: int, **settings: Any):
    """`world_run` on every device jax has (one XLA CPU device per core: JAX_NUM_CPU_DEVICES), `per_device`
    worlds each: each device steps its own worlds with its own keys, nothing passes between them (shard_map)."""
    from jax.sharding import Mesh, PartitionSpec

    devices = jax.devices()
    inner = world_run(name, per_device, steps, **settings)
    mesh = Mesh(np.array(devices), ("worlds",))
    specs = {"mesh": mesh, "in_specs": PartitionSpec("worlds"), "out_specs": PartitionSpec("worlds")}
    if hasattr(jax, "shard_map"):
        local = jax.shard_map(lambda keys: inner(keys[0])[None], **specs, check_vma=False)
    else:  # jax before 0.7
        from jax.experimental.shard_map import shard_map

        local = shard_map(lambda keys: inner(keys[0])[None], **specs, check_rep=False)
    return jax.jit(lambda key: local(jax.random.split(key, len(devices))).sum())


def cores_worker(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The open arena's rows on every core, in a process started with JAX_NUM_CPU_DEVICES=cores (see
    `open_on_cores`): for each rule set and worlds per device, snake-steps/s over all devices."""
    cores = len(jax.devices())
    steps, settings = job["steps"], job["settings"]
    return [
        open_row(cores_run("arena_open", per, steps, rules=rules, **settings), rules, cores * per, cores, job, cores)
        for rules in job["rules"]
        for per in job["per_device"]
    ]


def open_row(run, rules: str, worlds: int, devices: int, job: dict[str, Any], cores: int) -> dict[str, Any]:
    """One row of the open arena's table: `run` (a jitted call of `job["steps"]` steps of `worlds` worlds on
    `devices` devices) compiled, then timed best of `job["repeats"]`."""
    fn, compile_s = compile_timed(run, jax.random.key(0))
    seconds = best_times({"open": lambda i: fn(jax.random.key(i))}, job["repeats"])["open"]
    rate = worlds * job["steps"] * job["settings"]["num_snakes"] / seconds
    return {
        "rules": rules,
        "worlds": worlds,
        "devices": devices,
        "steps_per_call": job["steps"],
        "snake_sps": rate,
        "per_core": rate / cores,
        "compile_s": compile_s,
        "settings": job["settings"],
        "cores": cores,
    }


def open_on_cores(ctx: Context, settings: dict[str, Any], steps: int, cores: int) -> list[dict[str, Any]]:
    """The open arena with one XLA CPU device per core (a process of its own: the device count is fixed when
    jax starts), `per_device` worlds on each; [] on one core or off the CPU."""
    import os
    import subprocess
    import sys

    if hasattr(os, "sched_getaffinity"):
        cores = min(cores, len(os.sched_getaffinity(0)))  # the cores this process may run on
    if cores < 2 or jax.default_backend() != "cpu":
        return []
    job = {
        "rules": list(RULES),
        "per_device": ctx.pick([1], [1, 2], [1, 2, 4, 8]),
        "steps": steps,
        "repeats": ctx.pick(1, 3, 3),
        "settings": settings,
    }
    env = {**os.environ, "JAX_NUM_CPU_DEVICES": str(cores), "JAX_PLATFORMS": "cpu"}
    cmd = [sys.executable, "-m", "jaxrl.bench.parts.arena", "--cores-worker", json.dumps(job)]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=3600)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        rows = json.loads(lines[-1])["rows"] if proc.returncode == 0 and lines else None
    except (subprocess.TimeoutExpired, ValueError, KeyError):
        proc, rows = None, None
    if rows is None:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1][:200] if proc else "no answer within an hour"
        ctx.skip(f"the open arena on {cores} CPU devices failed: {last}")
        return []
    for r in rows:
        ctx.say(
            f"open arena ({r['rules']}) on {r['devices']} CPU devices (one per core), {r['worlds']} worlds:"
            f" {fmt_rate(r['snake_sps'])} snake-steps/s ({fmt_rate(r['per_core'])} per core)"
        )
    return rows


def arena_run(n: int, steps: int, **settings: Any):
    return world_run("arena", n, steps, **settings)


RULES_BEFORE = "388c5a7"  # the last commit of arena-v1 (its rules before the engine's: issue 80)
RULES_CASES = (
    ("11x11, 1 learner + 3 greedy bots", {}),
    ("11x11, 4 learners", {"num_agents": 4}),
    ("19x19, 1 learner + 31 greedy bots", {"size": 19, "num_snakes": 32}),
)


def arena_before() -> type | None:
    """arena-v1's Arena class, from the repository's history (None outside a git checkout)."""
    import subprocess
    import types

    root = Path(__file__).resolve().parents[2]
    try:
        source = subprocess.run(
            ["git", "-C", str(root), "show", f"{RULES_BEFORE}:envs/arena.py"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    import sys

    module = types.ModuleType("jaxrl.envs._arena_v1")
    sys.modules[module.__name__] = module  # its dataclasses look their module up by name
    exec(compile(source, f"{RULES_BEFORE}:envs/arena.py", "exec"), module.__dict__)  # noqa: S102
    return module.Arena


def rules_speed(ctx: Context) -> dict[str, Any] | None:
    """Env-only snake-steps/s of arena-v1 (its rules before the engine's) and of this arena, side by side in one
    run: the same harness, sizes and num_envs, timed interleaved."""
    old = arena_before()
    if old is None:
        ctx.say(f"arena before/after: no git history here (needs commit {RULES_BEFORE}); skipped")
        return None
    n, steps, repeats = ctx.pick(16, 1024, 2048), ctx.pick(20, 100, 200), ctx.pick(1, 3, 5)
    rows = []
    for label, settings in RULES_CASES:
        calls, snakes = {}, settings.get("num_snakes", 4)
        for version, cls in (("v1", old), ("v2", envs.Arena)):
            env = cls(**settings)
            fn, _ = compile_timed(env_run(env, env.default_params, n, steps), jax.random.key(0))
            calls[version] = lambda i, fn=fn: fn(jax.random.key(i))
        seconds = best_times(calls, repeats)
        row = {"case": label, "n_envs": n, **{v: n * steps * snakes / seconds[v] for v in calls}}
        row["ratio"] = row["v2"] / row["v1"]
        ctx.say(f"arena {label}: v1 {fmt_rate(row['v1'])}, v2 {fmt_rate(row['v2'])} ({fmt_ratio(row['ratio'])})")
        rows.append(row)
    return {"before": RULES_BEFORE, "rows": rows}


PUFFERLIB_MAP = {"width": 640, "height": 360, "num_snakes": 256, "num_food": 4096, "view": 11}


def open_speed(ctx: Context) -> list[dict[str, Any]]:
    """The open arena on PufferLib's map (a small map in smoke runs) against the number of worlds, both rule sets."""
    settings = ctx.pick(
        {"width": 32, "height": 24, "num_snakes": 16, "num_food": 32, "view": 11}, PUFFERLIB_MAP, PUFFERLIB_MAP
    )
    worlds = ctx.pick([1], [2, 4], [1, 2, 4, 8, 16])
    steps = ctx.pick(20, 200, 500)
    cores = max(1, int(ctx.machine.get("cores") or 1))
    job = {"steps": steps, "settings": settings, "repeats": ctx.pick(1, 2, 3)}
    rows = []
    for rules in RULES:
        for n in worlds:
            rows.append(open_row(world_run("arena_open", n, steps, rules=rules, **settings), rules, n, 1, job, cores))
            ctx.say(
                f"open arena ({rules}) {settings['width']}x{settings['height']}, {settings['num_snakes']} snakes,"
                f" {n} worlds, one device: {fmt_rate(rows[-1]['snake_sps'])} snake-steps/s"
                f" ({fmt_rate(rows[-1]['per_core'])} per core)"
            )
    return rows + open_on_cores(ctx, settings, steps, cores)


def pufferlib_speed(ctx: Context) -> dict[str, Any]:
    """PufferLib's C Snake at its defaults (16 worlds of its map per process), one process per core at once:
    snake-steps/s in all (the sum) and per process, best of a few rounds, as `{"pufferlib_c": record}`. Where it
    cannot be measured (no source, no network, a wrong checksum, no C compiler): `{"pufferlib_c": None,
    "pufferlib_missing": why}`, said in one line. Smoke runs download nothing."""
    from jaxrl.bench.peers import pufferlib_snake

    cores = max(1, int(ctx.machine.get("cores") or 1))
    seconds, rounds = ctx.pick(1.0, 4.0, 8.0), ctx.pick(1, 2, 3)
    try:
        out = pufferlib_snake.measure(cores, seconds, rounds, download=ctx.mode != "smoke")
    except pufferlib_snake.Unavailable as e:
        missing = f"{PUFFERLIB_MISSING} ({e})"
        ctx.skip(missing)
        return {"pufferlib_c": None, "pufferlib_missing": missing}
    ctx.say(
        f"PufferLib C Snake ({out['source']}), {cores} processes at once (16 worlds each):"
        f" {fmt_rate(out['snake_sps'])} snake-steps/s in all (rounds: {', '.join(fmt_rate(t) for t in out['rounds'])})"
    )
    return {"pufferlib_c": out}


def open_training(ctx: Context, env_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """PPO on the open arena (configs/tuned/ppo_arena_open.yaml, PufferLib's map) under each rule set:
    training snake-steps/s beside the env alone at the same number of worlds."""
    from jaxrl.bench.parts.train import program_sps

    small = ctx.pick(
        ["env.width=32", "env.height=24", "env.num_snakes=16", "env.num_food=32", "algo.num_steps=8"], [], []
    )
    cores = max(1, int(ctx.machine.get("cores") or 1))
    rows = []
    for rules in RULES:
        sps = program_sps(["env=arena_open", f"env.rules={rules}", *small], ctx.pick(64, 6_000, 30_000))
        snakes = env_rows[0]["settings"]["num_snakes"] if env_rows else PUFFERLIB_MAP["num_snakes"]
        train = sps["sps"] * snakes
        # env only on one device (as the config trains) at its 2 worlds, or the nearest
        same = [r for r in env_rows if r["rules"] == rules and r.get("devices", 1) == 1]
        alone = min(same, key=lambda r: abs(r["worlds"] - 2))["snake_sps"] if same else math.nan
        rows.append(
            {
                "rules": rules,
                "snake_sps": train,
                "per_core": train / cores,
                "env_only_2_worlds": alone,
                "share_of_env_only": train / alone,
                "compile_s": sps.get("compile_s", math.nan),
            }
        )
        ctx.say(
            f"PPO on the open arena ({rules}): {fmt_rate(train)} snake-steps/s ({fmt_rate(train / cores)} per core),"
            f" {fmt_ratio(train / alone)} of env only at 2 worlds; PufferLib's published training figure"
            f" {fmt_rate(PUFFERLIB_TRAINING)} on 10 cores"
            f" ({fmt_rate(PUFFERLIB_TRAINING / PUFFERLIB_TRAINING_CORES)} per core)"
        )
    return rows


def snake_run(n: int, steps: int, size: int, ego: bool = True):
    """Snake alone on the same harness: relative actions and the turned view, as the arena's learners play
    (`ego`), or the env's defaults (the whole board as it lies, four absolute moves)."""
    settings = {"view": "ego", "actions": "relative"} if ego else {}
    return gymnax_env("snake", n, steps, size=size, **settings)


def cases() -> list[dict[str, Any]]:
    """(label, snakes per game, builder (n, steps) -> jitted run)."""
    return [
        {"label": "Snake alone 11x11, turned view", "snakes": 1, "build": lambda n, s: snake_run(n, s, 11)},
        {"label": "arena 11x11, 1 learner + 3 greedy bots", "snakes": 4, "build": lambda n, s: arena_run(n, s)},
        {
            "label": "arena 11x11, 4 learners, no bots",
            "snakes": 4,
            "build": lambda n, s: arena_run(n, s, num_agents=4),
        },
        {
            "label": "arena 19x19, 1 learner + 31 greedy bots",
            "snakes": 32,
            "build": lambda n, s: arena_run(n, s, size=19, num_snakes=32),
        },
        {"label": "Snake alone 10x10, its defaults", "snakes": 1, "build": lambda n, s: snake_run(n, s, 10, False)},
    ]


def env_speed(ctx: Context) -> list[dict[str, Any]]:
    sizes = ctx.pick([4], [1024], [16, 256, 1024, 4096, 16384])
    work = ctx.pick(400, 100_000, 1_000_000)  # game steps per timed call
    repeats = ctx.pick(1, 2, 3)
    rows = []
    for n in sizes:
        steps = int(min(500, max(5, work // n)))
        calls, compile_s = {}, {}
        for case in cases():
            fn, compile_s[case["label"]] = compile_timed(case["build"](n, steps), jax.random.key(0))
            calls[case["label"]] = lambda i, fn=fn: fn(jax.random.key(i))
        seconds = best_times(calls, repeats)
        snake_steps = {c["label"]: n * steps * c["snakes"] / seconds[c["label"]] for c in cases()}
        rows.append({"n_envs": n, "steps_per_call": steps, "snake_sps": snake_steps, "compile_s": compile_s})
        ctx.say(f"{n:>6,} games: " + " | ".join(f"{k} {fmt_rate(v)}" for k, v in snake_steps.items()))
    return rows


def first_seat_games(games: int, max_steps: int, seed: int = 0) -> Any:
    """`figures(kind, bots)`: the first seat played by bot `kind` against 3 bots of kind `bots` (4 snakes, 11x11,
    every seat at the arena's table): its win rate, mean placement and final length over `games` games; a game ends
    when the first seat dies, when the game does, or at `max_steps`. One program serves every pair of KINDS: the
    two kinds are arguments that pick a branch, not constants that each compile their own."""
    arena, params = envs.make("arena")
    table = hook(arena, "table")()
    params = table_params(table, params)
    first = jnp.arange(table.num_snakes) == 0
    moves = [lambda k, s, kind=kind: table.bot_actions(k, s, kind) for kind in KINDS]

    def play(key, mine_kind, their_kind):
        _, state = table.reset_env(key, params)

        def body(carry, key):
            state, done, won, place, length = carry
            mine, theirs, step = jax.random.split(key, 3)
            mine = jax.lax.switch(mine_kind, moves, mine, state)
            theirs = jax.lax.switch(their_kind, moves, theirs, state)
            _, state, _, over, _ = table.step_env(step, state, jnp.where(first, mine, theirs), params)
            live = ~done  # the figures of the step that ends the first seat's game, kept from then on
            done = done | over | ~state.alive[0] | (state.time >= max_steps)
            won = jnp.where(live, state.alive[0] & (jnp.sum(state.alive) == 1), won)
            place = jnp.where(live, table.seat_placement(state, jnp.zeros(table.num_snakes))[0], place)
            length = jnp.where(live, state.length[0], length)
            return (state, done, won, place, length), None

        start = (state, jnp.bool_(False), jnp.bool_(False), jnp.float32(0), jnp.int32(0))
        (_, _, won, place, length), _ = jax.lax.scan(body, start, jax.random.split(key, max_steps))
        return won, place, length

    # The kinds are not mapped over, so each switch stays a branch: a step runs only its two kinds' moves.
    program = jax.jit(jax.vmap(play, in_axes=(0, None, None)))
    keys = jax.random.split(jax.random.key(seed), games)

    def figures(kind: str, bots: str) -> dict[str, float]:
        won, place, length = program(keys, KINDS.index(kind), KINDS.index(bots))
        return {
            "win_rate": float(np.mean(won)),
            "placement": float(np.mean(place)),
            "length": float(np.mean(length)),
            "games": games,
        }

    return figures


def bot_table(ctx: Context) -> list[dict[str, Any]]:
    figures = first_seat_games(ctx.pick(16, 200, 1000), max_steps=500)
    rows = []
    for kind in KINDS:
        for bots in KINDS:
            row = figures(kind, bots)
            rows.append({"seat": kind, "against": f"3 {bots}", **row})
            ctx.say(f"{kind} against 3 {bots}: wins {row['win_rate']:.1%}, placement {row['placement']:.2f}")
    return rows


def ppo_speed(ctx: Context) -> dict[str, Any]:
    from jaxrl.bench.parts.train import program_sps

    overrides = ["env=arena"] + ctx.pick(["num_envs=16", "algo.num_steps=8"], [], [])
    return program_sps(overrides, ctx.pick(256, 400_000, 5_000_000))


SELFPLAY = ["opponents=selfplay", "selfplay.start=1", "selfplay.snapshot_every=2", "selfplay.bot_share=0.2"]


def selfplay_speed(ctx: Context) -> dict[str, Any]:
    """Bots-only and self-play PPO steps/s side by side (twice, interleaved), and the split of a self-play step."""
    small = ctx.pick(["num_envs=16", "algo.num_steps=8"], [], [])
    target = ctx.pick(256, 400_000, 5_000_000)
    rows = interleaved(ctx, {"bots": ["env=arena", *small], "selfplay": ["env=arena", *small, *SELFPLAY]}, target)
    mean = lambda label: float(np.mean([r["sps"] for r in rows if r["label"] == label]))
    out = {"rows": rows, "bots_sps": mean("bots"), "selfplay_sps": mean("selfplay")}
    out["ratio"] = out["selfplay_sps"] / out["bots_sps"]
    out["split_ms"] = selfplay_split(small)
    ctx.say(
        f"self-play PPO {fmt_rate(out['selfplay_sps'])} steps/s vs bots-only {fmt_rate(out['bots_sps'])}"
        f" ({fmt_ratio(out['ratio'])}); per step ms: " + ", ".join(f"{k} {v:.2f}" for k, v in out["split_ms"].items())
    )
    return out


RECIPE = ["selfplay.start=1", "selfplay.snapshot_every=2"]  # the pool full within the warm-up


def interleaved(ctx: Context, configs: dict[str, list[str]], target: int) -> list[dict[str, Any]]:
    """Steps/s of one timed chunk (about `target` env steps, after 8 updates of warm-up) of each labelled config,
    the configs in turn, once (twice in full mode)."""
    from jaxrl import build
    from jaxrl.bench.parts.train import timed_chunk
    from jaxrl.config.compose import compose_config

    rows = []
    for _ in range(ctx.pick(1, 1, 2)):
        for label, overrides in configs.items():
            cfg, _ = compose_config([*overrides, "progress=false"])
            updates = max(2, target // build.program(cfg).steps_per_update)
            rows.append({"label": label, **timed_chunk(cfg, updates, warmup=8)})
    return rows


def league_speed(ctx: Context) -> dict[str, Any]:
    """The league recipe (experiment=arena_league) beside the self-play recipe it extends (experiment=
    arena_selfplay), steps/s side by side (twice, interleaved), and what one vector step of each scripted kind's
    moves costs at the recipe's num_envs."""
    from jaxrl.config.compose import compose_config
    from jaxrl.config.environment import make_env

    small = ctx.pick(["num_envs=16", "algo.num_steps=8"], [], [])
    labels = ("arena_selfplay", "arena_league")
    configs = {label: [f"experiment={label}", *small, *RECIPE] for label in labels}
    rows = interleaved(ctx, configs, ctx.pick(256, 400_000, 4_000_000))
    mean = lambda label: float(np.mean([r["sps"] for r in rows if r["label"] == label]))
    out = {"rows": rows, "selfplay_sps": mean("arena_selfplay"), "league_sps": mean("arena_league")}
    out["ratio"] = out["league_sps"] / out["selfplay_sps"]
    cfg, _ = compose_config(["experiment=arena_league", *small, "progress=false"])
    env, params = make_env(cfg)
    worlds = cfg.num_envs
    _, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.key(0), worlds), params)
    keys = jax.random.split(jax.random.key(1), worlds)
    out["kind_ms"] = {
        kind: best_ms(jax.vmap(lambda k, s, kind=kind: env.bot_actions(k, s, kind)), (keys, state))
        for kind in cfg.selfplay.league
    }
    out["num_envs"] = worlds
    ctx.say(
        f"league recipe {fmt_rate(out['league_sps'])} steps/s vs self-play recipe {fmt_rate(out['selfplay_sps'])}"
        f" ({fmt_ratio(out['ratio'])}); one vector step of bot moves at {worlds} worlds, ms: "
        + ", ".join(f"{k} {v:.2f}" for k, v in out["kind_ms"].items())
    )
    return out


def best_ms(fn: Any, args: tuple) -> float:
    """Milliseconds per call of jitted `fn(*args)`: the best of 5 rounds of 20 calls each."""
    f = jax.jit(fn)
    jax.block_until_ready(f(*args))
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(20):
            r = f(*args)
        jax.block_until_ready(r)
        rounds.append((time.perf_counter() - t0) / 20 * 1e3)
    return min(rounds)


def selfplay_split(small: list[str]) -> dict[str, float]:
    """Milliseconds per vector step of a self-play batch's pieces, every self-play world playing one of 8
    distinct snapshots (best of 5 rounds of 20 calls each)."""
    from jaxrl import build
    from jaxrl.config.compose import compose_config
    from jaxrl.core.pool import grouped_apply
    from jaxrl.core.vector import VectorEnv

    cfg, _ = compose_config(["env=arena", *small, *SELFPLAY, "selfplay.bot_share=0", "progress=false"])
    algo = build.program(cfg).algo
    vec, env = algo.algo.vec, algo.algo.vec.env
    runner = jax.jit(algo.init)(jax.random.key(0))
    pool = runner.envs.state.pool
    for i in range(pool.size):
        scaled = jax.tree.map(lambda x, i=i: x * (1.0 + 0.1 * i), algo.policy_params(runner))
        pool = pool.push(scaled, jnp.bool_(True), jnp.int32(i + 1))
    state = runner.envs.state.replace(
        pool=pool, slot=jax.random.randint(jax.random.key(1), (cfg.num_envs,), 0, pool.size)
    )
    keys = vec.step_keys(jax.random.key(2), 1)[0]
    params = runner.envs.params
    action = jnp.ones(cfg.num_envs, jnp.int32)
    plain = VectorEnv(env, cfg.num_envs)
    obs = jax.vmap(env.opponent_obs)(state.env)
    given = jnp.ones((cfg.num_envs, env.num_snakes), jnp.int32)
    one = jax.tree.map(lambda x: x[0], pool.params)
    flat = obs.reshape(-1, *obs.shape[2:])
    # Every input is an argument of the jitted piece: closed-over arrays become constants that XLA may fold
    # away (a shared forward on constant weights and views compiled to nothing).
    pieces = {
        "env step with the bots": (lambda k, s, a, p: plain.step(k, s, a, p)[0], (keys, state.env, action, params)),
        "env step with given opponents": (
            lambda k, s, g, p: jax.vmap(vec.versus.step, in_axes=(0, 0, 0, None))(k, s, g, p)[0],
            (keys, state.env, given, params),
        ),
        "opponents' views": (jax.vmap(env.opponent_obs), (state.env,)),
        "opponents' forward (pool segments)": (
            lambda w, i, o: grouped_apply(vec.scores, w, i, o, None)[1],
            (pool.params, state.slot, obs),
        ),
        "one shared forward (floor)": (lambda w, o: vec.scores(w, None, o)[1], (one, flat)),
        "self-play vector step": (lambda k, s, a, p: vec.step(k, s, a, p)[0], (keys, state, action, params)),
    }
    return {name: best_ms(fn, args) for name, (fn, args) in pieces.items()}


def run(ctx: Context) -> dict[str, Any]:
    out: dict[str, Any] = {
        "rules": rules_speed(ctx),
        "env": env_speed(ctx),
        **pufferlib_speed(ctx),
        "open": open_speed(ctx),
        "bots": bot_table(ctx),
        "ppo": ppo_speed(ctx),
        "selfplay": selfplay_speed(ctx),
        "league": league_speed(ctx),
    }
    out["ppo"]["config"] = "env=arena (configs/tuned/ppo_arena.yaml)"
    ctx.say(f"PPO on the arena: {fmt_rate(out['ppo']['sps'])} steps/s (compile {out['ppo']['compile_s']:.1f} s)")
    out["open_training"] = open_training(ctx, out["open"])
    out["pufferlib"] = PUFFERLIB_PUBLISHED
    c = out["pufferlib_c"]
    for rules in RULES:
        top = max((r for r in out["open"] if r["rules"] == rules), key=lambda r: r["snake_sps"])
        if c:
            ctx.say(
                f"open arena ({rules}) / PufferLib's C, whole machine: {fmt_ratio(top['snake_sps'] / c['snake_sps'])}"
            )
    out["headlines"] = headlines(out)
    return out


def best(rows: list[dict[str, Any]], label: str) -> tuple[float, int | None]:
    return max(((r["snake_sps"][label], r["n_envs"]) for r in rows), default=(math.nan, None))


def headlines(out: dict[str, Any]) -> list[dict[str, str]]:
    labels = [c["label"] for c in cases()]
    alone, n_alone = best(out["env"], labels[0])
    arena, n_arena = best(out["env"], labels[1])
    default, n_default = best(out["env"], labels[4])
    greedy = next(r for r in out["bots"] if r["seat"] == "greedy" and r["against"] == "3 greedy")
    space = next(r for r in out["bots"] if r["seat"] == "space" and r["against"] == "3 greedy")
    look = next(r for r in out["bots"] if r["seat"] == "lookahead" and r["against"] == "3 greedy")
    lines = [
        {
            "what": "Arena 11x11, 4 snakes (3 greedy bots), env only, best num_envs",
            "figure": f"{fmt_rate(arena)} snake-steps/s at {n_arena:,} games; Snake alone 11x11 with the turned view"
            f" {fmt_rate(alone)} at {n_alone:,} ({fmt_ratio(arena / alone)}); Snake's defaults (10x10, whole board)"
            f" {fmt_rate(default)} at {n_default:,} ({fmt_ratio(arena / default)})",
        },
        {
            "what": "Arena bots: one bot of each kind against 3 greedy bots",
            "figure": ", ".join(
                f"{r['seat']} wins {r['win_rate']:.1%} (placement {r['placement']:.2f})" for r in (greedy, space, look)
            )
            + f" of {greedy['games']:,} games each",
        },
        {"what": "PPO on the arena (shipped config)", "figure": f"{fmt_rate(out['ppo']['sps'])} steps/s"},
        {
            "what": "PPO self-play on the arena (shipped config, pool of 8) beside bots-only",
            "figure": f"{fmt_rate(out['selfplay']['selfplay_sps'])} vs {fmt_rate(out['selfplay']['bots_sps'])} steps/s"
            f" ({fmt_ratio(out['selfplay']['ratio'])})",
        },
        {
            "what": "PPO in a league (experiment=arena_league: greedy, space, lookahead and a pool of 8)",
            "figure": f"{fmt_rate(out['league']['league_sps'])} vs the self-play recipe's"
            f" {fmt_rate(out['league']['selfplay_sps'])} steps/s ({fmt_ratio(out['league']['ratio'])})",
        },
    ]
    c = out.get("pufferlib_c")
    for rules in RULES:
        top = max((r for r in out["open"] if r.get("rules", "battlesnake") == rules), key=lambda r: r["snake_sps"])
        against = (
            f"; PufferLib's C Snake measured beside it, one process per core: {fmt_rate(c['snake_sps'])}"
            f" ({fmt_ratio(top['snake_sps'] / c['snake_sps'])})"
            if c
            else f"; {out.get('pufferlib_missing', PUFFERLIB_MISSING)}"
        )
        on = "one device" if top.get("devices", 1) == 1 else f"{top['devices']} CPU devices, one per core"
        lines.append(
            {
                "what": f"Open arena, {rules} rules, on PufferLib Snake's map (640x360, 256 snakes, 11x11), env only",
                "figure": f"{fmt_rate(top['snake_sps'])} snake-steps/s at {top['worlds']} worlds on {on}"
                f" ({fmt_rate(top['per_core'])} per core){against}",
            }
        )
    for r in out.get("open_training", []):
        lines.append(
            {
                "what": f"PPO on the open arena, {r['rules']} rules (configs/tuned/ppo_arena_open.yaml)",
                "figure": f"{fmt_rate(r['snake_sps'])} snake-steps/s ({fmt_rate(r['per_core'])} per core),"
                f" {fmt_ratio(r['share_of_env_only'])} of env only; PufferLib's published training figure:"
                f" {fmt_rate(PUFFERLIB_TRAINING)} on an M4 Mac mini's 10 cores"
                f" ({fmt_rate(PUFFERLIB_TRAINING / PUFFERLIB_TRAINING_CORES)} per core; theirs, not measured here)",
            }
        )
    return lines


def report(result: dict[str, Any]) -> str:
    labels = [c["label"] for c in cases()]
    md = ["**Env only, snake-steps/s** (a game step of a 4-snake arena is 4 snake-steps; compile s in brackets)\n"]
    head = ["num_envs", *labels, "arena 4 / Snake alone turned", "arena 4 / Snake defaults"]
    md += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in result["env"]:
        cells = [f"{r['n_envs']:,}"]
        cells += [f"{fmt_rate(r['snake_sps'][k])} ({r['compile_s'][k]:.1f} s)" for k in labels]
        cells.append(fmt_ratio(r["snake_sps"][labels[1]] / r["snake_sps"][labels[0]]))
        cells.append(fmt_ratio(r["snake_sps"][labels[1]] / r["snake_sps"][labels[4]]))
        md.append("| " + " | ".join(cells) + " |")
    if result.get("rules"):
        md += ["", f"**The engine's rules (arena-v2) beside arena-v1 ({result['rules']['before']})**, env only\n"]
        md += ["| case | num_envs | v1 snake-steps/s | v2 snake-steps/s | v2 / v1 |", "|---|---|---|---|---|"]
        for r in result["rules"]["rows"]:
            md.append(
                f"| {r['case']} | {r['n_envs']:,} | {fmt_rate(r['v1'])} | {fmt_rate(r['v2'])}"
                f" | {fmt_ratio(r['ratio'])} |"
            )
    md += ["", "**Bots against bots** (the first seat's figures; 4 snakes on 11x11)\n"]
    md += ["| first seat | against | win rate | placement | length | games |", "|---|---|---|---|---|---|"]
    for r in result["bots"]:
        md.append(
            f"| {r['seat']} | {r['against']} | {r['win_rate']:.1%} | {r['placement']:.2f} | {r['length']:.1f}"
            f" | {r['games']:,} |"
        )
    ppo = result["ppo"]
    md += ["", f"**PPO** ({ppo['config']}): {fmt_rate(ppo['sps'])} steps/s, compile {ppo['compile_s']:.1f} s", ""]
    sp = result["selfplay"]
    md += [
        (
            f"**Self-play** (the same config, `opponents=selfplay`, a pool of 8): {fmt_rate(sp['selfplay_sps'])}"
            f" steps/s against bots-only {fmt_rate(sp['bots_sps'])} measured beside it ({fmt_ratio(sp['ratio'])})."
        ),
        "",
        "| piece of a vector step (all worlds) | ms |",
        "|---|---|",
        *(f"| {k} | {v:.2f} |" for k, v in sp["split_ms"].items()),
        "",
    ]
    lg = result.get("league")
    if lg:
        md += [
            (
                f"**League** (`experiment=arena_league`): {fmt_rate(lg['league_sps'])} steps/s against the self-play"
                f" recipe's {fmt_rate(lg['selfplay_sps'])} measured beside it ({fmt_ratio(lg['ratio'])})."
            ),
            "",
            f"| one vector step of a kind's moves ({lg['num_envs']} worlds) | ms |",
            "|---|---|",
            *(f"| {k} | {v:.2f} |" for k, v in lg["kind_ms"].items()),
            "",
        ]
    md += ["**Open arena** (`env=arena_open`, every snake a learner, env only)\n"]
    md += [
        "| rules | map | snakes | worlds | XLA devices | snake-steps/s | per core | compile |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["open"]:
        m = r["settings"]
        md.append(
            f"| {r.get('rules', 'battlesnake')} | {m['width']}x{m['height']}, {m['num_food']} food, view {m['view']}"
            f" | {m['num_snakes']} | {r['worlds']} | {r.get('devices', 1)} | {fmt_rate(r['snake_sps'])}"
            f" | {fmt_rate(r['per_core'])} | {r['compile_s']:.1f} s |"
        )
    c = result.get("pufferlib_c")
    if c:
        md += [
            "",
            f"**PufferLib's C Snake** (its snake.h from {c['source']}, the project's harness, `{c['build']}`,"
            f" {c['processes']} processes at once,"
            f" 16 worlds each): {fmt_rate(c['snake_sps'])} snake-steps/s in all; per process"
            f" {', '.join(fmt_rate(x) for x in c['per_process'])}. PufferLib's own claim: {result['pufferlib']}.",
        ]
    else:
        missing = result.get("pufferlib_missing", PUFFERLIB_MISSING)
        md += ["", f"**PufferLib's C Snake**: {missing}; PufferLib's own claim: {result['pufferlib']}."]
    if result.get("open_training"):
        md += ["", "**PPO on the open arena** (configs/tuned/ppo_arena_open.yaml)\n"]
        md += ["| rules | snake-steps/s | per core | env only, 2 worlds | share |", "|---|---|---|---|---|"]
        for r in result["open_training"]:
            md.append(
                f"| {r['rules']} | {fmt_rate(r['snake_sps'])} | {fmt_rate(r['per_core'])}"
                f" | {fmt_rate(r['env_only_2_worlds'])} | {fmt_ratio(r['share_of_env_only'])} |"
            )
        md.append(
            f"\nPufferLib's published training figure: {fmt_rate(PUFFERLIB_TRAINING)} steps/s on an M4 Mac mini"
            f" (10 cores, PufferLib PR #318),"
            f" {fmt_rate(PUFFERLIB_TRAINING / PUFFERLIB_TRAINING_CORES)} per core: theirs."
        )
    md.append("")
    return "\n".join(md)


def plot(result: dict[str, Any], axes_title: str, path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    for case in cases():
        pts = [(r["n_envs"], r["snake_sps"][case["label"]]) for r in result["env"]]
        ax.plot(*zip(*pts, strict=True), marker="o", label=case["label"])
    log_axes(ax, "Arena and Snake alone, env only", "num_envs (games)", "snake-steps / s")
    save_figure(fig, f"Arena throughput - {axes_title}", path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.parts.arena", description=TITLE)
    parser.add_argument("--quick", action="store_true", help="the quick sizes (default: full)")
    parser.add_argument("--out", default=RESULTS, help=f"folder for arena.json (default {RESULTS})")
    parser.add_argument("--cores-worker", metavar="JOB", help=argparse.SUPPRESS)  # open_on_cores's process
    args = parser.parse_args(argv)
    if args.cores_worker:
        print(json.dumps({"rows": cores_worker(json.loads(args.cores_worker))}))
        return 0
    info = machine.describe()
    ctx = Context("quick" if args.quick else "full", Path(args.out), info)
    result = run(ctx)
    result.update(machine=info, date=datetime.now(UTC).isoformat(timespec="seconds"))
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "arena.json").write_text(json.dumps(result, indent=1))
    print(report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
