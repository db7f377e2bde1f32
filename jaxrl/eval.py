"""`python -m jaxrl.eval run_dir=DIR [episodes=100] [greedy=true] ...`: play a trained run's checkpoint on device.

Loads the newest readable checkpoint (or `step=N`), plays `episodes` episodes per seed in one
compiled loop, prints mean/median/max return (and score for Snake and the grid), writes
`eval.json` and, for envs that draw themselves (Snake, the grid), `replay.gif` of the best
episode. `render=terminal` plays that episode in the terminal instead. With several agents per
world an episode's return is the world's (the sum over its agents); `return_per_agent` is beside it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.checkpoint import CheckpointError
from jaxrl.cli_config import UsageError
from jaxrl.config import ConfigError

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


def upscale(frames: np.ndarray, pixels: int) -> np.ndarray:
    """(T, H, W, 3) -> (T, H*p, W*p, 3) with p chosen so the long side is about `pixels`."""
    p = max(1, pixels // max(frames.shape[1:3]))
    return frames.repeat(p, axis=1).repeat(p, axis=2)


def save_gif(frames: np.ndarray, path: Path, fps: int) -> None:
    from PIL import Image

    images = [Image.fromarray(f) for f in upscale(frames, 320)]
    tmp = path.with_suffix(".tmp.gif")
    images[0].save(tmp, save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0)
    tmp.replace(path)


def evaluate(args: dict[str, Any]) -> dict[str, Any]:
    import jax

    from jaxrl.checkpoint import Checkpointer
    from jaxrl.cli_config import resume_config
    from jaxrl.evaluate import default_max_steps, play, record
    from jaxrl.train import Trainer, make_env

    run_dir = Path(args["run_dir"]).expanduser()
    cfg, _, _ = resume_config(run_dir, [], flag="run_dir")
    env, env_params = make_env(cfg)
    trainer = Trainer(cfg, env, env_params)
    algo = trainer.algo
    checkpoints = Checkpointer(run_dir / "checkpoints")
    warn = lambda line: print(line, file=sys.stderr, flush=True)
    try:
        if args["step"] is None:
            step, runner, _ = checkpoints.restore_latest(trainer.abstract_runner(), warn=warn)
        else:
            if args["step"] not in checkpoints.steps():
                have = ", ".join(map(str, checkpoints.steps())) or "none"
                raise CheckpointError(f"step={args['step']} has no checkpoint in {run_dir}; saved steps: {have}")
            step = args["step"]
            runner, _ = checkpoints.restore(step, trainer.abstract_runner())
    finally:
        checkpoints.close()

    episodes, greedy = args["episodes"], args["greedy"]
    keys = jax.random.split(jax.random.key(args["seed"]), cfg.num_seeds)
    # The env params the agent trained with last (a curriculum's final phase), carried in the runner.
    env_params = jax.tree.map(lambda x: np.asarray(x[0]), runner.env_params)
    max_steps = default_max_steps(env_params)

    def one_seed(r, k):
        return play(env, r.env_params, algo.runner_policy(r, greedy), k, episodes, max_steps)

    t0 = time.perf_counter()
    out = jax.device_get(jax.jit(jax.vmap(one_seed))(runner, keys))  # (seeds, episodes)
    seconds = time.perf_counter() - t0
    has_score = "score" in out
    result: dict[str, Any] = {
        "run_dir": str(run_dir),
        "checkpoint_step": step,
        "env": cfg.env.name,
        "algo": cfg.algo.name,
        "episodes_per_seed": episodes,
        "greedy": greedy,
        "seed": args["seed"],
        "return": describe(out["return"]),
        "length": describe(out["length"]),
        "return_per_seed": out["return"].mean(axis=1).tolist(),
        "unfinished": int((~out["finished"]).sum()),
        "seconds": seconds,
    }
    agents = int(getattr(env, "num_agents", 1))
    if agents > 1:  # "return" is the world's (summed over its agents)
        result["agents_per_world"] = agents
        result["return_per_agent"] = describe(out["return"] / agents)
    if has_score:
        result["score"] = describe(out["score"])
        result["score_per_seed"] = out["score"].mean(axis=1).tolist()

    score = out.get("score", np.zeros_like(out["return"]))
    order = np.lexsort((score.ravel(), out["return"].ravel()))  # best return, then best score
    seed, index = np.unravel_index(order[-1], out["return"].shape)
    result["best"] = {
        "seed": int(seed),
        "episode": int(index),
        "return": float(out["return"][seed, index]),
        "length": int(out["length"][seed, index]),
    }
    if has_score:
        result["best"]["score"] = float(out["score"][seed, index])

    drawer = {"gif": "render_rgb", "terminal": "render_text"}.get(args["render"])
    if drawer is not None and hasattr(env, drawer):
        r = jax.tree.map(lambda x: x[seed], runner)
        length = int(out["length"][seed, index])
        policy = algo.runner_policy(r, greedy)
        if args["render"] == "gif":
            render = env.render_rgb
        else:
            render = lambda s: s  # the states themselves, drawn as text below
        frames = jax.device_get(
            jax.jit(lambda k: record(env, env_params, policy, k, episodes, int(index), length, render))(keys[seed])
        )
        if args["render"] == "gif":
            path = Path(args["out"]).expanduser() if args["out"] else run_dir / "replay.gif"
            save_gif(np.asarray(frames), path, args["fps"])
            result["replay"] = str(path)
        else:
            play_in_terminal(env, frames, length, args["fps"])
    elif drawer is not None:
        result["replay"] = None
        how = "as a picture" if args["render"] == "gif" else "as text"
        print(f"note: {cfg.env.name} does not draw itself {how}; no replay", file=sys.stderr)
    (run_dir / "eval.json").write_text(json.dumps(result, indent=2) + "\n")
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
        result = evaluate(parse_args(argv))
    except (UsageError, ConfigError, CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    report(result)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
