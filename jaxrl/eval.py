"""Evaluation, one path for the CLI and the Python API: play a run's policy on device, report, replay.

`python -m jaxrl.eval run_dir=DIR [episodes=100] [greedy=true] ...` and `Run.evaluate()` load
the newest readable checkpoint (or `step=N`), play `episodes` episodes per seed in one
compiled loop, report mean/median/max return (and score for Snake and the grid), write
`eval.json` and, for envs that draw themselves (Snake, the grid), `replay.gif` of the best
episode, re-simulated exactly. `render=terminal` plays that episode in the terminal instead.
With several agents per world an episode's return is the world's (the sum over its agents);
`return_per_agent` is beside it.

`play` and `record` act through the algorithm's stateful policy `(params, carry, obs, key) ->
(carry, action)`, so a recurrent policy evaluates with the same code.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envs.base import GIF_PIXELS, upscale
from jaxrl.algorithm import PolicyFn
from jaxrl.checkpoint import CheckpointError
from jaxrl.cli_config import UsageError
from jaxrl.config import ConfigError
from jaxrl.runlog import write_json

USAGE = """usage: python -m jaxrl.eval run_dir=DIR [key=value ...]

  run_dir=DIR          a run directory written by python -m jaxrl.train
  episodes=100         episodes per seed
  greedy=true          greedy actions (false: sample the policy / DQN's final epsilon)
  step=N               checkpoint to load (env steps per seed); default the newest readable one
  seed=0               evaluation seed
  render=gif           gif: replay.gif of the best episode | terminal: play it in the terminal | none
  fps=10               frames per second of the replay
  out=PATH             where the GIF goes (default RUN_DIR/replay.gif)
"""

DEFAULTS: dict[str, Any] = {
    "run_dir": None,
    "episodes": 100,
    "greedy": True,
    "step": None,
    "seed": 0,
    "render": "gif",
    "fps": 10,
    "out": None,
}
RENDERS = ("gif", "terminal", "none")


def parse_args(argv: list[str]) -> dict[str, Any]:
    """key=value arguments checked against DEFAULTS; UsageError naming the bad one."""
    args = dict(DEFAULTS)
    for item in argv:
        key, eq, value = item.partition("=")
        if not eq:
            raise UsageError(f"bad argument '{item}': expected key=value (see `python -m jaxrl.eval --help`)")
        if key not in DEFAULTS:
            raise UsageError(f"unknown setting '{key}'; valid: {', '.join(DEFAULTS)}")
        args[key] = value
    if args["run_dir"] is None:
        raise UsageError("run_dir=DIR is required (a directory written by python -m jaxrl.train)")
    for key, low in (("episodes", 1), ("seed", 0), ("fps", 1), ("step", 0)):
        if args[key] is None:
            continue
        try:
            args[key] = int(args[key])
        except ValueError:
            raise UsageError(f"{key}={args[key]} is invalid: must be an integer") from None
        if args[key] < low:
            raise UsageError(f"{key}={args[key]} is invalid: must be >= {low}")
    greedy = str(args["greedy"]).lower()
    if greedy not in ("true", "false"):
        raise UsageError(f"greedy={args['greedy']} is invalid: allowed true, false")
    args["greedy"] = greedy == "true"
    if args["render"] not in RENDERS:
        raise UsageError(f"render={args['render']} is invalid: allowed {', '.join(RENDERS)}")
    return args


def describe(values: np.ndarray) -> dict[str, float]:
    return {"mean": float(np.mean(values)), "median": float(np.median(values)), "max": float(np.max(values))}


def save_gif(frames: np.ndarray, path: Path, fps: int) -> None:
    from PIL import Image

    images = [Image.fromarray(f) for f in upscale(frames, GIF_PIXELS)]
    tmp = path.with_suffix(".tmp.gif")
    images[0].save(tmp, save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0)
    tmp.replace(path)


def default_max_steps(env_params: Any) -> int:
    """The env's own episode limit, else a generous guard."""
    return int(getattr(env_params, "max_steps_in_episode", 100_000))


def _start(env: Any, env_params: Any, key: jax.Array, num_episodes: int, carry: Any) -> dict[str, Any]:
    reset_key, key = jax.random.split(key)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, num_episodes), env_params)
    zeros = jnp.zeros(num_episodes, jnp.float32)
    return {
        "t": jnp.zeros((), jnp.int32),
        "key": key,
        "obs": obs,
        "state": state,
        "alive": jnp.ones(num_episodes, bool),
        "return": zeros,
        "length": jnp.zeros(num_episodes, jnp.int32),
        "score": zeros,
        "carry": carry,
    }


