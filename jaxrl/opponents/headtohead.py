"""Head-to-head games in the arena between runs' greedy policies and the scripted bots.

A pair (A, B) plays `games` games at once on device, one per world, every seat held by A or by
B: in game g, A holds the seats s with (s + g) even, B the others, so each side holds each seat
in half the games (and, with an odd number of snakes, the extra seat in half of them). A game
ends when one side has no snake left (the other wins), when both lose their last snakes on one
step, or at the step limit with both sides alive (both a draw). A side's placement is the mean
placement of its snakes (1 + the snakes that outlived it; survivors share 1).

Players: a run directory (its newest checkpoint, or `PATH@STEP`; seed 0 of the best sweep member),
or a bot kind, `greedy` or `random_safe`. Each run acts on its own view size; the board size, the number of snakes
and the ruleset are the first player's (two runs must share a board size and a ruleset).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.config.compose import UsageError

BOTS = ("greedy", "random_safe")


@dataclasses.dataclass(frozen=True)
class Player:
    """One side of a game: a run's greedy policy at a checkpoint, or a bot kind."""

    name: str  # as tables show it: greedy, random_safe, or RUN_DIR@STEP
    bot: str | None = None  # greedy | random_safe for a bot
    policy: Any = None  # jaxrl.api.Policy (greedy) for a run
    view: int = 0  # the run's arena view
    size: int = 0  # the run's board size
    num_snakes: int = 0
    ruleset: str = "standard"  # the run's arena ruleset (its games are played under it)
    env_params: Any = None  # the run's trained env params (the arena's rules and step limit)
    run_dir: str | None = None
    step: int | None = None  # checkpoint (env steps per seed)
    train_s: float | None = None  # training seconds at that checkpoint


def bot(kind: str) -> Player:
    return Player(name=kind, bot=kind)


def player(spec: Any, load: Any, flag: str = "vs") -> Player:
    """A player from a run directory (`PATH` or `PATH@STEP`, opened with `load`: `jaxrl.api.load`), a shelf
    agent (`pretrained:NAME`), a `jaxrl.api.Run`, or a bot kind; UsageError, one line naming `flag=spec`, when
    it is none of those or not an arena run with a readable checkpoint."""
    from jaxrl.config.schema import ConfigError
    from jaxrl.run.checkpoint import CheckpointError
    from jaxrl.run.shelf import is_pretrained

    if isinstance(spec, Player):
        return spec
    if isinstance(spec, str) and spec in BOTS:
        return bot(spec)
    step = None
    if hasattr(spec, "policy_of") and hasattr(spec, "restore"):  # a Run
        run = spec
    elif is_pretrained(str(spec)):
        try:
            run = load(str(spec))
        except ConfigError as e:
            raise UsageError(f"{flag}={spec}: {e}") from None
    else:
        text = str(spec)
        path, at, when = text.rpartition("@")
        if at and when.isdigit() and not Path(text).expanduser().exists():
            text, step = path, int(when)
        where = Path(text).expanduser()
        if not where.is_dir():
            raise UsageError(
                f"{flag}={spec} is invalid: allowed {', '.join(BOTS)}, a run directory (PATH or PATH@STEP)"
                " or pretrained:NAME"
            )
        try:
            run = load(where)
        except (ConfigError, UsageError) as e:
            raise UsageError(f"{flag}={spec}: {e}") from None
    cfg = run.config
    if cfg.env.name != "arena":
        raise UsageError(f"{flag}={spec} trained on env={cfg.env.name}; head-to-head games are played in the arena")
    try:
        found, runner, program = run.restore(step)
    except (CheckpointError, ConfigError, UsageError) as e:
        raise UsageError(f"{flag}={spec}: {e}") from None
    policy = run.policy_of(step=found)
    trained = jax.tree.map(lambda x: np.asarray(x[0]), runner.envs.params)
    env = program.env
    shelf_name = getattr(run, "spec", None)  # a shelf agent: named as given, its training time as it recorded
    return Player(
        name=shelf_name or f"{run.run_dir}@{found}",
        policy=policy,
        view=env.view,
        size=env.size,
        ruleset=getattr(env, "ruleset", "standard"),
        num_snakes=env.num_snakes,
        env_params=trained,
        run_dir=str(run.run_dir),
        step=found,
        train_s=run.summary.get("train_s") if shelf_name else _train_seconds(run.run_dir, found),
    )


