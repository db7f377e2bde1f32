"""The host jobs of a run, one hook each: curriculum, metrics and loggers, checkpoints, the stop signal,
fault injection for tests, and the summary. `jaxrl.train(..., hooks=[...])` appends a user's own.
"""

from __future__ import annotations

import dataclasses
import math
import signal
import sys
import threading
import time
from typing import Any, Self

import jax
import numpy as np

from jaxrl.config.sweep import settings_label
from jaxrl.core import stats as episode
from jaxrl.run.driver import Chunk, Hook, Plan, RunContext


def nanmean(values: np.ndarray) -> float:
    """Mean over the finite entries (NaN marks updates without that figure, e.g. DQN before learning starts)."""
    finite = np.asarray(values, np.float64)
    finite = finite[np.isfinite(finite)]
    return float(finite.mean()) if finite.size else math.nan


def chunk_record(steps: int, stats: episode.EpisodeStats) -> dict[str, Any]:
    """Per-seed sums of one chunk's episode stats (JSON-ready), as kept in `RunProgress.history`."""
    sums = {k: np.asarray(v).sum(axis=1).tolist() for k, v in episode.as_dict(stats).items()}
    return {"env_steps": steps, **sums}


def member_parts(program: Any) -> list[slice]:
    """The seed axis's entries of each sweep member (one part, every entry, without a sweep)."""
    seeds = program.cfg.num_seeds
    return [slice(m * seeds, (m + 1) * seeds) for m in range(program.sweep.size)]


def member_figures(stats: Any, part: slice, agents: int) -> dict[str, float]:
    """Episode means and learner figures of a chunk over the entries `part` of the seed axis."""
    episodes = jax.tree.map(lambda v: np.asarray(v)[part], stats.episodes)
    learner = {k: nanmean(np.asarray(v)[part]) for k, v in stats.learner.items()}
    return {**episode.means(episodes, agents), **learner}


