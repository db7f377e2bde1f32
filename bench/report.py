"""report.md of a results folder: the machine, a headline table, then each part's plot and tables.

Written from the part JSONs in the folder (`python -m bench` calls `write`; `python -m
bench.report DIR` rewrites one by hand), so a figure and the machine it was measured on stay
together.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from jaxrl.bench.common import fmt_bytes
from jaxrl.bench.parts import ORDER, load


def load_parts(folder: Path) -> dict[str, dict[str, Any]]:
    """Each part's record in `folder`, in run order (parts never run there are absent)."""
    parts = {}
    for name in ORDER:
        path = folder / f"{name}.json"
        if path.exists():
            parts[name] = json.loads(path.read_text())
    return parts


def machine_lines(m: dict[str, Any]) -> list[str]:
    accel = "none (CPU only)"
    if m.get("platform") not in (None, "cpu"):
        accel = (
            f"{m['device'].split(':', 1)[1]} x {m.get('device_count', 1)},"
            f" {fmt_bytes(m.get('device_memory_bytes'))} usable by jax"
        )
    return [
        f"- CPU: {m.get('cpu')}, {m.get('cores')} cores, {fmt_bytes(m.get('host_memory_bytes'))} memory",
        f"- accelerator: {accel}",
        (
            f"- jax {m.get('jax')}, jaxlib {m.get('jaxlib')}, flax {m.get('flax')}, optax {m.get('optax')},"
            f" Python {m.get('python')}"
        ),
    ]


def ceiling_lines(parts: dict[str, dict[str, Any]]) -> list[str]:
    """The machine's ceilings as the latest part that measured them found them (bench.roofline)."""
    from jaxrl.bench.roofline import describe_ceilings

    measured = [p for p in parts.values() if "ceilings" in p]
    if not measured:
        return []
    latest = max(measured, key=lambda p: p["when"])
    return [f"- ceilings ({latest['part']} part, {latest['when'][:10]}): {describe_ceilings(latest['ceilings'])}"]


def headline_table(parts: dict[str, dict[str, Any]]) -> list[str]:
    """Every part's headline figures as one markdown table."""
    rows = ["| part | what | figure |", "|---|---|---|"]
    for name, rec in parts.items():
        rows += [f"| {name} | {h['what']} | {h['figure']} |" for h in rec["result"].get("headlines", [])]
    return rows


def render(folder: Path) -> str:
    parts = load_parts(folder)
    if not parts:
        return "# Benchmark report\n\nNo part has been run in this folder.\n"
    first = next(iter(parts.values()))
    modes = sorted({p["mode"] for p in parts.values()})
    dates = sorted({p["when"][:10] for p in parts.values()})
    md = [
        f"# Benchmark report: {folder.name}",
        "",
        f"`python -m bench` ({', '.join(modes)} mode), {' to '.join(dict.fromkeys([dates[0], dates[-1]]))}. Machine:",
        "",
        *machine_lines(first["machine"]),
        *ceiling_lines(parts),
        "",
        "## Headlines",
        "",
        *headline_table(parts),
    ]
    for name, rec in parts.items():
        part = load(name)
        md += ["", f"## {rec['title']}", "", f"Part `{name}`, {rec['seconds']:.0f} s, {rec['when']}.", ""]
        doc = (part.__doc__ or "").strip().split("\n\n")
        md += [" ".join(doc[0].split()), ""]
        if (folder / f"{name}.png").exists():
            md += [f"![{rec['title']}]({name}.png)", ""]
        md.append(part.report(rec["result"]))
        if rec["notes"]:
            md += ["", "Skipped:", *[f"- {n}" for n in rec["notes"]]]
    notes = folder / "notes.md"  # what the person who ran it adds: targets, bounds, what did not run
    if notes.exists():
        md += ["", "## Notes", "", notes.read_text().strip()]
    return "\n".join(md).rstrip() + "\n"


def write(folder: Path) -> Path:
    path = folder / "report.md"
    path.write_text(render(folder))
    return path


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit("usage: python -m bench.report RESULTS_DIR")
    print(write(Path(sys.argv[1])))