def _train_seconds(run_dir: Path, step: int) -> float | None:
    from jaxrl.run.checkpoint import Checkpointer

    checkpoints = Checkpointer(Path(run_dir) / "checkpoints", reader=True)
    try:
        return float(checkpoints.read_meta(step).get("train_s"))
    except Exception:  # noqa: BLE001  (an older or damaged meta: the time is only for the rating plot)
        return None
    finally:
        checkpoints.close()


def check_pair(a: Player, b: Player, flag: str = "vs") -> None:
    """UsageError when `b` cannot sit at `a`'s table: another board size or ruleset."""
    if a.bot is None and b.bot is None and a.size != b.size:
        raise UsageError(
            f"{flag}={b.name.rpartition('@')[0]} trained on a {b.size}x{b.size} board; {a.name.rpartition('@')[0]} "
            f"on {a.size}x{a.size}: head-to-head games need one board size"
        )
    if a.bot is None and b.bot is None and a.ruleset != b.ruleset:
        raise UsageError(
            f"{flag}={b.name.rpartition('@')[0]} trained under ruleset {b.ruleset}; {a.name.rpartition('@')[0]}"
            f" under {a.ruleset}: head-to-head games need one ruleset"
        )


def _arena(size: int, num_snakes: int, view: int, ruleset: str = "standard"):
    from jaxrl.envs.arena import Arena

    return Arena(size=size, num_snakes=num_snakes, num_agents=num_snakes, view=view, ruleset=ruleset)


def _table(a: Player, b: Player, games: int, max_steps: int | None):
    """(rules, env params, a's seats (games, seats), step limit) of a pair's games: the first run's arena
    (the default arena between two bots), every seat taking actions."""
    from jaxrl.envs.arena import EnvParams

    check_pair(a, b)
    runs = [p for p in (a, b) if p.bot is None]
    first = runs[0] if runs else None
    size, num_snakes = (first.size, first.num_snakes) if first else (11, 4)
    params = jax.tree.map(jnp.asarray, first.env_params if first else EnvParams()).replace(num_bots=jnp.int32(0))
    steps = int(params.max_steps_in_episode) if max_steps is None else int(max_steps)
    rules = _arena(size, num_snakes, first.view if first else 11, first.ruleset if first else "standard")
    seats = jnp.arange(num_snakes)
    mine = (seats[None, :] + jnp.arange(games)[:, None]) % 2 == 0  # (games, seats): a's seats
    return rules, params, mine, steps


def play_pair(a: Player, b: Player, games: int = 1000, seed: int = 0, max_steps: int | None = None) -> dict[str, Any]:
    """`games` games of `a` against `b` (seats rotated); wins, draws and placements per side."""
    rules, params, mine, steps = _table(a, b, games, max_steps)

    def run(key: jax.Array, weights: Any, params: Any, mine: jax.Array) -> dict[str, jax.Array]:
        start, advance, finish = _game(rules, params, a, b, weights, mine, games, steps)
        end = jax.lax.while_loop(lambda c: ~jnp.all(c["over"]) & (c["t"] < steps), advance, start(key))
        return finish(end)

    # The weights and rules are arguments, not constants: pairs of runs with one architecture (a rating's
    # round robin, another seed) compile one program, which the persistent compilation cache then serves.
    out = jax.device_get(jax.jit(run)(jax.random.key(seed), _weights(a, b), params, mine))
    a_won, b_won = out["a_won"], out["b_won"]
    draws = games - int(a_won.sum()) - int(b_won.sum())
    return {
        "a": a.name,
        "b": b.name,
        "games": games,
        "a_wins": int(a_won.sum()),
        "b_wins": int(b_won.sum()),
        "draws": draws,
        "a_score": float((a_won.sum() + 0.5 * draws) / games),  # wins and half the draws
        "a_placement": float(out["a_place"].mean()),
        "b_placement": float(out["b_place"].mean()),
        "unfinished": int((~out["over"]).sum()),
        "mean_length": float(out["length"].mean()),
        "seed": seed,
    }