def _advance(env: Any, env_params: Any, policy: PolicyFn, params: Any, c: dict[str, Any]) -> dict[str, Any]:
    """Every env steps once; episodes that already ended stop counting."""
    num_episodes = c["alive"].shape[0]
    agents = int(getattr(env, "num_agents", 1))
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
    score = jnp.where(ended, info["score"].astype(jnp.float32), c["score"]) if "score" in info else c["score"]
    return {
        "t": c["t"] + 1,
        "key": key,
        "obs": obs,
        "state": state,
        "alive": alive & ~ended,
        "return": c["return"] + jnp.where(alive, reward, 0.0),
        "length": c["length"] + alive,
        "score": score,
        "carry": carry,
    }


def reports_score(env: Any, env_params: Any) -> bool:
    """Whether the env's step info carries a `score` (checked on shapes only)."""

    def probe(key: jax.Array):
        _, state = env.reset(key, env_params)
        return env.step(key, state, env.action_space(env_params).sample(key), env_params)[-1]

    return "score" in jax.eval_shape(probe, jax.random.key(0))


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
    {"return", "length", "finished"} and "score" when the env reports one, each (num_episodes,).
    """
    max_steps = default_max_steps(env_params) if max_steps is None else int(max_steps)
    out = jax.lax.while_loop(
        lambda c: c["alive"].any() & (c["t"] < max_steps),
        lambda c: _advance(env, env_params, policy, params, c),
        _start(env, env_params, key, num_episodes, carry),
    )
    result = {"return": out["return"], "length": out["length"], "finished": ~out["alive"]}
    return {**result, "score": out["score"]} if reports_score(env, env_params) else result


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
) -> jax.Array:
    """Frames `render(state)` (any pytree) of episode `index` of the same `play(...)` call (same key, batch
    and policy), one per step.

    `length` is that episode's length from `play`; the frames show the state before each of
    its `length` actions (the auto-reset after the last one is not shown).
    """
    pick = lambda c: render(jax.tree.map(lambda x: x[index], c["state"]))

    def step(c, _):
        c = _advance(env, env_params, policy, params, c)
        return c, pick(c)

    c = _start(env, env_params, key, num_episodes, carry)
    first = pick(c)
    _, rest = jax.lax.scan(step, c, None, length=max(length - 1, 0))
    return jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, rest)


def evaluate(
    run: Any,
    episodes: int = 100,
    greedy: bool = True,
    seed: int = 0,
    step: int | None = None,
    render: str = "gif",
    fps: int = 10,
    out: str | Path | None = None,
) -> dict[str, Any]:
    """Play `episodes` episodes per seed of a run's checkpoint (`jaxrl.api.Run`), write eval.json (and the
    replay); the figures as a dict. CheckpointError when `step` has no checkpoint."""
    if out is not None and Path(out).expanduser().is_dir():
        raise UsageError(f"out={out} is a directory: give the GIF's file name, e.g. out={Path(out) / 'replay.gif'}")
    step, runner, program = run.restore(step)
    env, algo, cfg = program.env, program.algo, run.config
    keys = jax.random.split(jax.random.key(seed), cfg.num_seeds)
    # The env params the agent trained with last (a curriculum's final phase), carried in the runner.
    env_params = jax.tree.map(lambda x: np.asarray(x[0]), runner.envs.params)
    policy, params = program.policy(greedy), algo.policy_params(runner)  # at the run's precision
    carry = algo.initial_carry(episodes * program.agents_per_world)

    def one_seed(p, e, k):
        return play(env, e, policy, p, k, episodes, default_max_steps(env_params), carry)

    t0 = time.perf_counter()
    played = jax.device_get(jax.jit(jax.vmap(one_seed))(params, runner.envs.params, keys))  # (seeds, episodes)
    result = figures(played, cfg, step, episodes, greedy, seed, program.agents_per_world)
    result.update(run_dir=str(run.run_dir), seconds=time.perf_counter() - t0)
    best_seed, best = result["best"]["seed"], result["best"]["episode"]
    drawer = {"gif": "render_rgb", "terminal": "render_text"}.get(render)
    if drawer is not None and hasattr(env, drawer):
        seed_params = jax.tree.map(lambda x: x[best_seed], params)
        length = result["best"]["length"]
        draw = env.render_rgb if render == "gif" else (lambda s: s)  # states, drawn as text below
        replay = lambda k: record(env, env_params, policy, seed_params, k, episodes, best, length, draw, carry)
        frames = jax.device_get(jax.jit(replay)(keys[best_seed]))
        if render == "gif":
            path = Path(out).expanduser() if out else run.run_dir / "replay.gif"
            _keep_previous(path)
            save_gif(np.asarray(frames), path, fps)
            result["replay"] = str(path)
        else:
            play_in_terminal(env, frames, length, fps)
    elif drawer is not None:
        result["replay"] = None
        how = "as a picture" if render == "gif" else "as text"
        print(f"note: {cfg.env.name} does not draw itself {how}; no replay", file=sys.stderr)
    _keep_previous(run.run_dir / "eval.json")
    try:
        write_json(run.run_dir / "eval.json", result)
    except OSError as e:
        raise UsageError(f"{run.run_dir / 'eval.json'} cannot be written ({e.strerror or e})") from None
    return result


def _keep_previous(path: Path) -> None:
    """Keep an earlier evaluation's file under a dated name, and say so; UsageError when it cannot be written."""
    from jaxrl.rundir import keep_previous

    try:
        kept = keep_previous(path)
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{path} cannot be written ({e.strerror or e})") from None
    if kept is not None:
        print(f"note: the previous {path.name} is kept as {kept}", file=sys.stderr)


