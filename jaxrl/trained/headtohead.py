"""Head-to-head games between runs' greedy policies and an env's scripted bots, seated through the env contract.

A pair (A, B) plays `games` games at once on device, one per world, at the env's table (`table()`: every seat
taking an action): in game g, A holds the seats s with (s + g) even, B the others, so each side holds each seat
in half the games (and, with an odd number of seats, the extra seat in half of them). A game ends when one side
has no seat left in it (`seat_alive`), when the episode ends, or at the step limit. Each seat then has a
placement (`seat_placement`, 1 the best): the side holding the best one wins, and equal best seats are a draw
(in the arena: the last side with snakes wins; both losing their last snakes on one step, or both alive at the
limit, is a draw). A side's placement is the mean placement of its seats.

Players: a run directory (its newest checkpoint, or `PATH@STEP`; seed 0 of the best sweep member), a shelf
agent (`pretrained:NAME`), one of the env's bots (`bot_kinds`: the arena's `greedy`, `space`, `lookahead` and
`random_safe`), or an HTTP snake (`http://host:port`, at a table whose env writes Battlesnake requests: its games
are stepped on the host, `trained/hosted.py`).
The table is the first run's env; each run sees it as its own env does (its own view), and two runs must share
the env's `game_settings` (the arena: board size and ruleset).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.config.compose import UsageError
from jaxrl.envs.base import hook, offers, table_params
from jaxrl.trained.http import TIMEOUT_MS, HttpSnake, is_url, latency_lines


@dataclasses.dataclass(frozen=True)
class Player:
    """One side of a game: a run's greedy policy at a checkpoint, or a bot kind."""

    name: str  # as tables show it: a bot's kind, pretrained:NAME, or RUN_DIR@STEP
    bot: str | None = None  # one of the table's bot_kinds, for a bot
    policy: Any = None  # jaxrl.api.Policy (greedy) for a run
    env: Any = None  # the env the run trained in: its table, and how it sees a seat
    env_params: Any = None  # the run's trained env params (one world's)
    run_dir: str | None = None
    step: int | None = None  # checkpoint (env steps per seed)
    train_s: float | None = None  # training seconds at that checkpoint
    url: str | None = None  # an HTTP snake's address (Battlesnake API v1)
    asked: Any = None  # the HTTP snake at `url` (`trained/http.py`): its answers add up over the games it plays


def bot(kind: str) -> Player:
    return Player(name=kind, bot=kind)


def _looks_like_bot(text: str) -> bool:
    from jaxrl.trained.shelf import is_pretrained

    return not (is_pretrained(text) or "/" in text or "@" in text or Path(text).expanduser().exists())