def record_game(a: Player, b: Player, seed: int = 0, max_steps: int | None = None) -> tuple[np.ndarray, list[str]]:
    """Frames (steps, H, W, 3) of one game of `a` (seats 0, 2, ...: A) against `b` (seats 1, 3, ...: B) and a
    caption per frame: each side's snakes by colour's initial (green, blue, orange, purple) with their lengths
    (x once dead), e.g. "t40 A g5 o4 | B b7 px", and at the end the result."""
    from jaxrl.envs.arena import SNAKE_COLOURS

    rules, params, mine, steps = _table(a, b, 1, max_steps)

    def run(key: jax.Array, weights: Any, params: Any, mine: jax.Array):
        start, advance, finish = _game(rules, params, a, b, weights, mine, 1, steps)

        def body(c, _):
            c = advance(c)
            return c, (
                rules.render_rgb(jax.tree.map(lambda x: x[0], c["state"])),
                c["over"][0],
                c["state"].length[0],
                c["state"].alive[0],
            )

        c0 = start(key)
        first = (
            rules.render_rgb(jax.tree.map(lambda x: x[0], c0["state"])),
            c0["over"][0],
            c0["state"].length[0],
            c0["state"].alive[0],
        )
        end, rest = jax.lax.scan(body, c0, None, length=steps)
        frames = jax.tree.map(lambda x, y: jnp.concatenate([x[None], y]), first, rest)
        return frames, finish(end)

    (frames, over, length, alive), out = jax.device_get(
        jax.jit(run)(jax.random.key(seed), _weights(a, b), params, mine)
    )
    shown = int(np.argmax(over)) + 1 if over.any() else len(over)  # up to the frame where the game ended
    colour = {(60, 220, 90): "green", (70, 140, 255): "blue", (255, 170, 40): "orange", (200, 90, 230): "purple"}
    result = "A wins" if out["a_won"][0] else "B wins" if out["b_won"][0] else "draw"
    captions = []
    for t in range(shown):
        side = lambda mine, t=t: " ".join(
            f"{colour.get(SNAKE_COLOURS[k], str(k))[0]}{length[t][k] if alive[t][k] else 'x'}"
            for k in range(rules.num_snakes)
            if (k % 2 == 0) == mine
        )
        captions.append(f"t{t} A {side(True)} | B {side(False)}" + (f" | {result}" if t == shown - 1 else ""))
    return np.asarray(frames[:shown]), captions


def _weights(a: Player, b: Player) -> tuple[Any, Any]:
    """Each side's network weights (None for a bot)."""
    return tuple(None if p.bot is not None else p.policy.params for p in (a, b))


def _actions(p: Player, weights: Any, rules: Any, state: Any, carry: Any, key: jax.Array) -> tuple[Any, jax.Array]:
    """(carry, (games, seats) relative actions) of player `p` (network `weights`) for every seat of every game."""
    games, seats = state.alive.shape
    if p.bot is not None:
        scripted = state.replace(greedy=jnp.full_like(state.alive, p.bot == "greedy"))
        keys = jax.random.split(key, games)
        direction = jax.vmap(rules.bot_directions)(keys, scripted)
        return carry, (direction - state.heading + 1) % 4
    eyes = _arena(rules.size, rules.num_snakes, p.view, rules.ruleset)
    obs = jax.vmap(lambda s: eyes.views(s, tuple(range(seats))))(state)
    carry, action = p.policy.apply(weights, carry, obs.reshape(games * seats, *obs.shape[2:]), key)
    return carry, action.reshape(games, seats).astype(jnp.int32)