def figures(
    out: dict[str, np.ndarray], cfg: Any, step: int, episodes: int, greedy: bool, seed: int, agents: int
) -> dict[str, Any]:
    """eval.json's figures from `play`'s per-episode arrays (seeds, episodes)."""
    result: dict[str, Any] = {
        "checkpoint_step": step,
        "env": cfg.env.name,
        "algo": cfg.algo.name,
        "episodes_per_seed": episodes,
        "greedy": greedy,
        "seed": seed,
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
    score = out.get("score", np.zeros_like(out["return"]))
    order = np.lexsort((score.ravel(), out["return"].ravel()))  # best return, then best score
    seed_index, index = np.unravel_index(order[-1], out["return"].shape)
    best = {
        "seed": int(seed_index),
        "episode": int(index),
        "return": float(out["return"][seed_index, index]),
        "length": int(out["length"][seed_index, index]),
    }
    if "score" in out:
        best["score"] = float(out["score"][seed_index, index])
    result["best"] = best
    return result


def play_in_terminal(env: Any, states: Any, length: int, fps: int) -> None:
    import jax

    for t in range(length):
        board = env.render_text(jax.tree.map(lambda x, t=t: x[t], states))
        sys.stdout.write("\x1b[H\x1b[2J" if sys.stdout.isatty() else "\n")
        sys.stdout.write(f"step {t + 1}/{length}\n{board}\n")
        sys.stdout.flush()
        time.sleep(1.0 / fps)


def report(result: dict[str, Any]) -> None:
    r = result["return"]
    label = f"world return ({result['agents_per_world']} agents)" if "return_per_agent" in result else "return"
    line = f"{label} mean {r['mean']:.2f} | median {r['median']:.2f} | max {r['max']:.2f}"
    if "return_per_agent" in result:
        line += f" || per agent mean {result['return_per_agent']['mean']:.2f}"
    if "score" in result:
        s = result["score"]
        line += f" || score mean {s['mean']:.2f} | median {s['median']:.2f} | max {s['max']:.2f}"
    mode = "greedy" if result["greedy"] else "sampled"
    print(
        f"{result['env']} {result['algo']} checkpoint {result['checkpoint_step']:,} steps: "
        f"{result['episodes_per_seed']} {mode} episodes x {len(result['return_per_seed'])} seeds "
        f"in {result['seconds']:.1f}s"
    )
    print(line)
    if len(result["return_per_seed"]) > 1:
        print("per seed return: " + " ".join(f"{v:.2f}" for v in result["return_per_seed"]))
    if result["unfinished"]:
        print(f"note: {result['unfinished']} episodes hit the step limit of this evaluation and were cut")
    if result.get("replay"):
        print(f"replay of the best episode (return {result['best']['return']:.2f}): {result['replay']}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help", "help") for a in argv):
        print(USAGE)
        return 0
    try:
        args = parse_args(argv)
        from jaxrl.api import load

        run = load(args.pop("run_dir"))
        result = evaluate(run, **args)
    except (UsageError, ConfigError, CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    report(result)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
