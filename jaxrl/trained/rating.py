"""Ratings from head-to-head games: every pair of players plays a round robin at one table, and one
Bradley-Terry model on the Elo scale is fitted to all the results at once.

The model: player i scores against j (a win 1, a draw 1/2) with probability
1 / (1 + 10 ** ((r_j - r_i) / 400)), so 200 points apart is a 76% score. The ratings are the maximum
likelihood fit of every game played (not Elo's order-dependent running updates), so the same games
always give the same table. One virtual draw per pair keeps a player that won every game finite. The
scale is anchored at the env's weakest bot = 0 (the last of its `bot_kinds`: the arena's random_safe) when
it plays (else the first player), and each rating's uncertainty is its standard error from the fit's
curvature (the inverse Fisher information); two rating runs with different seeds should agree within about
two of those.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.config.compose import UsageError
from jaxrl.envs.base import hook
from jaxrl.trained import headtohead
from jaxrl.trained.http import latency_lines

SCALE = 400.0 / math.log(10.0)  # Elo points per natural-log unit of odds


def fit(names: list[str], results: list[dict[str, Any]], anchor: str | None = None) -> dict[str, Any]:
    """Ratings and standard errors of `names` from pair results (`headtohead.play_pair` dicts, a and b among
    `names`): {"ratings": {name: r}, "errors": {name: se}, "anchor": name}."""
    index = {n: i for i, n in enumerate(names)}
    k = len(names)
    wins = np.zeros((k, k))  # wins[i, j]: i's score against j (draws half)
    games = np.zeros((k, k))
    for r in results:
        i, j = index[r["a"]], index[r["b"]]
        score = r["a_wins"] + 0.5 * r["draws"]
        wins[i, j] += score
        wins[j, i] += r["games"] - score
        games[i, j] += r["games"]
        games[j, i] += r["games"]
    played = games > 0
    wins = wins + 0.5 * played  # one virtual draw per pair that met
    games = games + 1.0 * played
    anchor = anchor if anchor in index else names[0]
    free = [i for i in range(k) if i != index[anchor]]
    theta = np.zeros(k)  # natural-log odds units
    for _ in range(100):  # Newton's method: the log-likelihood is concave
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # p[i, j]: i beats j
        grad = (wins - games * p).sum(axis=1)
        w = games * p * (1 - p)
        hess = -np.diag(w.sum(axis=1)) + w  # d2 / dtheta_i dtheta_j
        sub = hess[np.ix_(free, free)]
        step = np.linalg.solve(sub, grad[free])
        theta[free] -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))
    w = games * p * (1 - p)
    info = np.diag(w.sum(axis=1)) - w
    cov = np.linalg.inv(info[np.ix_(free, free)])
    errors = np.zeros(k)
    errors[free] = np.sqrt(np.diag(cov))
    return {
        "ratings": {n: float(theta[i] * SCALE) for n, i in index.items()},
        "errors": {n: float(errors[i] * SCALE) for n, i in index.items()},
        "anchor": anchor,
    }


def players(specs: list[str], load: Any, checkpoints: str = "latest", bots: bool = True) -> list[headtohead.Player]:
    """The players a rating plays: each run directory (opened with `load`, `jaxrl.api.load`: its newest
    checkpoint, or every saved one with checkpoints=all; `PATH@STEP` for one), and the env's bots."""
    from jaxrl.run.checkpoint import Checkpointer

    found: list[headtohead.Player] = []
    for spec in specs:
        where = Path(spec).expanduser()
        if checkpoints == "latest" or "@" in where.name or spec.startswith("pretrained:"):
            found.append(headtohead.player(spec, load, flag="run"))
            continue
        if not (where / "checkpoints").is_dir():
            found.append(headtohead.player(spec, load, flag="run"))  # a bot, or says what is wrong with it
            continue
        store = Checkpointer(where / "checkpoints", reader=True)
        try:
            saved = store.steps()
        finally:
            store.close()
        found.extend(headtohead.player(f"{where}@{s}", load, flag="run") for s in saved)
    host = next((p for p in found if p.env is not None), None)
    if host is None:
        raise UsageError("a rating needs a run or shelf agent: its env sets the table the bots play at")
    if bots:
        kinds = hook(headtohead.table_of(host.env, host.name), "bot_kinds")
        found += [headtohead.bot(b) for b in kinds if all(p.name != b for p in found)]
    names = [p.name for p in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"{twice[0]} is given twice: each player once")
    if len(found) < 2:
        raise UsageError("a rating needs at least two players: give two runs, or keep bots=true")
    for p in found:
        headtohead.check_pair(host, p, flag="run")
    return found


