"""The talk's compile-time claim, measured: cold and warm compile of the same 8192^3 bf16 GEMM per
implementation, each process fresh (cold: empty JIT caches; warm: the cache a cold one filled), with
the lab's compile-time processes (harness/run/compile_times.py), beside the talk's figures.

    ways compile-table --out DIR [--impl cute_dsl --impl nvrtc ...] [--repeats 3]

Writes DIR/compile_table.json and prints a table. "build" is the implementation's build() for the
case in a fresh process (for CuTe DSL: cute.compile and loading the cubin; for nvrtc: NVRTC and
loading the cubin); "import" is the tool's import and device start-up before it.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from harness.run.compile_times import measure
from harness.run.registry import Impl

CASE = "8192x8192x8192-bfloat16"
TALK = {"cute_dsl": "~0.18 s (the talk: CuTe DSL)", "nvrtc[cutlass]": "~25.8 s (the talk: CUTLASS C++)"}


def add_arguments(ap) -> None:
    ap.add_argument("--impl", action="append", help="backend or backend[variant] (default cute_dsl, nvrtc)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--case", default=CASE)
    ap.add_argument("--out", type=Path, required=True)


def main(args) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for label in args.impl or ["cute_dsl", "cute_dsl[tvm_ffi]", "nvrtc"]:
        backend, _, variant = label.rstrip("]").partition("[")
        scratch = Path(tempfile.mkdtemp(prefix="ways-compile-"))
        r = measure(Impl(backend, variant, "gemm"), scratch, args.out / f"{label}.log", args.repeats, 600.0, {},
                    case=args.case)
        rows.append({"implementation": label, "talk": TALK.get(label, ""), **r})
        (args.out / "compile_table.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(f"\ncompile time, {args.case}, fresh processes (median of {args.repeats}):")
    print(f"{'implementation':20s} {'cold s':>8s} {'warm s':>8s} {'import s':>9s}  talk")
    for r in rows:
        if r.get("error"):
            print(f"{r['implementation']:20s} failed: {r['error'][-200:]}")
            continue
        warm = f"{r['warm_s']:8.3f}" if r.get("warm_s") is not None else f"{'-':>8s}"
        print(f"{r['implementation']:20s} {r['cold_s']:8.3f} {warm} {r['import_s'] or 0:9.3f}  {r['talk']}")
    return 0