def _game(rules, params, a: Player, b: Player, weights: tuple[Any, Any], mine: jax.Array, games: int, steps: int):
    """(start(key) -> c, advance(c) -> c, finish(c) -> results) of `games` games of a against b (their
    network `weights`), one per world."""
    seats = rules.num_snakes

    def carry0(p: Player) -> Any:
        return None if p.bot is not None else p.policy.initial_carry(games * seats)

    def start(key: jax.Array) -> dict[str, Any]:
        reset_key, key = jax.random.split(key)
        _, state = jax.vmap(rules.reset_env, in_axes=(0, None))(jax.random.split(reset_key, games), params)
        return {
            "t": jnp.int32(0),
            "key": key,
            "state": state,
            "over": jnp.zeros(games, bool),
            "a_won": jnp.zeros(games, bool),
            "b_won": jnp.zeros(games, bool),
            "length": jnp.zeros(games, jnp.int32),
            "carry_a": carry0(a),
            "carry_b": carry0(b),
        }

    def advance(c: dict[str, Any]) -> dict[str, Any]:
        key, ka, kb, ks = jax.random.split(c["key"], 4)
        carry_a, act_a = _actions(a, weights[0], rules, c["state"], c["carry_a"], ka)
        carry_b, act_b = _actions(b, weights[1], rules, c["state"], c["carry_b"], kb)
        action = jnp.where(mine, act_a, act_b)
        _, new, _, _, _ = jax.vmap(rules.step_env, in_axes=(0, 0, 0, None))(
            jax.random.split(ks, games), c["state"], action, params
        )
        live = ~c["over"]
        state = jax.tree.map(lambda n, o: jnp.where(live.reshape((-1,) + (1,) * (n.ndim - 1)), n, o), new, c["state"])
        a_left = jnp.any(state.alive & mine, axis=1)
        b_left = jnp.any(state.alive & ~mine, axis=1)
        ends = live & (~a_left | ~b_left | (c["t"] + 1 >= steps))
        return {
            "t": c["t"] + 1,
            "key": key,
            "state": state,
            "over": c["over"] | ends,
            "a_won": c["a_won"] | (ends & a_left & ~b_left),
            "b_won": c["b_won"] | (ends & b_left & ~a_left),
            "length": c["length"] + live,
            "carry_a": carry_a,
            "carry_b": carry_b,
        }

    def finish(c: dict[str, Any]) -> dict[str, jax.Array]:
        state = c["state"]
        place = jnp.where(state.alive, 1, jnp.maximum(state.placement, 1)).astype(jnp.float32)
        side = lambda m: jnp.sum(place * m, axis=1) / jnp.maximum(jnp.sum(m, axis=1), 1)
        return {
            "a_won": c["a_won"],
            "b_won": c["b_won"],
            "over": c["over"],
            "length": c["length"],
            "a_place": side(mine),
            "b_place": side(~mine),
        }

    return start, advance, finish


def versus(
    run: Any,
    opponents: list[Any],
    load: Any,
    games: int = 1000,
    seed: int = 0,
    step: int | None = None,
    render: str = "gif",
    fps: int = 10,
    out: str | Path | None = None,
) -> dict[str, Any]:
    """A run's greedy policy against each of `opponents` (runs or bot kinds; run directories opened with `load`),
    `games` games each: the pairs' results, written to RUN_DIR/versus.json (and a GIF of one game against the
    last opponent: versus.gif)."""
    from jaxrl.run.evaluation import _keep_previous, save_gif
    from jaxrl.run.loggers import write_json

    if not opponents:
        raise UsageError("vs= needs an opponent: a run directory, greedy or random_safe")
    me = player(f"{run.run_dir}@{step}" if step is not None else run, load, flag="run_dir")
    others = [player(spec, load) for spec in opponents]
    for other in others:
        check_pair(me, other)
    pairs = [play_pair(me, other, games, seed) for other in others]
    result: dict[str, Any] = {"run": me.name, "games_per_pair": games, "seed": seed, "pairs": pairs}
    if render == "gif":
        frames, captions = record_game(me, others[-1], seed)
        path = Path(out).expanduser() if out else Path(run.run_dir) / "versus.gif"
        _keep_previous(path)
        save_gif(frames, path, fps, captions)
        result["replay"] = str(path)
    elif render == "terminal":
        raise UsageError("render=terminal is not drawn for head-to-head games: use render=gif or none")
    _keep_previous(Path(run.run_dir) / "versus.json")
    write_json(Path(run.run_dir) / "versus.json", result)
    return result


def report(result: dict[str, Any]) -> None:
    """versus.json as a table for the terminal."""
    print(f"{result['run']} against {len(result['pairs'])} opponent(s), {result['games_per_pair']} games each")
    print("(seats rotated, greedy; score = wins + draws / 2; placement: 1 = last standing)")
    width = max(len(p["b"]) for p in result["pairs"])
    print(f"  {'opponent':<{width}}  {'wins':>6} {'draws':>6} {'losses':>6} {'score':>6}  placement (us / them)")
    for p in result["pairs"]:
        n = p["games"]
        print(
            f"  {p['b']:<{width}}  {p['a_wins'] / n:>6.1%} {p['draws'] / n:>6.1%} {p['b_wins'] / n:>6.1%}"
            f" {p['a_score']:>6.3f}  {p['a_placement']:.2f} / {p['b_placement']:.2f}"
        )
    if result.get("replay"):
        print(f"replay of one game against {result['pairs'][-1]['b']}: {result['replay']}")