def logger_row(head: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One logger row for a sweep's chunk: each member's figures under `member<m>/`."""
    out = dict(head)
    for row in rows:
        out.update({f"member{row['member']}/{k}": v for k, v in row.items() if k not in head and k != "member"})
    return out


class CurriculumHook(Hook):
    """Switches env params at phase boundaries (between chunks, same compiled program) and cuts chunks there."""

    def __init__(self, curriculum: Any):
        self.curriculum = curriculum
        self.phase = None  # the phase of the chunk dispatched last

    def before_chunk(self, ctx: RunContext, runner: Any, plan: Plan) -> Any:
        phase = self.curriculum.phase(plan.start)
        if phase is not self.phase:
            self.phase = phase
            runner = ctx.program.with_env_params(runner, self.curriculum.params(phase))
        plan.active = min(plan.active, self.curriculum.updates_left(plan.start) or plan.active)
        plan.phase = phase
        return runner

    def label(self, phase: Any) -> str:
        return f"{phase.index}/{len(self.curriculum)}"


class MetricsHook(Hook):
    """Each chunk: a metrics.csv row, the optional loggers (TensorBoard, W&B) and the progress line."""

    def __init__(self, curriculum: CurriculumHook | None = None):
        self.curriculum = curriculum
        self.progress = self.metrics = None
        self.loggers: list[Any] = []
        self.write_failed = False  # warned once

    def start(self, ctx: RunContext) -> None:
        from omegaconf import OmegaConf

        from jaxrl.config.schema import logger_names
        from jaxrl.run.loggers import MetricsCSV, Progress, open_loggers

        total = ctx.program.num_updates * ctx.program.steps_per_update
        self.progress = Progress(total, ctx.cfg.progress, start=ctx.env_steps, seeds=ctx.program.population)
        self.metrics = MetricsCSV(ctx.run_dir / "metrics.csv", keep_until=ctx.env_steps if ctx.resumed else None)
        config = OmegaConf.to_container(ctx.resolved, resolve=True)
        self.loggers = open_loggers(logger_names(ctx.cfg.logger), ctx.run_dir, ctx.cfg.wandb_project, config)

    def after_chunk(self, ctx: RunContext, runner: Any, chunk: Chunk) -> None:
        ctx.progress.history.append(chunk_record(chunk.env_steps, chunk.stats.episodes))
        agents = ctx.program.agents_per_world
        means = episode.means(chunk.stats.episodes, agents)
        wall = ctx.progress.train_s + ctx.progress.compile_s
        head = {"env_steps": chunk.env_steps, "sps": chunk.sps, "wall_s": wall}
        phase = None
        if chunk.phase is not None:
            head["phase"] = chunk.phase.index
            phase = self.curriculum.label(chunk.phase) if self.curriculum else str(chunk.phase.index)
        rows = [head | member_figures(chunk.stats, part, agents) for part in member_parts(ctx.program)]
        sweep = ctx.program.sweep
        if sweep.keys:  # a row per member, with its values, beside its index
            rows = [{"member": m, **sweep.members[m], **row} for m, row in enumerate(rows)]
        try:
            for row in rows:
                self.metrics.write(row)
            for logger in self.loggers:
                logger.write(chunk.env_steps, rows[0] if len(rows) == 1 else logger_row(head, rows))
        except OSError as e:  # a full or vanished disk: the run goes on; checkpoints say whether it can save
            if not self.write_failed:
                print(f"warning: metrics could not be written ({e}); training goes on", file=sys.stderr, flush=True)
            self.write_failed = True
        self.progress.update(chunk.env_steps, chunk.sps, means, phase=phase)

    def close(self, ctx: RunContext) -> None:
        for part in (self.progress, self.metrics, *self.loggers):
            if part is not None:
                part.close()


def checkpoint_meta(ctx: RunContext) -> dict[str, Any]:
    """What a checkpoint saves beside the state: progress, config, env and versions."""
    from omegaconf import OmegaConf

    from jaxrl.config.environment import env_settings
    from jaxrl.envs.registry import spec
    from jaxrl.run.checkpoint import versions

    cfg = ctx.cfg
    return {
        **dataclasses.asdict(ctx.progress),
        "env_steps_per_seed": ctx.env_steps,
        "num_updates": ctx.program.num_updates,
        "config": OmegaConf.to_container(ctx.resolved, resolve=True),
        "env": {"name": cfg.env.name, "kwargs": env_settings(cfg), "version": spec(cfg.env.name).version},
        "algo": cfg.algo.name,
        "versions": versions(),
    }


class CheckpointHook(Hook):
    """Saves every `checkpoint.every_steps` env steps and/or `every_minutes`, and once at the end.

    A save that fails is reported in one line and the run goes on from the checkpoint before
    it; when the run directory cannot be written at all the run stops (SaveError). `ctx.saved`
    names only checkpoints whose write completed.
    """

    def __init__(self, checkpoints: Any):
        self.checkpoints = checkpoints
        self.saving = False  # whether the chunk that just ended is saved (see `needs_runner`)
        self.saved_steps = 0
        self.saved_at = time.monotonic()

    def start(self, ctx: RunContext) -> None:
        self.saved_steps, self.saved_at = ctx.env_steps, time.monotonic()

    def due(self, ctx: RunContext, env_steps: int) -> bool:
        """Whether a save is due at `env_steps` per seed (the end saves anyway)."""
        if env_steps >= ctx.program.num_updates * ctx.program.steps_per_update or ctx.stop_requested:
            return False
        every_steps, every_minutes = ctx.cfg.checkpoint.every_steps, ctx.cfg.checkpoint.every_minutes
        return (every_steps is not None and env_steps - self.saved_steps >= every_steps) or (
            every_minutes is not None and time.monotonic() - self.saved_at >= 60 * every_minutes
        )

    def needs_runner(self, ctx: RunContext, done_updates: int) -> bool:
        from jaxrl.scale.distributed import any_process

        # Decided once per chunk, and by every process of a distributed run together (a save is collective).
        self.saving = any_process(self.due(ctx, done_updates * ctx.program.steps_per_update))
        return self.saving

    def landed(self, ctx: RunContext, outcome: Any, going_on: bool = True) -> None:
        """Record a finished write: the new last good checkpoint, or a failure (warned; SaveError when nothing
        can be written to the run directory any more)."""
        from jaxrl.errors import SaveError
        from jaxrl.run.rundir import check_writable

        if outcome.path is not None:
            ctx.saved = outcome.path
        if outcome.error is None:
            return
        kept = ctx.saved if ctx.saved is not None else "none yet"
        try:
            check_writable(ctx.run_dir / "checkpoints")
        except Exception as e:  # noqa: BLE001  (ConfigError naming why the directory cannot be written)
            raise SaveError(f"{outcome.error}; {e}; last good checkpoint: {kept}") from None
        then = "; training goes on" if going_on else ""
        print(f"warning: {outcome.error}; last good checkpoint: {kept}{then}", file=sys.stderr, flush=True)

    def after_chunk(self, ctx: RunContext, runner: Any, chunk: Chunk) -> None:
        if runner is not None and self.saving:
            self.landed(ctx, self.checkpoints.save(chunk.env_steps, runner, checkpoint_meta(ctx)))
            self.saved_steps, self.saved_at = chunk.env_steps, time.monotonic()

    def end(self, ctx: RunContext, runner: Any) -> None:
        from jaxrl.errors import SaveError

        self.landed(ctx, self.checkpoints.finish(), going_on=False)
        steps = ctx.env_steps
        if steps > self.saved_steps or steps not in self.checkpoints.steps():  # not written, or its write failed
            outcome = self.checkpoints.save(steps, runner, checkpoint_meta(ctx), wait=True)
            if outcome.error is not None:
                kept = ctx.saved if ctx.saved is not None else "none"
                raise SaveError(f"the final {outcome.error}; last good checkpoint: {kept}")
            ctx.saved = outcome.path
        else:
            ctx.saved = self.checkpoints.path(steps)

    def close(self, ctx: RunContext) -> None:
        outcome = self.checkpoints.close()
        if outcome.path is not None:
            ctx.saved = outcome.path
        elif outcome.error is not None:
            print(f"warning: {outcome.error}", file=sys.stderr, flush=True)


class StopSignal:
    """First Ctrl-C: finish the chunk, save, end (ctx.stop_requested). Second: stop at once (KeyboardInterrupt)."""

    def __init__(self, ctx: RunContext):
        self.ctx = ctx
        self._previous = None

    def __enter__(self) -> Self:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        from jaxrl.scale.distributed import process_count

        if self.ctx.stop_signals:
            raise KeyboardInterrupt
        self.ctx.stop_signals += 1
        if process_count() == 1:  # one process decides alone; several agree in the host loop first
            self.ctx.stop_requested = True
        print("\ninterrupt: saving a checkpoint after this chunk (Ctrl-C again stops without saving)", flush=True)

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def summarize(ctx: RunContext) -> dict[str, Any]:
    """Summary figures; final_* are means over the finished episodes of the last ~10% of chunks, all
    seeds (widened back to the last chunks that finished an episode, when episodes outlast that span).
    A sweep adds `members`: each member's settings and figures, best final return first."""
    cfg, run, program = ctx.cfg, ctx.progress, ctx.program
    per_update, population = program.steps_per_update, program.population
    summary: dict[str, Any] = {
        "env": cfg.env.name,
        "algo": cfg.algo.name,
        "num_seeds": cfg.num_seeds,
        "env_steps": run.done_updates * per_update * population,
        "env_steps_per_seed": run.done_updates * per_update,
        "updates": run.done_updates,
        "compile_s": run.compile_s,
        "train_s": run.train_s,
        "wall_s": run.compile_s + run.train_s,
        "sps": run.done_updates * per_update * population / run.train_s if run.train_s else 0.0,
        "final_return": math.nan,
    }
    if run.history:
        summary.update(final_figures(run.history, population, program.agents_per_world))
    if program.sweep.keys:
        summary["num_members"] = program.sweep.size
        summary["members"] = ranking(ctx)
        best = summary["members"][0]
        summary["best_member"], summary["best_settings"] = best["member"], best["settings"]
    return summary


def ranking(ctx: RunContext) -> list[dict[str, Any]]:
    """Every sweep member's settings and final figures over its seeds, best final return first (NaN last)."""
    program, history = ctx.program, ctx.progress.history
    members = []
    for m, part in enumerate(member_parts(program)):
        own = [{k: v if k == "env_steps" else v[part] for k, v in chunk.items()} for chunk in history]
        figures = final_figures(own, ctx.cfg.num_seeds, program.agents_per_world) if own else {}
        members.append({"member": m, "settings": program.sweep.members[m], "final_return": math.nan, **figures})
    finite = lambda r: r["final_return"] is not None and math.isfinite(r["final_return"])
    return sorted(members, key=lambda r: (not finite(r), -r["final_return"] if finite(r) else 0, r["member"]))


def final_figures(history: list[dict[str, Any]], num_seeds: int, agents: int) -> dict[str, Any]:
    """final_return (and world return, score, win rate, placement) over the last ~10% of chunks,
    overall and per seed."""
    span = max(1, math.ceil(0.1 * len(history)))
    while span < len(history) and not np.sum([chunk["episodes"] for chunk in history[-span:]]):
        span += 1
    tail = history[-span:]
    per_seed = {k: np.array([chunk[k] for chunk in tail]).T for k in tail[0] if k != "env_steps"}  # (seeds, chunks)
    last = episode.means(episode.from_dict(per_seed), agents)
    seeds = [episode.means(episode.from_dict({k: v[s] for k, v in per_seed.items()}), agents) for s in range(num_seeds)]
    out = {"final_return": last["episode_return"], "final_return_per_seed": [m["episode_return"] for m in seeds]}
    figures = ("world_return", "win_rate", *episode.WORLD_FIGURES)
    for key, name in ((key, f"final_{key}") for key in figures):
        if key in last:
            out[name] = last[key]
            out[f"{name}_per_seed"] = [m[key] for m in seeds]
    return out


class SummaryHook(Hook):
    """At the end: summary.json, learning_curve.png and the closing lines."""

    def end(self, ctx: RunContext, runner: Any) -> None:
        from jaxrl.run.loggers import plot_learning_curve, write_json

        summary = summarize(ctx)
        curve = ctx.run_dir / "learning_curve.png"
        sweep = ctx.program.sweep
        members = [(sweep.label(m), part) for m, part in enumerate(member_parts(ctx.program))] if sweep.keys else None
        if plot_learning_curve(ctx.progress.history, curve, f"{ctx.cfg.env.name} {ctx.cfg.algo.name}", members):
            summary["learning_curve"] = str(curve)
        device = ctx.device.platform if ctx.device is not None else None
        summary.update(interrupted=ctx.interrupted, device=device, run_dir=str(ctx.run_dir), checkpoint=str(ctx.saved))
        try:
            write_json(ctx.run_dir / "summary.json", summary)
        except OSError as e:
            from jaxrl.errors import SaveError

            raise SaveError(
                f"summary.json could not be written ({e}); the final checkpoint {ctx.saved} is saved"
            ) from None
        print(closing_line(summary, ctx.interrupted))
        resume = f" (resume: python -m jaxrl.train resume={ctx.run_dir})" if ctx.interrupted else ""
        print(f"checkpoint: {ctx.saved}{resume}", flush=True)
        if "members" in summary:
            for line in ranking_lines(summary):
                print(line, flush=True)


def ranking_lines(summary: dict[str, Any]) -> list[str]:
    """A sweep's ranking, one line per member, and last the line naming the best member and its settings."""
    lines = ["sweep ranking (final return over each member's seeds):"]
    for place, r in enumerate(summary["members"], 1):
        lines.append(f"  {place}. member {r['member']}: {settings_label(r['settings'])}: {figure_text(r)}")
    best = summary["members"][0]
    settings = settings_label(best["settings"])
    lines.append(
        f"best: member {best['member']} ({settings}): {figure_text(best)} (jaxrl.eval member={best['member']})"
    )
    return lines


def figure_text(figures: dict[str, Any]) -> str:
    """`final return 71.20, final score 12.30` of a summary or a member's figures."""
    value = figures.get("final_return")
    text = "final return " + ("-" if value is None or not math.isfinite(value) else f"{value:.2f}")
    if figures.get("final_score") is not None:
        text += f", final score {figures['final_score']:.2f}"
    return text


def closing_line(summary: dict[str, Any], interrupted: bool) -> str:
    final = f"final return {summary['final_return']:.2f}" if summary["final_return"] is not None else ""
    if summary.get("final_world_return") is not None:
        final += f" per agent, {summary['final_world_return']:.2f} per world"
    if summary.get("final_score") is not None:
        final += f", final score {summary['final_score']:.2f}"
    return (
        f"{'interrupted' if interrupted else 'done'}: {summary['env_steps']:,} env steps in "
        f"{summary['wall_s']:.1f}s ({summary['sps']:,.0f} steps/s after compile); {final}; {summary['run_dir']}"
    )
