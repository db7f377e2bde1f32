"""Evaluation, one path for the CLI and the Python API: play a run's policy on device, report, replay.

`python -m jaxrl.eval RUN_DIR [episodes=100] [greedy=true] ...` and `Run.evaluate()` load
the newest readable checkpoint (or `step=N`), play `episodes` episodes per seed in one
compiled loop, report the figures, write `eval.json` and, for envs that draw themselves
(Snake, the grid), `replay.gif` of the best episode (best return, then best score),
re-simulated exactly. `render=terminal` plays that episode in the terminal instead.
With several agents per world an episode's return is the world's (the sum over its agents);
`return_per_agent` is beside it.

The env params played with are the ones the agent trained with last (a curriculum's final
phase), passed through the env's `eval_params(params) -> params` where it has one: Snake's
raises `hunger_limit` to at least size * size, so that hunger cannot cut a legal game short,
and turns reward shaping off; the arena's plays every game at the full table of `num_bots` bots.

eval.json (all figures over every seed's episodes):
- `return`, `length`, and `score` for envs whose step info reports one (Snake's apples, the
  grid's collected items): {"mean", "median", "min", "max"}; `return_per_seed`, `score_per_seed`.
- `score_histogram`: {"bins": [min .. max score, every integer], "counts": [episodes per bin]}
  (`plt.bar(h["bins"], h["counts"])`); non-integer scores get one bin per distinct value.
- `wins`, `win_rate` and `win_rate_per_seed` for envs whose info reports `won` (Snake: a full board; the
  arena: a learner is the last snake).
- `placement` {"mean", ...} and `placement_histogram` (the arena: 1 = last snake standing), and `kills`, for envs
  whose info reports them.
- `unfinished`: episodes cut by the env's step limit; `best`: the replayed episode (seed,
  episode, return, length, score, won).
- `env_params`: the env params' scalar fields played with (a list where seeds differ) and
  `env_params_changed`: {field: {"trained", "evaluated"}} for what `eval_params` changed.
- `checkpoint_step`, `env`, `algo`, `episodes_per_seed`, `greedy`, `seed`, `run_dir`,
  `seconds`, and `replay` (the GIF's path).
- A sweep's run (`jaxrl.config.sweep`) plays one member's seeds (`member=K`, default the best member in
  summary.json): `member` and its `settings` are added.

The GIF's frames show the board with a strip below it: the step, the score so far (the return
so far for envs without a score) and, on the last frame, the episode's end ("score 12 -> 13
(won)"); the terminal replay prints the same line above each board.

`play` and `record` act through the algorithm's stateful policy `(params, carry, obs, key) ->
(carry, action)`, so a recurrent policy evaluates with the same code.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.algos.base import PolicyFn
from jaxrl.config.compose import UsageError
from jaxrl.envs.base import hook, offers
from jaxrl.envs.render import GIF_PIXELS, upscale
from jaxrl.run.loggers import write_json
from jaxrl.trained.episodes import KeyChain

# Step info keys that describe the episode, carried to its end when the env has them: `won` holds once set; the
# others keep their value from the episode's last step (the arena's `placement` and `kills`: the learners' mean
# placement and their kills).
EPISODE_INFO = ("score", "won", "placement", "kills", "cause")


STRIP_PIXELS = 28  # height of the caption strip below the GIF's board


STRIP_BACKGROUND, STRIP_INK = (48, 48, 48), (235, 235, 235)  # grey: the strip stands apart from a black board


def describe(values: np.ndarray) -> dict[str, float]:
    """Mean, median, min and max of per-episode values."""
    return {
        "mean": float(np.mean(values)),
        "median": float(np.median(values)),
        "min": float(np.min(values)),
        "max": float(np.max(values)),
    }


def histogram(scores: np.ndarray) -> dict[str, list]:
    """{"bins", "counts"}: every integer from the lowest to the highest score (one bin per distinct
    value where scores are not whole), and how many episodes ended with it."""
    scores = np.asarray(scores).ravel()
    if np.all(scores == np.round(scores)):
        low, high = int(scores.min()), int(scores.max())
        counts = np.bincount((scores - low).astype(np.int64), minlength=high - low + 1)
        return {"bins": list(range(low, high + 1)), "counts": counts.tolist()}
    bins, counts = np.unique(scores, return_counts=True)
    return {"bins": bins.tolist(), "counts": counts.tolist()}


def caption_strip(text: str, width: int) -> np.ndarray:
    """(STRIP_PIXELS, width, 3) uint8: one line of text in Pillow's bitmap font, doubled where it fits."""
    from PIL import Image, ImageDraw, ImageFont

    font = getattr(ImageFont, "load_default_imagefont", ImageFont.load_default)()  # bitmap: no anti-aliasing
    _, _, right, bottom = ImageDraw.Draw(Image.new("RGB", (1, 1))).textbbox((0, 0), text, font=font)
    scale = 2 if 2 * right + 8 <= width else 1
    small = Image.new("RGB", (-(-width // scale), STRIP_PIXELS // scale), STRIP_BACKGROUND)
    ImageDraw.Draw(small).text((4 // scale, (STRIP_PIXELS // scale - bottom) // 2), text, font=font, fill=STRIP_INK)
    return np.asarray(small).repeat(scale, axis=0).repeat(scale, axis=1)[:, :width]


def save_gif(frames: np.ndarray, path: Path, fps: int, captions: list[str] | None = None) -> None:
    """The frames upscaled to about GIF_PIXELS, each with its caption in a strip below the board."""
    from PIL import Image

    boards = upscale(frames, GIF_PIXELS)
    if captions is not None:
        boards = [np.concatenate([b, caption_strip(c, b.shape[1])]) for b, c in zip(boards, captions, strict=True)]
    images = [Image.fromarray(b) for b in boards]
    tmp = path.with_suffix(".tmp.gif")
    images[0].save(tmp, save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0)
    tmp.replace(path)


def captions(progress: dict[str, np.ndarray], best: dict[str, Any]) -> list[str]:
    """One line per frame of the best episode: the step and the score (else the return) so far; the
    last line adds the episode's end, which no frame shows (the step that ends it also resets)."""
    length = best["length"]
    name = "score" if "score" in best else "return"
    number = (lambda v: f"{v:g}") if name == "score" else (lambda v: f"{v:.2f}")
    lines = [f"step {t + 1}/{length}   {name} {number(progress[name][t])}" for t in range(length)]
    lines[-1] += f" -> {number(best[name])}" + (" (won)" if best.get("won") else "")
    return lines


def default_max_steps(env_params: Any) -> int:
    """The env's own episode limit, else a generous guard."""
    return int(getattr(env_params, "max_steps_in_episode", 100_000))


def params_for_eval(env: Any, trained: Any) -> Any:
    """The env params to play with, per seed: the env's `eval_params` of the trained ones, where it has one."""
    if not offers(env, "eval_params"):
        return trained
    evaluated = jax.vmap(env.eval_params)(trained)
    return jax.tree.map(lambda new, old: jnp.asarray(new, old.dtype), evaluated, trained)  # dtypes as trained


def scalar_fields(params: Any) -> dict[str, Any]:
    """The scalar fields of per-seed env params as plain numbers for eval.json (a list where seeds differ)."""
    if not dataclasses.is_dataclass(params):
        return {}
    out = {}
    for field in dataclasses.fields(params):
        values = np.asarray(getattr(params, field.name))
        if values.ndim != 1:  # (seeds,) only: array-valued params are not figures
            continue
        # str() of a float32 is its shortest form: 0.99, not 0.9900000095367432.
        plain = [v.item() if values.dtype.kind in "biu" else float(str(v)) for v in values]
        out[field.name] = plain[0] if all(v == plain[0] for v in plain) else plain
    return out


def _start(env: Any, env_params: Any, key: jax.Array, num_episodes: int, carry: Any) -> dict[str, Any]:
    reset_key, key = jax.random.split(key)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, num_episodes), env_params)
    zeros = jnp.zeros(num_episodes, jnp.float32)
    one = env.action_space(env_params).sample(reset_key)  # one world's action: its shape and dtype
    return {
        "t": jnp.zeros((), jnp.int32),
        "key": key,
        "obs": obs,
        "state": state,
        "alive": jnp.ones(num_episodes, bool),
        "return": zeros,
        "length": jnp.zeros(num_episodes, jnp.int32),
        "score": zeros,
        "placement": zeros,
        "kills": zeros,
        "cause": jnp.zeros(num_episodes, jnp.int32),
        "won": jnp.zeros(num_episodes, bool),
        "carry": carry,
        "action": jnp.zeros((num_episodes, *one.shape), one.dtype),  # the last step's, for episode files
    }


def _advance(env: Any, env_params: Any, policy: PolicyFn, params: Any, c: dict[str, Any]) -> dict[str, Any]:
    """Every env steps once; episodes that already ended stop counting."""
    num_episodes = c["alive"].shape[0]
    agents = int(hook(env, "num_agents"))
    key, act_key, step_key = jax.random.split(c["key"], 3)
    obs = c["obs"]
    if agents > 1:  # every agent acts with the shared policy; the world's return sums theirs
        obs = obs.reshape((num_episodes * agents, *obs.shape[2:]))
    carry, action = policy(params, c["carry"], obs, act_key)
    if agents > 1:
        action = action.reshape(num_episodes, agents)
    obs, state, reward, terminated, truncated, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
        jax.random.split(step_key, num_episodes), c["state"], action, env_params
    )
    alive = c["alive"]
    reward = reward.reshape(num_episodes, -1).sum(axis=1)
    ended = alive & (terminated | truncated)
    # The info of a live episode's step describes it (before any reset): the score so far, the final one at its end.
    last = {
        name: jnp.where(alive, info[name].astype(c[name].dtype), c[name]) if name in info else c[name]
        for name in ("score", "placement", "kills", "cause")
    }
    won = c["won"] | (alive & info["won"]) if "won" in info else c["won"]
    return {
        "t": c["t"] + 1,
        "key": key,
        "obs": obs,
        "state": state,
        "alive": alive & ~ended,
        "return": c["return"] + jnp.where(alive, reward, 0.0),
        "length": c["length"] + alive,
        **last,
        "won": won,
        "carry": carry,
        "action": action.reshape(c["action"].shape).astype(c["action"].dtype),
    }


def episode_info(env: Any, env_params: Any) -> tuple[str, ...]:
    """Which of EPISODE_INFO (`score`, `won`) the env's step info carries (checked on shapes only)."""

    def probe(key: jax.Array):
        _, state = env.reset(key, env_params)
        return env.step(key, state, env.action_space(env_params).sample(key), env_params)[-1]

    info = jax.eval_shape(probe, jax.random.key(0))
    return tuple(name for name in EPISODE_INFO if name in info)


def play(
    env: Any,
    env_params: Any,
    policy: PolicyFn,
    params: Any,
    key: jax.Array,
    num_episodes: int,
    max_steps: int | None = None,
    carry: Any = None,
) -> dict[str, jax.Array]:
    """`num_episodes` episodes side by side, one env each, acting with `policy(params, carry, obs, key)`.

    `carry` is the policy's initial carry for every stream (None: feed-forward). Returns
    {"return", "length", "finished"}, and "score" and "won" where the env's info reports them,
    each (num_episodes,).
    """
    max_steps = default_max_steps(env_params) if max_steps is None else int(max_steps)
    out = jax.lax.while_loop(
        lambda c: c["alive"].any() & (c["t"] < max_steps),
        lambda c: _advance(env, env_params, policy, params, c),
        _start(env, env_params, key, num_episodes, carry),
    )
    result = {"return": out["return"], "length": out["length"], "finished": ~out["alive"]}
    return {**result, **{name: out[name] for name in episode_info(env, env_params)}}


def record(
    env: Any,
    env_params: Any,
    policy: PolicyFn,
    params: Any,
    key: jax.Array,
    num_episodes: int,
    index: int,
    length: int,
    render: Any,
    carry: Any = None,
) -> tuple[Any, dict[str, jax.Array]]:
    """Frames `render(state)` (any pytree) of episode `index` of the same `play(...)` call (same key, batch
    and policy), one per step, and its progress at each: {"return", "score"} so far and the "action" taken
    there, (length, ...).

    `length` is that episode's length from `play`; the frames show the state before each of
    its `length` actions (the auto-reset after the last one is not shown).
    """

    def step(c, _):
        progress = {"return": c["return"][index], "score": c["score"][index]}
        frame = render(jax.tree.map(lambda x: x[index], c["state"]))
        c = _advance(env, env_params, policy, params, c)
        return c, (frame, {**progress, "action": c["action"][index]})

    c = _start(env, env_params, key, num_episodes, carry)
    return jax.lax.scan(step, c, None, length=max(length, 1))[1]


def evaluate(
    run: Any,
    episodes: int = 100,
    greedy: bool = True,
    seed: int = 0,
    step: int | None = None,
    render: str = "gif",
    fps: int = 10,
    out: str | Path | None = None,
    member: int | None = None,
    opponents: str | None = None,
    num_bots: int | None = None,
) -> dict[str, Any]:
    """Play `episodes` episodes per seed of a run's checkpoint (`jaxrl.api.Run`), write eval.json (and the
    replay); the figures as a dict. CheckpointError when `step` has no checkpoint. In an env with bots of its own
    (the arena), `opponents` (a bot kind, a run directory or pretrained:NAME) and `num_bots` set who it plays."""
    if out is not None and Path(out).expanduser().is_dir():
        raise UsageError(f"out={out} is a directory: give the GIF's file name, e.g. out={Path(out) / 'replay.gif'}")
    step, runner, program = run.restore(step)
    env, cfg = program.env, run.config
    member = pick_member(run, program, member)
    runner = jax.tree.map(lambda x: x[member * cfg.num_seeds : (member + 1) * cfg.num_seeds], runner)
    algo = program.algorithm(program.member_hypers(member))
    keys = jax.random.split(jax.random.key(seed), cfg.num_seeds)
    # The env params the agent trained with last (a curriculum's final phase), carried in the runner, per seed.
    trained = runner.envs.params
    env_params = params_for_eval(env, trained)
    by_eval_params = scalar_fields(env_params)  # what the env's eval_params changed (the note below)
    env, env_params, against = with_opponents(env, env_params, opponents, num_bots)
    policy, params = program.policy(greedy, member), algo.policy_params(runner)  # at the run's precision
    carry = algo.initial_carry(episodes * program.agents_per_world)
    max_steps = default_max_steps(jax.tree.map(lambda x: np.asarray(x[0]), env_params))

    def one_seed(p, e, k):
        return play(env, e, policy, p, k, episodes, max_steps, carry)

    t0 = time.perf_counter()
    played = jax.device_get(jax.jit(jax.vmap(one_seed))(params, env_params, keys))  # (seeds, episodes)
    header = {"checkpoint_step": step, "env": cfg.env.name, "algo": cfg.algo.name, "episodes_per_seed": episodes}
    result = {**header, "greedy": greedy, "seed": seed, **figures(played, program.agents_per_world)}
    causes = getattr(env, "causes", None)  # an env that names why a player is out: how the first learner ended
    if causes and "cause" in played:
        codes = np.asarray(played["cause"]).ravel()
        result["ended_by"] = {
            name or "nothing (alive at the end)": int((codes == i).sum()) for i, name in enumerate(causes)
        }
    if program.sweep.keys:
        result.update(member=member, settings=program.sweep.members[member])
    result.update(against)
    result["env_params"] = scalar_fields(env_params)
    before = scalar_fields(trained)
    changed = {k: {"trained": before[k], "evaluated": v} for k, v in by_eval_params.items() if before.get(k) != v}
    if changed:
        result["env_params_changed"] = changed
    result.update(run_dir=str(run.run_dir), seconds=time.perf_counter() - t0)
    drawer = {"gif": "render_rgb", "html": "render_rgb", "terminal": "render_text"}.get(render)
    if drawer is not None and offers(env, drawer):
        best = result["best"]
        picture = env.render_rgb if drawer == "render_rgb" else (lambda s: s)  # states, drawn as text below
        draw = lambda s: (picture(s), s)
        replay = lambda k, p, e: record(env, e, policy, p, k, episodes, best["episode"], best["length"], draw, carry)
        seed_trees = [jax.tree.map(lambda x: x[best["seed"]], tree) for tree in (params, env_params)]
        (frames, states), progress = jax.device_get(jax.jit(replay)(keys[best["seed"]], *seed_trees))
        lines = captions(progress, best)
        if offers(env, "caption"):  # the env's own line per frame (the arena: every snake's length)
            lines = [
                f"{line}   {env.caption(jax.tree.map(lambda x, t=t: x[t], states))}" for t, line in enumerate(lines)
            ]
        if render == "terminal":
            play_in_terminal(env, frames, lines, fps)
        else:
            chain = KeyChain(seed, cfg.num_seeds, best["seed"], episodes, best["episode"])
            bots = against.get("opponents")
            bots = bots if bots not in (None, *hook(env, "bot_kinds")) else None
            episode = episode_of(cfg, seed_trees[1], chain, progress["action"], best, run_label(run), bots)
            title = f"jaxrl replay: {cfg.env.name}, {run_label(run)}, return {best['return']:.2f}"
            result.update(write_replays(frames, lines, fps, replay_paths(out, run.run_dir, render), episode, title))
    elif drawer is not None:
        result["replay"] = None
        how = "as text" if render == "terminal" else "as a picture"
        print(f"note: {cfg.env.name} does not draw itself {how}; no replay", file=sys.stderr)
    _keep_previous(run.run_dir / "eval.json")
    try:
        write_json(run.run_dir / "eval.json", result)
    except OSError as e:
        raise UsageError(f"{run.run_dir / 'eval.json'} cannot be written ({e.strerror or e})") from None
    return result


def run_label(run: Any) -> str:
    """A run as tables name it: pretrained:NAME, or its directory."""
    return getattr(run, "spec", None) or str(run.run_dir)


def replay_paths(out: str | Path | None, run_dir: Path, render: str) -> dict[str, Path]:
    """Where a replay's files go: {"gif", "html" (render=html), "episode"}, named after `out` (default
    RUN_DIR/replay.gif, or RUN_DIR/replay.html with render=html)."""
    suffix = ".html" if render == "html" else ".gif"
    main = Path(out).expanduser() if out else Path(run_dir) / f"replay{suffix}"
    paths = {"gif": main.with_suffix(".gif"), "episode": main.with_suffix(".json")}
    if render == "html":
        paths["html"] = main if main.suffix == ".html" else main.with_suffix(".html")
    return paths


def write_replays(
    frames: np.ndarray, lines: list[str], fps: int, paths: dict[str, Path], episode: Any, title: str
) -> dict:
    """The replay GIF, the HTML replay (when asked) and the episode file; what eval.json records of them."""
    from jaxrl.trained.html_replay import write_html

    for path in paths.values():
        _keep_previous(path)
    save_gif(np.asarray(frames), paths["gif"], fps, lines)
    written = {"replay": str(paths["gif"])}
    if "html" in paths:
        write_html(np.asarray(frames), lines, paths["html"], fps, title=title)
        written["replay_html"] = str(paths["html"])
    if episode is not None:
        try:
            episode.write(paths["episode"])
        except OSError as e:
            raise UsageError(f"{paths['episode']} cannot be written ({e.strerror or e})") from None
        written["episode_file"] = str(paths["episode"])
    return written


def episode_of(
    cfg: Any, env_params: Any, chain: Any, actions: Any, best: dict, who: str, bot_policy: str | None = None
) -> Any:
    """The best episode as an episode file holds it (`jaxrl.trained.episodes`): its keys, actions and result;
    `bot_policy`: the run whose policy drove the bots (opponents=RUN_DIR), named so that a replay loads it."""
    from jaxrl import envs
    from jaxrl.config.environment import env_settings
    from jaxrl.trained.episodes import Episode, plain_params

    values, dtypes = plain_params(jax.device_get(env_params))
    settings = {**env_settings(cfg), **({"bot_policy": bot_policy} if bot_policy else {})}
    agents = int(np.asarray(actions).reshape(len(actions), -1).shape[1])
    keep = ("return", "length", "score", "won")
    return Episode(
        env=cfg.env.name,
        env_version=envs.spec(cfg.env.name).version,
        env_settings=settings,
        env_params=values,
        env_param_dtypes=dtypes,
        key=chain,
        actions=np.asarray(actions).tolist(),
        seats=[who] * agents,
        result={k: best[k] for k in keep if k in best},
    )


def replay_file(path: str | Path, render: str = "gif", fps: int = 10, out: str | Path | None = None) -> dict:
    """An episode file stepped again with its recorded actions and drawn (`render=gif | html | terminal`) beside
    the file or at `out`; {"return", "length", "score", "won", "replay", ...}. A result that differs from the
    recorded one is said in a note (the env changed since)."""
    from jaxrl.trained import episodes

    episode = episodes.read(path)
    env, env_params = episodes.env_of(episode)
    if not offers(env, "render_rgb"):
        raise UsageError(f"{episode.env} does not draw itself as a picture; no replay")
    played = episodes.simulate(env, env_params, episode.key, episode.actions)
    length = len(episode.actions)
    got = {"return": float(played["return"][-1]), "length": length}
    if "score" in episode.result:
        got["score"] = float(played["score"][-1])
    if "won" in episode.result:
        got["won"] = bool(played["won"][-1])
    recorded = episode.result
    differs = [k for k in got if k in recorded and not np.isclose(float(got[k]), float(recorded[k]), atol=1e-4)]
    if differs:
        pairs = ", ".join(f"{k} {recorded[k]} -> {got[k]}" for k in differs)
        print(f"note: the replay differs from the recorded game ({pairs}): the env changed since", file=sys.stderr)
    progress = {"return": np.concatenate([[0.0], played["return"]]), "score": np.concatenate([[0.0], played["score"]])}
    if "score" not in got:
        progress["score"] = progress["return"]
    lines = captions(progress, got)
    frames = played["frames"][:length]
    result = {"episode_file": str(Path(path).expanduser()), **got}
    source = Path(path).expanduser()  # beside it as STEM.replay.gif: a saved game's own GIF stays as it is
    target = Path(out).expanduser() if out else source.with_name(f"{source.stem}.replay.gif")
    paths = {"gif": target.with_suffix(".gif")}
    if render == "html":
        paths["html"] = target.with_suffix(".html")
    title = f"jaxrl replay: {episode.env}, {Path(path).name}"
    result.update(write_replays(frames, lines, fps, paths, None, title))
    return result


def with_opponents(env: Any, env_params: Any, opponents: str | None, num_bots: int | None) -> tuple[Any, Any, dict]:
    """(env, per-seed env params, what eval.json records of them) with the env's own bots set (`set_bots`): one of
    its bot kinds or a run directory's greedy policy (`opponents`), and how many (`num_bots`); UsageError else."""
    if opponents is None and num_bots is None:
        return env, env_params, {}
    if not offers(env, "set_bots"):
        raise UsageError(
            f"opponents= and num_bots= apply to envs whose bots can be set (set_bots: the arena), not to {env.name}"
        )
    against: dict[str, Any] = {}
    kind, scripted = None, None
    if opponents is not None and offers(env, "with_script"):  # the step compiles the scripted kind (or mix) asked for
        try:
            scripted = env.with_script(opponents)
        except ValueError as e:
            if "+" in opponents:  # meant as a mix of scripted kinds
                raise UsageError(f"opponents={opponents} is invalid: {e}") from None
            scripted = None
    if opponents is not None and scripted is None and opponents not in hook(env, "bot_kinds"):
        if not offers(env, "with_bot_policy"):
            raise UsageError(
                f"opponents={opponents} is invalid: {env.name}'s bots are {', '.join(hook(env, 'bot_kinds'))};"
                " no policy drives them"
            )
        from jaxrl.errors import ConfigError
        from jaxrl.trained.frozen import frozen_policy
        from jaxrl.trained.shelf import is_pretrained

        path = opponents if is_pretrained(opponents) else Path(opponents).expanduser().resolve()
        if not is_pretrained(opponents) and not Path(path).is_dir():
            raise UsageError(
                f"opponents={opponents} is invalid: allowed {', '.join(hook(env, 'bot_kinds'))}, a run directory"
                " or pretrained:NAME"
            )
        try:
            policy = frozen_policy(str(path), env.name, env.observation_space().shape)
        except ConfigError as e:
            raise UsageError(str(e).replace("env.bot_policy=", "opponents=")) from None
        env, kind, opponents = env.with_bot_policy(policy), "policy", str(path)
    elif opponents is not None:
        kind, env = opponents, scripted or env
    try:
        env_params = env.set_bots(env_params, kind, num_bots)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if num_bots is not None:
        against["num_bots"] = num_bots
    if opponents is not None:
        against["opponents"] = opponents
    return env, env_params, against


def pick_member(run: Any, program: Any, member: int | None) -> int:
    """The sweep member to play: `member`, else the best one in summary.json; UsageError when out of range
    or when no summary says which is best."""
    size = program.sweep.size
    if member is None:
        if size == 1:
            return 0
        summary = run.summary
        if not summary or summary.get("best_member") is None:
            raise UsageError(
                f"{run.run_dir} is a sweep of {size} members with no summary.json yet: give member=0..{size - 1}"
            )
        return int(summary["best_member"])
    if not 0 <= member < size:
        have = "has no sweep (member=0 only)" if size == 1 else f"has {size} sweep members (member=0..{size - 1})"
        raise UsageError(f"member={member} is invalid: the run {have}")
    return member


def _keep_previous(path: Path) -> None:
    """Keep an earlier evaluation's file under a dated name, and say so; UsageError when it cannot be written."""
    from jaxrl.run.rundir import keep_previous

    try:
        kept = keep_previous(path)
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{path} cannot be written ({e.strerror or e})") from None
    if kept is not None:
        print(f"note: the previous {path.name} is kept as {kept}", file=sys.stderr)


def figures(out: dict[str, np.ndarray], agents: int = 1) -> dict[str, Any]:
    """eval.json's figures from `play`'s per-episode arrays (seeds, episodes)."""
    result: dict[str, Any] = {
        "return": describe(out["return"]),
        "length": describe(out["length"]),
        "return_per_seed": out["return"].mean(axis=1).tolist(),
        "unfinished": int((~out["finished"]).sum()),
    }
    if agents > 1:  # "return" is the world's (summed over its agents)
        result["agents_per_world"] = agents
        result["return_per_agent"] = describe(out["return"] / agents)
    if "score" in out:
        result["score"] = describe(out["score"])
        result["score_per_seed"] = out["score"].mean(axis=1).tolist()
        result["score_histogram"] = histogram(out["score"])
    if "won" in out:
        result["wins"] = int(out["won"].sum())
        result["win_rate"] = float(out["won"].mean())
        result["win_rate_per_seed"] = out["won"].mean(axis=1).tolist()
    if "placement" in out:
        result["placement"] = describe(out["placement"])
        result["placement_histogram"] = histogram(out["placement"])
    if "kills" in out:
        result["kills"] = describe(out["kills"])
    score = out.get("score", np.zeros_like(out["return"]))
    order = np.lexsort((score.ravel(), out["return"].ravel()))  # best return, then best score
    seed_index, index = np.unravel_index(order[-1], out["return"].shape)
    best = {
        "seed": int(seed_index),
        "episode": int(index),
        "return": float(out["return"][seed_index, index]),
        "length": int(out["length"][seed_index, index]),
    }
    for name, plain in (("score", float), ("won", bool)):
        if name in out:
            best[name] = plain(out[name][seed_index, index])
    result["best"] = best
    return result


def play_in_terminal(env: Any, states: Any, captions: list[str], fps: int) -> None:
    """The episode's boards as text, each under its caption line (step and score so far)."""
    for t, caption in enumerate(captions):
        board = env.render_text(jax.tree.map(lambda x, t=t: x[t], states))
        sys.stdout.write("\x1b[H\x1b[2J" if sys.stdout.isatty() else "\n")
        sys.stdout.write(f"{caption}\n{board}\n")
        sys.stdout.flush()
        time.sleep(1.0 / fps)
