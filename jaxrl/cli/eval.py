"""`python -m jaxrl.eval RUN_DIR [episodes=100] [greedy=true] ...`: play a run's policy and report
(`jaxrl.trained.evaluation` plays it; `Run.evaluate()` is the same path from Python). See that module for
what eval.json holds and how the replay is drawn.
"""

from __future__ import annotations

from typing import Any

from jaxrl.cli import command
from jaxrl.config.compose import UsageError, integer_setting
from jaxrl.config.sweep import settings_label
from jaxrl.trained.evaluation import evaluate

USAGE = """usage: python -m jaxrl.eval RUN_DIR [key=value ...]   (or run_dir=RUN_DIR)
       python -m jaxrl.eval replay=FILE [render=gif|html] [fps=10] [out=PATH]

  RUN_DIR              a run directory written by python -m jaxrl.train, or pretrained:NAME (a shelf agent:
                       python -m jaxrl.pretrained list)
  episodes=100         episodes per seed
  greedy=true          greedy actions (false: sample the policy / DQN's final epsilon)
  step=N               checkpoint to load (env steps per seed); default the newest readable one
  seed=0               evaluation seed
  render=gif           gif: replay.gif of the best episode | html: replay.html too, a self-contained page with
                       play, pause, a scrubber and speed | terminal: play it in the terminal | none
                       (gif and html also write replay.json, the episode's seed and actions)
  fps=10               frames per second of the replay
  out=PATH             where the replay goes (default RUN_DIR/replay.gif, or replay.html with render=html)
  replay=FILE          an episode file (replay.json, or a game saved by python -m jaxrl.play): step it again
                       with its actions and draw it (beside FILE, or at out=); no run directory is needed
  member=K             a sweep's member to play (default: the best one in summary.json)
  opponents=KIND       envs whose bots can be set (the arena): one of the env's bots (the arena's greedy |
                       space | lookahead | random_safe, or a mix such as space+lookahead: the bots' seats take
                       them in turn) | a run directory or pretrained:NAME (its greedy policy drives the bots)
  num_bots=N           envs whose bots can be set: how many bots (default: as trained)
  vs=OPPONENT          games of two seats or more, repeatable: head-to-head games at the env's table against
                       another run (RUN_DIR or RUN_DIR@STEP), a shelf agent (pretrained:NAME), one of the
                       env's bots (the arena's greedy | space | lookahead | random_safe; any env's random) or an
                       HTTP snake (http://host:port, Battlesnake API v1: docs/battlesnake.md), seats rotated;
                       episodes= games per opponent (1000 is a good number); writes RUN_DIR/versus.json and
                       versus.gif

Prints mean, median, min and max of the return (and of the score, with the win rate, for
envs that report them) and writes them to RUN_DIR/eval.json, with the score histogram and
the env params played with (the env's eval_params: Snake's hunger limit is at least
size * size; the arena's games all seat num_bots bots). The replay shows the step and the
score (or return) so far below the board.
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
    "member": None,
    "opponents": None,
    "num_bots": None,
    "vs": None,  # a list: vs= may be given several times
    "replay": None,
}


RENDERS = ("gif", "html", "terminal", "none")


def parse_args(argv: list[str]) -> dict[str, Any]:
    """key=value arguments checked against DEFAULTS; UsageError naming the bad one."""
    args = dict(DEFAULTS)
    given = {item.partition("=")[0] for item in argv if "=" in item} | (
        {"run_dir"} if argv and "=" not in argv[0] else set()
    )
    if argv and "=" not in argv[0]:  # the run directory first, as people type it
        argv = [f"run_dir={argv[0]}", *argv[1:]]
        if any(a.startswith("run_dir=") for a in argv[1:]):
            raise UsageError(f"the run directory is given twice: {argv[0][8:]} and run_dir=; give it once")
    for item in argv:
        key, eq, value = item.partition("=")
        if not eq:
            raise UsageError(
                f"bad argument '{item}': expected key=value after the run directory (see `python -m jaxrl.eval --help`)"
            )
        if key not in DEFAULTS:
            raise UsageError(f"unknown setting '{key}'; valid: {', '.join(DEFAULTS)}")
        if key == "vs":
            if not value:
                raise UsageError("vs= is empty: give a run directory, pretrained:NAME or one of the env's bots")
            args["vs"] = [*(args["vs"] or []), value]
            continue
        args[key] = value
    if args["replay"] is not None:
        clash = [
            k
            for k in ("run_dir", "episodes", "greedy", "step", "seed", "member", "opponents", "num_bots", "vs")
            if k in given
        ]
        if clash:
            raise UsageError(f"{clash[0]}= does not apply to replay=FILE: the file holds the game's seed and actions")
        if args["render"] not in ("gif", "html"):
            raise UsageError(f"render={args['render']} does not apply to replay=FILE: allowed gif, html")
    elif args["run_dir"] is None:
        raise UsageError("a run directory is required: python -m jaxrl.eval RUN_DIR (written by python -m jaxrl.train)")
    for key, low in (("episodes", 1), ("seed", 0), ("fps", 1), ("step", 0), ("member", 0), ("num_bots", 0)):
        if args[key] is not None:
            args[key] = integer_setting(key, args[key], low)
    greedy = str(args["greedy"]).lower()
    if greedy not in ("true", "false"):
        raise UsageError(f"greedy={args['greedy']} is invalid: allowed true, false")
    args["greedy"] = greedy == "true"
    if args["vs"]:
        clash = [k for k in ("opponents", "num_bots", "member") if args[k] is not None] + (
            ["greedy=false"] if not args["greedy"] else []
        )
        if clash:
            raise UsageError(
                f"{clash[0]} does not apply to head-to-head games (vs=): they play the runs' greedy policies"
            )
    if args["render"] not in RENDERS:
        raise UsageError(f"render={args['render']} is invalid: allowed {', '.join(RENDERS)}")
    return args


def _spread(figure: dict[str, float]) -> str:
    return " | ".join(f"{k} {figure[k]:.2f}" for k in ("mean", "median", "min", "max"))


def report(result: dict[str, Any]) -> None:
    """The figures of eval.json as a few lines for the terminal."""
    label = f"world return ({result['agents_per_world']} agents)" if "return_per_agent" in result else "return"
    line = f"{label} {_spread(result['return'])}"
    if "return_per_agent" in result:
        line += f" || per agent mean {result['return_per_agent']['mean']:.2f}"
    episodes = result["episodes_per_seed"] * len(result["return_per_seed"])
    wins = f"wins {result['wins']}/{episodes} ({result['win_rate']:.1%})" if "wins" in result else None
    mode = "greedy" if result["greedy"] else "sampled"
    print(
        f"{result['env']} {result['algo']} checkpoint {result['checkpoint_step']:,} steps: "
        f"{result['episodes_per_seed']} {mode} episodes x {len(result['return_per_seed'])} seeds "
        f"in {result['seconds']:.1f}s"
    )
    if "member" in result:
        print(f"sweep member {result['member']}: {settings_label(result['settings'])}")
    if "opponents" in result or "num_bots" in result:
        print(
            f"against: {result.get('num_bots', 'the trained number of')} bots, {result.get('opponents', 'as trained')}"
        )
    print(line)
    if "score" in result:
        print(f"score {_spread(result['score'])}" + (f" || {wins}" if wins else ""))
        hist = result["score_histogram"]
        if len(hist["bins"]) <= 25:  # a longer one is for a plot (eval.json)
            pairs = zip(hist["bins"], hist["counts"], strict=True)
            print("score histogram (score:episodes): " + " ".join(f"{b:g}:{n}" for b, n in pairs))
    elif wins:
        print(wins)
    if "placement" in result:
        hist = result["placement_histogram"]
        places = " ".join(f"{b:g}:{n}" for b, n in zip(hist["bins"], hist["counts"], strict=True))
        line = f"placement {_spread(result['placement'])} || placements (place:games) {places}"
        print(line + (f" || kills per game {result['kills']['mean']:.2f}" if "kills" in result else ""))
    if result.get("ended_by"):
        print("how it ended: " + ", ".join(f"{k} {v}" for k, v in result["ended_by"].items() if v))
    if len(result["return_per_seed"]) > 1:
        print("per seed return: " + " ".join(f"{v:.2f}" for v in result["return_per_seed"]))
        if "win_rate_per_seed" in result:
            print("per seed win rate: " + " ".join(f"{v:.1%}" for v in result["win_rate_per_seed"]))
    if result.get("env_params_changed"):
        changed = result["env_params_changed"].items()
        changes = ", ".join(f"{k} {v['trained']} -> {v['evaluated']}" for k, v in changed)
        print(f"note: evaluated with the env's eval_params: {changes}")
    if result["unfinished"]:
        print(f"note: {result['unfinished']} episodes hit the step limit of this evaluation and were cut")
    if result.get("replay"):
        also = f" and {result['replay_html']}" if result.get("replay_html") else ""
        print(f"replay of the best episode (return {result['best']['return']:.2f}): {result['replay']}{also}")
        if result.get("episode_file"):
            print(f"its seed and actions: {result['episode_file']} (python -m jaxrl.eval replay=FILE)")


def report_replay(result: dict[str, Any]) -> None:
    """A replayed episode file in a line or two."""
    figures = f"{result['length']} steps, return {result['return']:.2f}"
    if "score" in result:
        figures += f", score {result['score']:g}" + (" (won)" if result.get("won") else "")
    print(f"replayed {result['episode_file']}: {figures}")
    print(f"replay: {result['replay']}" + (f" and {result['replay_html']}" if "replay_html" in result else ""))


def run(argv: list[str]) -> int:
    args = parse_args(argv)
    if args["replay"] is not None:
        from jaxrl.trained.evaluation import replay_file

        report_replay(replay_file(args["replay"], args["render"], args["fps"], args["out"]))
        return 0
    from jaxrl.api import load

    run_ = load(args.pop("run_dir"))
    if args["vs"]:
        from jaxrl.trained import headtohead

        keep = ("episodes", "seed", "step", "render", "fps", "out")
        settings = {("games" if k == "episodes" else k): args[k] for k in keep}
        result = headtohead.versus(run_, args["vs"], load, **settings)
        headtohead.report(result)
        return 0
    args.pop("vs")
    args.pop("replay")
    report(evaluate(run_, **args))
    return 0


main = command(__name__)