def player(spec: Any, load: Any, flag: str = "vs", bots: tuple[str, ...] = ()) -> Player:
    """A player from a run directory (`PATH` or `PATH@STEP`, opened with `load`: `jaxrl.api.load`), a shelf
    agent (`pretrained:NAME`), a `jaxrl.api.Run`, or a bot's name (checked against the table by `check_pair`);
    UsageError, one line naming `flag=spec` (and the table's `bots`, where known), when a run cannot be read."""
    from jaxrl.config.schema import ConfigError
    from jaxrl.run.checkpoint import CheckpointError
    from jaxrl.trained.shelf import is_pretrained

    if isinstance(spec, Player):
        return spec
    if is_url(spec):
        return Player(name=spec, url=spec, asked=HttpSnake(spec, TIMEOUT_MS))  # UsageError: an address it cannot ask
    step = None
    if hasattr(spec, "policy_of") and hasattr(spec, "restore"):  # a Run
        run = spec
    elif is_pretrained(str(spec)):
        try:
            run = load(str(spec))
        except ConfigError as e:
            raise UsageError(f"{flag}={spec}: {e}") from None
    elif _looks_like_bot(str(spec)):
        return bot(str(spec))
    else:
        text = str(spec)
        path, at, when = text.rpartition("@")
        if at and when.isdigit() and not Path(text).expanduser().exists():
            text, step = path, int(when)
        where = Path(text).expanduser()
        if not where.is_dir():
            raise UsageError(
                f"{flag}={spec} is invalid: allowed {', '.join(bots) or 'a bot of the env'}, a run directory"
                " (PATH or PATH@STEP) or pretrained:NAME"
            )
        try:
            run = load(where)
        except (ConfigError, UsageError) as e:
            raise UsageError(f"{flag}={spec}: {e}") from None
    try:
        found, runner, program = run.restore(step)
    except (CheckpointError, ConfigError, UsageError) as e:
        raise UsageError(f"{flag}={spec}: {e}") from None
    if hook(program.env, "num_seats") < 2:
        raise UsageError(f"{flag}={spec} trained on env={run.config.env.name}, a game of one seat: no head-to-head")
    table_of(program.env, f"{flag}={spec}")
    policy = run.policy_of(step=found)
    trained = jax.tree.map(lambda x: np.asarray(x[0]), runner.envs.params)
    shelf_name = getattr(run, "spec", None)  # a shelf agent: named as given, its training time as it recorded
    return Player(
        name=shelf_name or f"{run.run_dir}@{found}",
        policy=policy,
        env=program.env,
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


def table_of(env: Any, where: str, seats: int | None = None) -> Any:
    """`env`'s table of `seats` seats (default all); UsageError, one line naming `where`, when it sets none."""
    try:
        return hook(env, "table")(seats)
    except ValueError as e:
        raise UsageError(f"{where}: {e}") from None


_SAME_GAME: dict[tuple[int, int], tuple[Any, Any, bool]] = {}  # (host env, guest env) -> their states agree


def _same_game(host: Any, guest: Any) -> bool:
    """Whether `guest`'s table of `host`'s seats holds states of the shapes `host`'s table does (traced once
    per pair of envs)."""
    found = _SAME_GAME.get((id(host), id(guest)))
    if found is None:
        table = table_of(host, "the table")
        shapes = lambda env: jax.tree.map(
            lambda x: x.shape, jax.eval_shape(lambda k: env.reset_env(k, env.default_params)[1], jax.random.key(0))
        )
        found = (host, guest, shapes(table) == shapes(table_of(guest, "the guest", hook(table, "num_seats"))))
        _SAME_GAME[(id(host), id(guest))] = found  # the envs are kept with the answer: their ids stay theirs
    return found[2]


def _label(p: Player) -> str:
    return p.name.rpartition("@")[0] or p.name


def check_pair(a: Player, b: Player, flag: str = "vs") -> None:
    """UsageError when `b` cannot sit at `a`'s table (or `a` at `b`'s): another env, another of the env's
    `game_settings`, a state of another shape, or a bot the env does not have."""
    host = a if a.env is not None else b
    if host.env is None:
        return  # two bots or HTTP snakes: the table comes from the game's host (`play_pair(host=)`)
    guest = b if host is a else a
    table = table_of(host.env, f"{flag}={host.name}")
    if guest.url is not None:
        if not (offers(table, "board_request") and offers(table, "board_action")):
            raise UsageError(f"{flag}={guest.name} plays over HTTP; {host.env.name} writes no request it could read")
        return
    if guest.bot is not None:
        kinds = hook(table, "bot_kinds")
        if guest.bot not in kinds:
            raise UsageError(
                f"{flag}={guest.name} is invalid: allowed {', '.join(kinds)}, a run directory (PATH or PATH@STEP)"
                " or pretrained:NAME"
            )
        return
    if guest.env.name != host.env.name:
        raise UsageError(f"{flag}={_label(guest)} trained on env={guest.env.name}; {_label(host)} on {host.env.name}")
    for name in hook(host.env, "game_settings"):
        mine, theirs = getattr(host.env, name), getattr(guest.env, name)
        if mine != theirs:
            raise UsageError(
                f"{flag}={_label(guest)} trained with {name}={theirs}; {_label(host)} with {name}={mine}:"
                f" head-to-head games need one {name}"
            )
    if not _same_game(host.env, guest.env):
        raise UsageError(f"{flag}={_label(guest)} plays another game than {_label(host)}: their states differ")


def _table(a: Player, b: Player, games: int, max_steps: int | None, host: Player | None = None):
    """(rules, env params, a's seats (games, seats), step limit) of a pair's games at the first run's table
    (`host`'s for two bots)."""
    check_pair(a, b)
    first = next((p for p in (a, b, host) if p is not None and p.env is not None), None)
    if first is None:
        raise UsageError("two bots or HTTP snakes need a run or shelf agent to set their table (its env): give one")
    for p in (a, b):
        check_pair(first, p)
    rules = table_of(first.env, first.name)
    params = table_params(rules, jax.tree.map(jnp.asarray, first.env_params))
    steps = int(params.max_steps_in_episode) if max_steps is None else int(max_steps)
    seats = jnp.arange(hook(rules, "num_seats"))
    mine = (seats[None, :] + jnp.arange(games)[:, None]) % 2 == 0  # (games, seats): a's seats
    return rules, params, mine, steps


def play_pair(
    a: Player, b: Player, games: int = 1000, seed: int = 0, max_steps: int | None = None, host: Player | None = None
) -> dict[str, Any]:
    """`games` games of `a` against `b` (seats rotated; two bots at `host`'s table); wins, draws, placements."""
    rules, params, mine, steps = _table(a, b, games, max_steps, host)
    if a.url or b.url:
        marks = {p.name: p.asked.answers.mark() for p in (a, b) if p.asked is not None}
        out = hosted_games(rules, params, a, b, np.asarray(mine), steps, seed)
        latency = {p.name: p.asked.answers.summary(marks[p.name]) for p in (a, b) if p.asked is not None}
        return {**_pair_result(a, b, games, seed, out), "latency": latency}

    def run(key: jax.Array, weights: Any, params: Any, mine: jax.Array) -> dict[str, jax.Array]:
        start, advance, finish = _game(rules, params, a, b, weights, mine, games, steps)
        end = jax.lax.while_loop(lambda c: ~jnp.all(c["over"]) & (c["t"] < steps), advance, start(key))
        return finish(end)

    # The weights and rules are arguments, not constants: pairs of runs with one architecture (a rating's
    # round robin, another seed) compile one program, which the persistent compilation cache then serves.
    out = jax.device_get(jax.jit(run)(jax.random.key(seed), _weights(a, b), params, mine))
    return _pair_result(a, b, games, seed, out)


def _pair_result(a: Player, b: Player, games: int, seed: int, out: dict[str, Any]) -> dict[str, Any]:
    """A pair's figures from its games' outcomes (a_won, b_won, over, length, a_place, b_place per game)."""
    a_won, b_won = np.asarray(out["a_won"]), np.asarray(out["b_won"])
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
        "unfinished": int((~np.asarray(out["over"])).sum()),
        "mean_length": float(out["length"].mean()),
        "seed": seed,
    }


