"""python -m bench: every throughput benchmark in one run, then report.md, one JSON per part and PNG plots.

    python -m bench                  # full mode: larger sweeps, longer runs, more seeds (hours on a 2-core CPU)
    python -m bench --quick          # every part on a short budget (11-12 minutes on a 2-core Intel Xeon)
    python -m bench --only env,train # some parts (env, arena, serve, train, memory, score, precision, runs, parity,
                                     # seeds, algos, sweep)
    python -m bench --out DIR        # default bench-results/<machine>-<date>/ in the current folder

Peers (Jumanji, navix, xminigrid, Stable-Baselines3) come with `pip install 'jaxrl[bench]'`;
each one missing is skipped with one line. A folder that already holds results keeps them: the
files a run replaces move to `DIR/previous-<time>/` first, and report.md is written from every
part's JSON in the folder, so `--only` refreshes one part of a report.

Quick mode gives every part a budget of seconds to a few minutes (shorter runs, one or two seeds,
fewer sizes; what it leaves out, each part's report lists under "Skipped"). How long each mode
takes, on which machine and with which peers installed: docs/benchmarks.md, "Running them".
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

from jaxrl.bench import RESULTS
from jaxrl.bench.parts import ORDER


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"python -m {__package__}", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="every part on a short budget: 11-12 minutes on a 2-core Intel Xeon (docs/benchmarks.md, Running"
        " them, has the times per machine)",
    )
    parser.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)  # the test's tiny budget
    parser.add_argument("--only", default=None, help=f"comma-separated parts: {', '.join(ORDER)}")
    where = f"{RESULTS}/<machine>-<date>/ in the current folder"
    parser.add_argument("--out", default=None, help=f"results folder (default {where})")
    args = parser.parse_args(argv)
    if args.only is None:
        args.parts = list(ORDER)
    else:
        args.parts = [p.strip() for p in args.only.split(",") if p.strip()]
        bad = [p for p in args.parts if p not in ORDER] or ([] if args.parts else [args.only])
        if bad:
            raise SystemExit(f"error: --only {bad[0]!r} is not a part: choose from {', '.join(ORDER)}")
    return args


def output_dir(arg: str | None, machine: dict) -> Path:
    from jaxrl.bench.machine import slug

    out = Path(arg) if arg else Path(RESULTS) / f"{slug(machine)}-{datetime.now().date().isoformat()}"
    if out.exists() and not out.is_dir():
        raise SystemExit(f"error: --out {out} is a file: give a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-probe"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise SystemExit(f"error: --out {out} cannot be written ({e.strerror or e})") from None
    return out


def keep_previous(out: Path, names: list[str], stamp: str) -> None:
    """Move files this run will replace into out/previous-<stamp>/ (nothing is deleted)."""
    old = [out / n for n in names if (out / n).exists()]
    if old:
        aside = out / f"previous-{stamp}"
        aside.mkdir(exist_ok=True)
        for path in old:
            shutil.move(str(path), aside / path.name)
        print(f"kept earlier results in {aside}")


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"

    from jaxrl.bench import report
    from jaxrl.bench.common import Context
    from jaxrl.bench.machine import describe, title
    from jaxrl.bench.parts import load

    machine = describe()
    out = output_dir(args.out, machine)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    keep_previous(out, [f"{p}.json" for p in args.parts] + [f"{p}.png" for p in args.parts] + ["report.md"], stamp)
    print(f"python -m bench ({mode}) on {title(machine)}; results in {out}")
    failed, shared = [], {}
    for i, name in enumerate(args.parts, 1):
        part = load(name)
        ctx = Context(mode=mode, out=out, machine=machine, shared=shared)
        print(f"[{i}/{len(args.parts)}] {name}: {part.TITLE}", flush=True)
        t0, measured_before = time.perf_counter(), "ceilings" in shared
        try:
            result = part.run(ctx)
        except KeyboardInterrupt:
            print(f"interrupted during {name}; earlier parts are saved in {out}")
            return 130
        except Exception as e:  # noqa: BLE001 - one broken part must not lose the others' figures
            (out / f"{name}.error.txt").write_text(traceback.format_exc())
            print(f"error: part {name} failed: {type(e).__name__}: {e} (traceback in {out / (name + '.error.txt')})")
            failed.append(name)
            continue
        seconds = time.perf_counter() - t0
        record = {
            "part": name,
            "title": part.TITLE,
            "mode": mode,
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "seconds": seconds,
            "machine": machine,
            "notes": ctx.notes,
            "result": result,
        }
        if "ceilings" in shared and not measured_before:  # measured once, by the first part that asked
            record["ceilings"] = shared["ceilings"]
        (out / f"{name}.json").write_text(json.dumps(record, indent=2, default=float) + "\n")
        if hasattr(part, "plot"):
            part.plot(result, title(machine), out / f"{name}.png")
        print(f"[{i}/{len(args.parts)}] {name}: done in {seconds:.0f} s", flush=True)
    path = report.write(out)
    print(f"report: {path}")
    if failed:
        print(f"error: {len(failed)} part(s) failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