def rate(found: list[headtohead.Player], games: int = 200, seed: int = 0, say: Any = print) -> dict[str, Any]:
    """Every pair of `found` plays `games` games (seed `seed`) at the first run's table; the fitted table (best
    first) and the pairs. The scale is anchored at the env's weakest bot (the last of `bot_kinds`) when it plays."""
    host = next(p for p in found if p.env is not None)
    results = []
    for i, a in enumerate(found):
        for b in found[i + 1 :]:
            r = headtohead.play_pair(a, b, games, seed, host=host)
            results.append(r)
            say(f"  {a.name} vs {b.name}: {r['a_wins']}-{r['draws']}-{r['b_wins']}")
    names = [p.name for p in found]
    model = fit(names, results, anchor=hook(headtohead.table_of(host.env, host.name), "bot_kinds")[-1])
    table = []
    for p in found:
        score = sum(r["a_wins"] + 0.5 * r["draws"] for r in results if r["a"] == p.name)
        score += sum(r["b_wins"] + 0.5 * r["draws"] for r in results if r["b"] == p.name)
        played = sum(r["games"] for r in results if p.name in (r["a"], r["b"]))
        table.append(
            {
                "player": p.name,
                "rating": model["ratings"][p.name],
                "error": model["errors"][p.name],
                "games": played,
                "score": score / played,
                "run_dir": p.run_dir,
                "step": p.step,
                "train_s": p.train_s,
            }
        )
    table.sort(key=lambda row: -row["rating"])
    latency = {p.name: p.asked.answers.summary() for p in found if p.asked is not None}
    return {
        "method": "Bradley-Terry maximum likelihood on the Elo scale (jaxrl.trained.rating)",
        "anchor": model["anchor"],
        "games_per_pair": games,
        "seed": seed,
        "table": table,
        "pairs": results,
        **({"latency": latency} if latency else {}),
    }


def report(result: dict[str, Any]) -> None:
    width = max(len(r["player"]) for r in result["table"])
    print(
        f"ratings (Elo scale, {result['anchor']} = 0; +- one standard error), {result['games_per_pair']} games a pair:"
    )
    print(f"  {'#':>2}  {'player':<{width}}  {'rating':>7}  {'+-':>5}  {'score':>6}  games")
    for rank, r in enumerate(result["table"], 1):
        print(
            f"  {rank:>2}  {r['player']:<{width}}  {r['rating']:>7.0f}"
            f"  {r['error']:>5.0f}  {r['score']:>6.1%}  {r['games']}"
        )
    for line in latency_lines(result.get("latency", {})):
        print(line)


def plot(result: dict[str, Any], path: Path) -> None:
    """Rating against training time: a line per run (its checkpoints), a dashed line per bot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    runs: dict[str, list[dict[str, Any]]] = {}
    for row in result["table"]:
        if row["run_dir"] is None:
            ax.axhline(row["rating"], ls="--", lw=1, color="grey")
            ax.annotate(row["player"], (0, row["rating"]), textcoords="offset points", xytext=(2, 3), fontsize=8)
        else:
            runs.setdefault(row["run_dir"], []).append(row)
    for run_dir, rows in runs.items():
        rows.sort(key=lambda r: r["step"])
        x = [(r["train_s"] or 0) / 60 for r in rows]
        ax.errorbar(
            x,
            [r["rating"] for r in rows],
            yerr=[r["error"] for r in rows],
            marker="o",
            capsize=3,
            label=Path(run_dir).name,
        )
    ax.set_xlabel("training time (minutes)")
    ax.set_ylabel(f"rating (Elo scale, {result['anchor']} = 0)")
    ax.set_title(f"head-to-head ratings, {result['games_per_pair']} games a pair")
    if runs:
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