def record_game(
    a: Player, b: Player, seed: int = 0, max_steps: int | None = None, host: Player | None = None
) -> tuple[np.ndarray, list[str]]:
    """Frames (steps, H, W, 3) of one game of `a` (seats 0, 2, ...: A) against `b` (seats 1, 3, ...: B) and a
    caption per frame: each side's seats by their mark (the arena: the colour's initial) with their lengths
    (x once out), e.g. "t40 A g5 o4 | B b7 px", and at the end the result."""
    rules, params, mine, steps = _table(a, b, 1, max_steps, host)
    if a.url or b.url:
        out = hosted_games(rules, params, a, b, np.asarray(mine), steps, seed, record=True)
        frames, states, over = out["frames"], out["states"], np.ones(len(out["frames"]), bool)
        return _captioned(rules, frames, states, np.asarray(mine[0]), out, len(frames))

    def run(key: jax.Array, weights: Any, params: Any, mine: jax.Array):
        start, advance, finish = _game(rules, params, a, b, weights, mine, 1, steps)
        shown = lambda c: (rules.render_rgb(jax.tree.map(lambda x: x[0], c["state"])), c["over"][0], c["state"])

        def body(c, _):
            c = advance(c)
            return c, shown(c)

        c0 = start(key)
        end, rest = jax.lax.scan(body, c0, None, length=steps)
        frames = jax.tree.map(lambda x, y: jnp.concatenate([x[None], y]), shown(c0), rest)
        return frames, finish(end)

    (frames, over, states), out = jax.device_get(jax.jit(run)(jax.random.key(seed), _weights(a, b), params, mine))
    shown = int(np.argmax(over)) + 1 if over.any() else len(over)  # up to the frame where the game ended
    states = [jax.tree.map(lambda x, t=t: x[t][0], states) for t in range(shown)]
    return _captioned(rules, frames, states, np.asarray(mine[0]), out, shown)


