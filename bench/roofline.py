"""How close a run is to the machine's limit: the machine's ceilings, a compiled program's work, and
which of them bounds it.

    python -m bench.roofline                      # this machine's ceilings
    python -m bench.roofline env=snake [k=v ...]  # and one timed chunk of that run, as a share of them

**Ceilings** (`ceilings()`, measured once per `python -m bench` run): the FLOP/s of a large square
matmul in fp32 (full precision) and in bf16, and the bytes/s of a streaming elementwise pass
(read one large array, write another; larger than any cache, so it is the memory's bandwidth).

**Work** (`hlo_cost(compiled)`): what one call of a compiled program computes and moves, read from
its optimized HLO. XLA's own `cost_analysis()` counts a loop's body once whatever its trip count,
so a training update (a scan over the rollout's steps, loops over epochs and minibatches) would be
undercounted by the product of those counts; here each loop's body counts as often as XLA knows it
runs (`known_trip_count`), a loop `counter < K` with a constant K that starts where XLA cannot see
K times (jaxrl starts those at 0), and a loop whose bound is traced (the chunk's loop over
updates) once.
FLOPs: a dot or convolution counts 2 per multiply-add ("matmul FLOPs"); every other arithmetic
op one per element it writes (integer ops too: Snake's bitboards are integer work). Bytes: what
each kernel (a fusion, a dot, a copy...) reads and writes at its boundary, as XLA counts it: a slice
reads only the slice, an in-place update writes only the update. Of a conditional, the costlier
branch counts.

**Bound** (`bound()`): achieved FLOP/s over the matmul ceiling of the run's precision, and achieved
bytes/s over the streaming ceiling, or, above it (the data must have come from cache), over the
cached ceiling (the same pass over 512 KiB, repeated in one program). A run at half or more of
one ceiling is bound by it (compute-bound, memory-bound); a run below half of both is
overhead-bound: its time goes to what neither ceiling measures (small kernels one after another,
loop control, threads waiting, integer and scalar work).
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp

from jaxrl.bench.common import best_times, timed_program

_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4}
_BYTES |= {"s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16, "s4": 1, "u4": 1, "f8e4m3fn": 1, "f8e5m2": 1}
_SHAPE = re.compile(r"\b([a-z]+[0-9]*[a-z0-9]*)\[([\d,]*)\]")
_COMPUTATION = re.compile(r"^(?:ENTRY )?%([\w.\-]+) \(.*\{\s*$")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%([\w.\-]+) = (.+?) ([a-z][a-z0-9\-]*)\((.*)$")
_CALLED = re.compile(r"\b(calls|to_apply|body|condition|true_computation|false_computation)=%([\w.\-]+)")
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")
_TRIP = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
_NO_KERNEL = {
    "parameter",
    "constant",
    "get-tuple-element",
    "tuple",
    "bitcast",
    "after-all",
    "partition-id",
    "replica-id",
}
_FREE = _NO_KERNEL | {"while", "conditional", "call", "broadcast", "iota", "reshape"}  # no arithmetic of their own
_MOVES = {"copy", "slice", "dynamic-slice", "dynamic-update-slice", "gather", "scatter", "transpose", "concatenate"}
_MOVES |= {"pad", "reverse", "convert", "bitcast-convert", "select", "sort", "custom-call", "copy-start", "copy-done"}
_SLICES = {"dynamic-slice", "slice", "gather"}


@dataclass
class Cost:
    """What one call of a program computes and moves."""

    matmul_flops: float = 0.0
    flops: float = 0.0  # every arithmetic op, matmuls included
    bytes: float = 0.0
    untimed_loops: int = 0  # loops whose trip count XLA does not know, counted once

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.matmul_flops + other.matmul_flops,
            self.flops + other.flops,
            self.bytes + other.bytes,
            self.untimed_loops + other.untimed_loops,
        )

    def __mul__(self, k: float) -> Cost:
        return Cost(self.matmul_flops * k, self.flops * k, self.bytes * k, self.untimed_loops)

    def as_dict(self) -> dict[str, float]:
        return {"matmul_flops": self.matmul_flops, "flops": self.flops, "bytes": self.bytes}


@dataclass
class _Instruction:
    name: str
    op: str
    shapes: list[tuple[str, tuple[int, ...]]]  # the output's arrays (several for a tuple)
    operands: list[str]
    attrs: str
    args: str = ""  # the text between the parentheses (a parameter's number)

    @property
    def nbytes(self) -> int:
        return sum(_BYTES.get(t, 4) * math.prod(d) for t, d in self.shapes)

    @property
    def elements(self) -> int:
        return sum(math.prod(d) for _, d in self.shapes)


@dataclass
class _Computation:
    name: str
    body: dict[str, _Instruction] = field(default_factory=dict)
    root: str = ""


def _split_args(rest: str) -> tuple[str, str]:
    """(the operand list, the attributes after it) of an instruction's text after `op(`."""
    depth = 1
    for i, ch in enumerate(rest):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return rest[:i], rest[i + 1 :]
    return rest, ""


