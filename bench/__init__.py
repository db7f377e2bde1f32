"""How fast: `python -m bench` (installed: `python -m jaxrl.bench`) and what it measures against.

- `__main__.py`: the runner; `parts/`: one module per part of its report, each runnable on its own
  (`python -m bench.parts.train --help`); **a new bench part goes in parts/** (and its name in
  `parts.ORDER`).
- `peers/`: what the parts measure jaxrl against, the PureJaxRL-shaped references and the
  Stable-Baselines3 peer; **a new peer goes in peers/**.
- shared by the parts: `common.py` (the run's context, timing and formatting helpers),
  `machine.py` (what a figure was measured on), `report.py` (a results folder's report.md) and
  `readme.py` (the README's "Measured" block from the reports: `python -m bench.readme`).
- `reference.py`: a tool, not a part: did a change move what a seed learns, this checkout against
  another commit (`python -m bench.reference --against COMMIT`).

Results go to `bench-results/` under the current folder unless `--out` says otherwise: `bench/results/` holds
what a commit records on purpose (`--out bench/results/<machine>-<date>`), so a run never rewrites it.
"""

RESULTS = "bench-results"