def _captioned(rules: Any, frames: Any, states: list, side_of: np.ndarray, out: dict, shown: int):
    """(frames, captions) of a recorded game: each side's seats by mark and length, the result at the end."""
    result = "A wins" if out["a_won"][0] else "B wins" if out["b_won"][0] else "draw"
    captions = []
    for t in range(shown):
        seats = hook(rules, "seat_status")(states[t])
        side = lambda ours, seats=seats: " ".join(
            f"{s.get('mark', k)}{s.get('length', '') if s.get('alive', True) else 'x'}"
            for k, s in enumerate(seats)
            if bool(side_of[k]) == ours
        )
        captions.append(f"t{t} A {side(True)} | B {side(False)}" + (f" | {result}" if t == shown - 1 else ""))
    return np.asarray(frames[:shown]), captions


def hosted_games(
    rules: Any, params: Any, a: Player, b: Player, mine: np.ndarray, steps: int, seed: int, record: bool = False
) -> dict[str, Any]:
    """Games of a pair with an HTTP snake in it, stepped on the host (`trained/hosted.py`: the snake answers
    between steps, as the engine asks it) by the same rules, seats and end as the compiled games: a_won, b_won,
    over, length, a_place, b_place per game (and each turn's frames and states when `record`)."""
    from concurrent.futures import ThreadPoolExecutor

    from jaxrl.trained.hosted import Host

    games, seats = mine.shape
    host = Host(rules, params)
    side_a, side_b = _hosted_player(a, rules, seats), _hosted_player(b, rules, seats)

    def one(g: int) -> dict[str, Any]:
        holders = [side_a if mine[g, k] else side_b for k in range(seats)]
        game = {"id": f"jaxrl-h2h-{seed}-{g}", "timeout": TIMEOUT_MS}
        key = jax.random.fold_in(jax.random.key(seed), g)
        played = host.play(holders, key, steps, game, sides=mine[g], record=record)
        place = played["place"]
        best = lambda m: place[m].min() if m.any() else np.inf
        out = {
            "a_won": best(mine[g]) < best(~mine[g]),
            "b_won": best(~mine[g]) < best(mine[g]),
            "over": True,
            "length": played["length"],
            "a_place": place[mine[g]].mean(),
            "b_place": place[~mine[g]].mean(),
        }
        return {**out, "frames": played["frames"], "states": played["states"]} if record else out

    with ThreadPoolExecutor(max_workers=min(games, 8)) as pool:
        played = list(pool.map(one, range(games)))
    if record:
        return {**played[0], **{k: np.array([played[0][k]]) for k in ("a_won", "b_won")}}
    return {k: np.array([r[k] for r in played]) for k in ("a_won", "b_won", "over", "length", "a_place", "b_place")}


def _hosted_player(p: Player, rules: Any, seats: int) -> Any:
    """Player `p` at a hosted table: its HTTP snake, asked seat by seat, or a `Compiled` acting in every seat
    (a run's policy as it sees the table, a bot)."""
    from jaxrl.trained.hosted import Compiled

    if p.asked is not None:
        return p.asked
    if p.bot is not None:
        bot = jax.jit(lambda key, state: hook(rules, "bot_actions")(key, state, p.bot))
        return Compiled(p.name, lambda state, carry, key: (carry, bot(key, state)))
    eyes = hook(p.env, "table")(seats)
    policy = jax.jit(lambda w, c, s, k: p.policy.apply(w, c, hook(eyes, "seat_obs")(s), k))
    act = lambda state, carry, key: policy(p.policy.params, carry, state, key)
    return Compiled(p.name, act, p.policy.initial_carry(seats))


def _weights(a: Player, b: Player) -> tuple[Any, Any]:
    """Each side's network weights (None for a bot)."""
    return tuple(None if p.bot is not None else p.policy.params for p in (a, b))


