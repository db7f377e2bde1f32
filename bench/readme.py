"""Write README.md's "Measured" block from the latest `python -m bench` report of each machine.

    python -m bench.readme [--results bench/results] [--readme README.md]

The block sits between `<!-- measured:start -->` and `<!-- measured:end -->`; everything outside
it is left as it is. Per machine (each accelerator, each CPU model: its newest full-mode results
folder, else its newest quick one), a line names the machine, the mode, the dates and the full
report; then one table holds every part's headline figures, each row with the date its part ran
and the machine it ran on, so a figure, its date and its machine never part.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from jaxrl.bench.common import fmt_bytes
from jaxrl.bench.parts import ORDER
from jaxrl.bench.report import load_parts

START, END = "<!-- measured:start -->", "<!-- measured:end -->"


MODE_RANK = {"full": 2, "quick": 1}  # a full-mode report stands for its machine before any quick one, smoke last


def cpu_numbers(machine: dict, folder: Path) -> tuple[str | None, str | None]:
    """The CPU's family and model numbers: the record's fields, else its signature "(family 6, model 167)",
    else the model its folder is named by ("...-model-207-2026-12-04": reports taken before the fields)."""
    if machine.get("cpu_family") or machine.get("cpu_model_number"):
        return machine.get("cpu_family"), machine.get("cpu_model_number")
    signature = re.search(r"family (\d+), model (\d+)", machine.get("cpu_signature") or "")
    if signature:
        return signature.group(1), signature.group(2)
    named = re.search(r"-model-(\d+)(?:-|$)", folder.name)
    return None, named.group(1) if named else None


def accelerated(machine: dict) -> bool:
    return machine.get("platform") not in (None, "cpu")


def machine_key(machine: dict, folder: Path) -> tuple:
    """What makes two reports one machine: the accelerator's kind, or the CPU's name, cores, family and model
    (one CPU name covers several models, 1.65x apart on the same tests)."""
    if accelerated(machine):
        return ("accelerator", machine["device"])
    return ("cpu", machine.get("cpu"), machine.get("cores"), *cpu_numbers(machine, folder))


def machine_name(machine: dict, folder: Path) -> str:
    """A short name for a table cell: 'NVIDIA H100 80GB HBM3', '2-core Intel Xeon family 6 model 167'."""
    if accelerated(machine):
        return machine["device"].split(":", 1)[1]
    cpu = re.sub(r"\((R|TM)\)", "", machine.get("cpu") or "CPU")
    cpu = re.sub(r"\s+(\d+-Core )?Processor\s*$", "", cpu).strip()
    family, model = cpu_numbers(machine, folder)
    which = f" family {family}" if family else ""
    which += f" model {model}" if model else ""
    return f"{machine.get('cores')}-core {cpu}{which}"


def latest_reports(results: Path) -> list[tuple[Path, dict]]:
    """(folder, its part records) of the report standing for each machine, accelerators first, then CPUs by
    date: the newest of its fullest mode, so that a quick run of one part never takes a full report's place."""
    chosen: dict[tuple, tuple[tuple[int, str], Path, dict]] = {}
    for folder in sorted(p for p in results.iterdir() if (p / "report.md").exists()):
        parts = load_parts(folder)
        if not parts:
            continue
        machine = next(iter(parts.values()))["machine"]
        fullest = min(MODE_RANK.get(p.get("mode"), 0) for p in parts.values())  # a folder's least full part
        rank = (fullest, max(p["when"] for p in parts.values()))
        key = machine_key(machine, folder)
        if key not in chosen or rank > chosen[key][0]:
            chosen[key] = (rank, folder, parts)
    ordered = sorted(chosen.values(), key=lambda x: (not accelerated(next(iter(x[2].values()))["machine"]), x[0][1]))
    return [(folder, parts) for _, folder, parts in ordered]


def machine_line(folder: Path, parts: dict, readme: Path) -> str:
    """One line per machine: what it is, its versions, the mode, the dates and the full report."""
    m = next(iter(parts.values()))["machine"]
    host = f"{m.get('cpu')}, {m.get('cores')} cores, {fmt_bytes(m.get('host_memory_bytes'))} memory"
    if accelerated(m):
        what = f"x {m.get('device_count', 1)}, {fmt_bytes(m.get('device_memory_bytes'))} usable by jax; host: {host}"
    else:
        what = f"CPU only, {fmt_bytes(m.get('host_memory_bytes'))} memory"
    modes = ", ".join(sorted({p["mode"] for p in parts.values()}))
    dates = sorted({p["when"][:10] for p in parts.values()})
    link = Path(os.path.relpath(folder / "report.md", readme.parent)).as_posix()
    return (
        f"- **{machine_name(m, folder)}** ({what}; jax {m.get('jax')}, flax {m.get('flax')}, Python"
        f" {m.get('python')}): `python -m bench` ({modes} mode), {' to '.join(dict.fromkeys([dates[0], dates[-1]]))},"
        f" [full report]({link})"
    )


def same_cpu(a: tuple, b: tuple) -> bool:
    """Whether two CPU machine keys may be one CPU: the same name and cores, and the same family and model
    where both reports know them (older reports recorded neither)."""
    if a[0] != "cpu" or b[0] != "cpu" or a[1:3] != b[1:3]:
        return False
    return all(x is None or y is None or x == y for x, y in zip(a[3:], b[3:], strict=True))


def superseded(name: str, folder: Path, parts: dict, reports: list[tuple[Path, dict]]) -> bool:
    """Whether a newer report of a CPU that may be this one measured part `name` again (its row stands)."""
    rec = parts[name]
    key = machine_key(rec["machine"], folder)
    return any(
        other is not folder
        and name in theirs
        and same_cpu(key, machine_key(theirs[name]["machine"], other))
        and theirs[name]["when"] > rec["when"]
        for other, theirs in reports
    )


def figure_rows(reports: list[tuple[Path, dict]]) -> list[str]:
    """Every part's headline figures as one table, part by part, each row naming its date and machine; a part
    measured again on a CPU that may be the same shows its newest figures only."""
    rows = ["| part | what | figure | measured (date, machine) |", "|---|---|---|---|"]
    for name in ORDER:
        for folder, parts in reports:
            if name not in parts or superseded(name, folder, parts, reports):
                continue
            rec = parts[name]
            when = f"{rec['when'][:10]}, {machine_name(rec['machine'], folder)}"
            when += "" if rec.get("mode") == "full" else f", {rec.get('mode')} mode"
            rows += [f"| {name} | {h['what']} | {h['figure']} | {when} |" for h in rec["result"].get("headlines", [])]
    return rows


def block(results: Path, readme: Path) -> str:
    reports = latest_reports(results)
    lines = [
        START,
        "<!-- generated by `python -m bench.readme` from bench/results: do not edit by hand -->",
        "",
        "Each machine's newest report (its fullest mode):",
        "",
        *[machine_line(folder, parts, readme) for folder, parts in reports],
        "",
        *figure_rows(reports),
        "",
        END,
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="bench/results")
    parser.add_argument("--readme", default="README.md")
    args = parser.parse_args()
    readme, results = Path(args.readme), Path(args.results)
    if not results.is_dir():
        sys.exit(f"error: --results {results} is not a folder")
    text = readme.read_text()
    if START not in text or END not in text:
        sys.exit(f"error: {readme} has no {START} ... {END} block to fill")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(head + block(results, readme) + tail)
    print(f"wrote the measured block of {readme} from {len(latest_reports(results))} report(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