def parse_hlo(text: str) -> tuple[dict[str, _Computation], str]:
    """The computations of an HLO module's text, and the entry's name."""
    computations: dict[str, _Computation] = {}
    entry, current = "", None
    for line in text.splitlines():
        if current is None:
            m = _COMPUTATION.match(line)
            if m:
                current = computations.setdefault(m.group(1), _Computation(m.group(1)))
                entry = m.group(1) if line.startswith("ENTRY") else entry
            continue
        if line.strip() == "}":
            current = None
            continue
        m = _INSTRUCTION.match(line)
        if not m:
            continue
        name, type_text, op, rest = m.groups()
        args, attrs = _split_args(rest)
        shapes = [(t, tuple(int(x) for x in d.split(",") if x)) for t, d in _SHAPE.findall(type_text) if t in _BYTES]
        operands = re.findall(r"%([\w.\-]+)", args)
        current.body[name] = _Instruction(name, op, shapes, operands, attrs, args)
        if line.lstrip().startswith("ROOT"):
            current.root = name
    return computations, entry


class _Counter:
    def __init__(self, text: str):
        self.comps, self.entry = parse_hlo(text)
        self.memo: dict[tuple[str, bool], Cost] = {}

    def cost(self, name: str, fused: bool = False) -> Cost:
        """Cost of one run of a computation; `fused`: inside a fusion (arithmetic only, no bytes)."""
        key = (name, fused)
        if key not in self.memo:
            comp = self.comps.get(name)
            total = Cost()
            for inst in comp.body.values() if comp else []:
                total = total + self.instruction(comp, inst, fused)
            self.memo[key] = total
        return self.memo[key]

    def instruction(self, comp: _Computation, inst: _Instruction, fused: bool) -> Cost:
        called = dict(_CALLED.findall(inst.attrs))
        if inst.op == "while":
            trip = _TRIP.search(inst.attrs)
            trips = int(trip.group(1)) if trip else self.constant_bound(self.comps.get(called["condition"]))
            once = self.cost(called["body"]) + self.cost(called["condition"])
            if trips is None:
                return Cost(once.matmul_flops, once.flops, once.bytes, once.untimed_loops + 1)
            return once * trips
        if inst.op == "conditional":
            names = [
                n.strip().lstrip("%") for n in (_BRANCHES.search(inst.attrs) or [None, ""])[1].split(",") if n.strip()
            ]
            names += [called[k] for k in ("true_computation", "false_computation") if k in called]
            branches = [self.cost(n) for n in names]
            return max(branches, key=lambda c: (c.flops, c.bytes), default=Cost())
        if inst.op == "call":
            return self.cost(called["to_apply"], fused)
        if inst.op == "fusion":
            inner = self.cost(called["calls"], fused=True)
            moved = 0.0 if fused else self.fusion_bytes(comp, inst, self.comps[called["calls"]])
            return Cost(inner.matmul_flops, inner.flops, moved, inner.untimed_loops)
        matmul = self.matmul_flops(comp, inst)
        flops = matmul if matmul else (0.0 if inst.op in _FREE | _MOVES else self.arithmetic(comp, inst))
        moved = (
            0.0 if fused or inst.op in _NO_KERNEL | {"while", "conditional", "call"} else self.kernel_bytes(comp, inst)
        )
        return Cost(matmul, flops, moved)

    def constant_bound(self, cond: _Computation | None) -> int | None:
        """K of a loop whose condition is `counter < K` with K a constant and whose start XLA cannot see:
        jaxrl starts such loops at min(x, 0) = 0 to keep a buffer out of a fusion (the replay's
        `materialize`, DQN's gradient steps), so they run K times."""
        root = cond.body.get(cond.root) if cond else None
        if root is None:
            return None
        operands, compare = root.operands, root
        if root.op == "fusion":
            fused = self.comps.get(dict(_CALLED.findall(root.attrs)).get("calls", ""))
            compare = fused.body.get(fused.root) if fused else None
            if compare is None or compare.op != "compare":
                return None
            order = {i.name: int(i.args) for i in fused.body.values() if i.op == "parameter" and i.args.isdigit()}
            operands = [
                root.operands[order[o]] for o in compare.operands if o in order and order[o] < len(root.operands)
            ]
        if compare.op != "compare" or "direction=LT" not in compare.attrs or len(operands) != 2:
            return None
        counter, bound = (cond.body.get(o) for o in operands)
        if counter is None or bound is None or counter.op != "get-tuple-element" or bound.op != "constant":
            return None
        return int(bound.args) if bound.args.lstrip("-").isdigit() else None

    def arithmetic(self, comp: _Computation, inst: _Instruction) -> float:
        if inst.op in ("reduce", "reduce-window"):  # one op per element read
            return float(sum(comp.body[o].elements for o in inst.operands[: len(inst.operands) // 2] if o in comp.body))
        return float(inst.elements)

    @staticmethod
    def matmul_flops(comp: _Computation, inst: _Instruction) -> float:
        if inst.op not in ("dot", "convolution") or len(inst.operands) < 2:
            return 0.0
        lhs, rhs = comp.body.get(inst.operands[0]), comp.body.get(inst.operands[1])
        if lhs is None or rhs is None or not lhs.shapes or not rhs.shapes:
            return 0.0
        out = inst.elements
        if inst.op == "dot":
            dims = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", inst.attrs)
            shape = lhs.shapes[0][1]
            k = math.prod(shape[int(i)] for i in dims.group(1).split(",") if i) if dims else 1
            return 2.0 * out * k
        labels = re.search(r"dim_labels=[^_]+_([^-]+)->", inst.attrs)  # kernel labels, e.g. 01io
        kernel = rhs.shapes[0][1]
        features = kernel[labels.group(1).index("o")] if labels and "o" in labels.group(1) else 1
        return 2.0 * out * math.prod(kernel) / max(features, 1)

    @staticmethod
    def kernel_bytes(comp: _Computation, inst: _Instruction) -> float:
        operand = lambda i: (
            comp.body[inst.operands[i]].nbytes if i < len(inst.operands) and inst.operands[i] in comp.body else 0
        )
        if inst.op in _SLICES:  # reads the slice (and its indices), writes it
            return 2.0 * inst.nbytes + sum(operand(i) for i in range(1, len(inst.operands)))
        if inst.op == "dynamic-update-slice":  # in place: reads and writes the update
            return 2.0 * operand(1) + sum(operand(i) for i in range(2, len(inst.operands)))
        if inst.op == "scatter":
            n = len(inst.operands)
            return 2.0 * sum(operand(i) for i in range(n // 2 + 1, n)) + operand(n // 2)
        return float(inst.nbytes + sum(operand(i) for i in range(len(inst.operands))))

    def fusion_bytes(self, comp: _Computation, inst: _Instruction, fused: _Computation) -> float:
        """A fusion's reads and writes at its boundary: a parameter only sliced counts its slices, the
        buffer an in-place update writes into counts nothing read and only the update written."""
        params = {i.name: int(i.args) for i in fused.body.values() if i.op == "parameter" and i.args.isdigit()}
        users: dict[str, list[_Instruction]] = {}
        for i in fused.body.values():
            for o in i.operands:
                users.setdefault(o, []).append(i)
        in_place = set()
        roots = [fused.body[fused.root]] if fused.root in fused.body else []
        if roots and roots[0].op == "tuple":
            roots = [fused.body[o] for o in roots[0].operands if o in fused.body]
        written = 0.0
        for r in roots:
            if r.op == "dynamic-update-slice" and r.operands and r.operands[0] in params:
                in_place.add(r.operands[0])
                update = fused.body.get(r.operands[1]) if len(r.operands) > 1 else None
                written += update.nbytes if update else 0
            else:
                written += r.nbytes
        read = 0.0
        for pname, index in params.items():
            if pname in in_place or index >= len(inst.operands) or inst.operands[index] not in comp.body:
                continue
            uses = users.get(pname, [])
            if uses and all(u.op in _SLICES and u.operands[0] == pname for u in uses):
                read += sum(u.nbytes for u in uses)
            else:
                read += comp.body[inst.operands[index]].nbytes
        return read + written


def hlo_cost(compiled: Any) -> Cost:
    """One call's work of a compiled jax program (`jax.jit(f).lower(...).compile()`)."""
    counter = _Counter(compiled.as_text())
    return counter.cost(counter.entry)


CACHE_BYTES = 512 * 1024  # the cached pass's array: within a core's L2 on the CPUs measured


def ceilings(size: int | None = None, stream_bytes: int | None = None, repeats: int = 5) -> dict[str, Any]:
    """This machine's ceilings on jax's default device: matmul FLOP/s (fp32 at full precision, bf16) of
    `size` x `size` matrices, and streaming bytes/s of an elementwise pass over `stream_bytes` (default:
    2048 and 256 MiB on a CPU, 8192 and 2 GiB on an accelerator), and of the same pass over 512 KiB
    repeated in one program (data that stays in cache); best of `repeats` calls each, taking turns."""
    accelerator = jax.devices()[0].platform != "cpu"
    size = size or (8192 if accelerator else 2048)
    stream_bytes = stream_bytes or (2 if accelerator else 0.25) * 2**30
    matmul = jax.jit(lambda x, y, p: jnp.dot(x, y, precision=p, preferred_element_type=x.dtype), static_argnums=2)
    a32 = jax.random.normal(jax.random.key(0), (size, size), jnp.float32)
    a16 = a32.astype(jnp.bfloat16)
    x = jnp.ones((int(stream_bytes) // 4,), jnp.float32)
    stream = jax.jit(lambda v: v * 1.5 + 1.0)  # reads one array, writes another
    # The same pass over 512 KiB, 256 times in one program: what data that stays in cache allows.
    small, passes = jnp.ones((CACHE_BYTES // 4,), jnp.float32), 256
    cached = jax.jit(lambda v: jax.lax.fori_loop(0, passes, lambda i, u: u * 0.5 + 1.0, v))
    seconds = best_times(
        {
            "fp32": lambda _: matmul(a32, a32, jax.lax.Precision.HIGHEST),
            "bf16": lambda _: matmul(a16, a16, None),
            "stream": lambda _: stream(x),
            "cached": lambda _: cached(small),
        },
        repeats,
    )
    return {
        "matmul_size": size,
        "stream_bytes": int(stream_bytes),
        "cache_bytes": CACHE_BYTES,
        "matmul_fp32_flops": 2.0 * size**3 / seconds["fp32"],
        "matmul_bf16_flops": 2.0 * size**3 / seconds["bf16"],
        "stream_bytes_per_s": 2.0 * x.nbytes / seconds["stream"],
        "cache_bytes_per_s": 2.0 * small.nbytes * passes / seconds["cached"],
    }


def bound(cost_per_s: dict[str, float], ceiling: dict[str, Any], precision: str = "fp32") -> dict[str, Any]:
    """Shares of the ceilings a run reaches and what bounds it (module doc). `cost_per_s`: its
    matmul FLOP/s, FLOP/s and bytes/s; `precision`: which matmul ceiling applies (fp32 or bf16)."""
    flops_share = cost_per_s["matmul_flops"] / ceiling[f"matmul_{precision}_flops"]
    bytes_share = cost_per_s["bytes"] / ceiling["stream_bytes_per_s"]
    cache_share = cost_per_s["bytes"] / ceiling["cache_bytes_per_s"]
    # Above the streaming ceiling the data came from cache, so the cached pass's rate is what bounds it.
    memory_share = bytes_share if bytes_share <= 1.0 else cache_share
    if max(flops_share, memory_share) < 0.5:
        verdict = "overhead-bound"
    else:
        verdict = "compute-bound" if flops_share >= memory_share else "memory-bound"
    return {"matmul_share": flops_share, "bytes_share": bytes_share, "cache_share": cache_share, "bound": verdict}


def program_cost(program: Any) -> dict[str, float]:
    """Work per env step of a compiled `jaxrl.run.driver.Program` (one update of every seed, over the env
    steps it takes): matmul FLOPs, FLOPs and bytes."""
    cost = hlo_cost(program._compiled)
    steps = program.steps_per_update * program.population
    return {k: v / steps for k, v in cost.as_dict().items()}


def limit_of(run_sps: float, per_step: dict[str, float], ceiling: dict[str, Any], precision: str) -> dict[str, Any]:
    """A run's achieved FLOP/s and bytes/s (steps/s times its work per step) against the ceilings."""
    per_s = {k: v * run_sps for k, v in per_step.items()}
    return {"per_step": per_step, "per_s": per_s, **bound(per_s, ceiling, precision)}


def shared_ceilings(ctx: Any) -> dict[str, Any]:
    """The machine's ceilings for a `python -m bench` run (`bench.common.Context`): measured by the first
    part that asks, once per run (smoke mode: small sizes)."""
    if "ceilings" not in ctx.shared:
        size, stream = ctx.pick(256, None, None), ctx.pick(2**24, None, None)  # None: the machine's default
        ctx.shared["ceilings"] = ceilings(size, stream, repeats=ctx.pick(2, 5, 5))
        ctx.say(f"ceilings: {describe_ceilings(ctx.shared['ceilings'])}")
    return ctx.shared["ceilings"]


def describe_ceilings(c: dict[str, Any]) -> str:
    return (
        f"matmul {c['matmul_fp32_flops'] / 1e9:.1f} GFLOP/s fp32, {c['matmul_bf16_flops'] / 1e9:.1f} GFLOP/s bf16"
        f" ({c['matmul_size']}x{c['matmul_size']}); streaming {c['stream_bytes_per_s'] / 1e9:.1f} GB/s"
        + f", {c['cache_bytes_per_s'] / 1e9:.1f} GB/s in cache"
    )


def describe_limit(limit: dict[str, Any]) -> str:
    per_s = limit["per_s"]
    return (
        f"{per_s['matmul_flops'] / 1e9:.1f} GFLOP/s in matmuls ({limit['matmul_share']:.0%} of the ceiling),"
        f" {per_s['bytes'] / 1e9:.1f} GB/s ({limit['bytes_share']:.0%} of streaming,"
        f" {limit['cache_share']:.0%} of in-cache): {limit['bound']}"
    )


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.split("\n\n")[1])
        return 0
    from jaxrl.bench.machine import describe, title
    from jaxrl.config.compose import compose_config
    from jaxrl.config.schema import ConfigError

    cfg = None
    if argv:
        try:
            cfg, _ = compose_config([*argv, "progress=false"])
        except ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    c = ceilings()
    print(f"{title(describe())}: {describe_ceilings(c)}")
    if cfg is None:
        return 0

    timed, program = timed_program(cfg, updates=None)
    per_step = program_cost(program)
    limit = limit_of(timed["sps"], per_step, c, "bf16" if cfg.precision == "bf16" else "fp32")
    print(
        f"{' '.join(argv)}: {timed['sps']:,.0f} env steps/s; per env step {per_step['matmul_flops'] / 1e3:.1f} kFLOP in"
        f" matmuls, {per_step['flops'] / 1e3:.1f} kFLOP in all, {per_step['bytes'] / 1e3:.1f} kB moved"
    )
    print(f"  {describe_limit(limit)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