def _actions(p: Player, weights: Any, rules: Any, state: Any, carry: Any, key: jax.Array) -> tuple[Any, jax.Array]:
    """(carry, (games, seats) actions) of player `p` (network `weights`) for every seat of every game."""
    seats = hook(rules, "num_seats")
    games = jax.tree.leaves(state)[0].shape[0]
    if p.bot is not None:
        keys = jax.random.split(key, games)
        return carry, jax.vmap(lambda k, s: hook(rules, "bot_actions")(k, s, p.bot))(keys, state)
    eyes = hook(p.env, "table")(seats)  # the table as this run sees it (its own view)
    obs = jax.vmap(hook(eyes, "seat_obs"))(state)
    carry, action = p.policy.apply(weights, carry, obs.reshape(games * seats, *obs.shape[2:]), key)
    return carry, action.reshape(games, seats).astype(jnp.int32)


def _game(rules, params, a: Player, b: Player, weights: tuple[Any, Any], mine: jax.Array, games: int, steps: int):
    """(start(key) -> c, advance(c) -> c, finish(c) -> results) of `games` games of a against b (their
    network `weights`), one per world."""
    seats = hook(rules, "num_seats")
    live_of = lambda state: jax.vmap(hook(rules, "seat_alive"))(state)

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
            "returns": jnp.zeros((games, seats), jnp.float32),
            "length": jnp.zeros(games, jnp.int32),
            "carry_a": carry0(a),
            "carry_b": carry0(b),
        }

    def advance(c: dict[str, Any]) -> dict[str, Any]:
        key, ka, kb, ks = jax.random.split(c["key"], 4)
        carry_a, act_a = _actions(a, weights[0], rules, c["state"], c["carry_a"], ka)
        carry_b, act_b = _actions(b, weights[1], rules, c["state"], c["carry_b"], kb)
        action = jnp.where(mine, act_a, act_b)
        _, new, reward, terminated, _ = jax.vmap(rules.step_env, in_axes=(0, 0, 0, None))(
            jax.random.split(ks, games), c["state"], action, params
        )
        live = ~c["over"]
        state = jax.tree.map(lambda n, o: jnp.where(live.reshape((-1,) + (1,) * (n.ndim - 1)), n, o), new, c["state"])
        alive = live_of(state)
        a_left, b_left = jnp.any(alive & mine, axis=1), jnp.any(alive & ~mine, axis=1)
        ends = live & (~a_left | ~b_left | terminated | (c["t"] + 1 >= steps))
        return {
            "t": c["t"] + 1,
            "key": key,
            "state": state,
            "over": c["over"] | ends,
            "returns": c["returns"] + jnp.where(live[:, None], reward.reshape(games, seats), 0.0),
            "length": c["length"] + live,
            "carry_a": carry_a,
            "carry_b": carry_b,
        }

    def finish(c: dict[str, Any]) -> dict[str, jax.Array]:
        place = jax.vmap(hook(rules, "seat_placement"))(c["state"], c["returns"])
        best = lambda m: jnp.min(jnp.where(m, place, jnp.inf), axis=1)
        side = lambda m: jnp.sum(place * m, axis=1) / jnp.maximum(jnp.sum(m, axis=1), 1)
        return {
            "a_won": c["over"] & (best(mine) < best(~mine)),
            "b_won": c["over"] & (best(~mine) < best(mine)),
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
    from jaxrl.run.loggers import write_json
    from jaxrl.trained.evaluation import _keep_previous, save_gif

    if not opponents:
        raise UsageError("vs= needs an opponent: a run directory, pretrained:NAME or one of the env's bots")
    me = player(f"{run.run_dir}@{step}" if step is not None else run, load, flag="run_dir")
    others = [player(spec, load, bots=hook(table_of(me.env, "run_dir"), "bot_kinds")) for spec in opponents]
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
    for p in result["pairs"]:
        for line in latency_lines(p.get("latency", {})):
            print(line)
    if result.get("replay"):
        print(f"replay of one game against {result['pairs'][-1]['b']}: {result['replay']}")
