"""Markdown tables of tuning sweeps (the sweep.json files tools/warp_tiles_sweep.py,
tools/nvmath_sweep.py and tools/knob_sweep.py write): one table per problem and case, fastest first, each row naming the
sweep it came from (and its variant and build time where the sweep recorded them).

    python -m tools.sweep_table reports/evidence/warp-tiles/sweeps/*.json
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import problems


def problem_of(row: dict) -> str:
    """The row's problem: recorded, or (knob_sweep rows) the one whose cases include the row's case."""
    return row.get("problem") or next(p for p in problems.names()
                                      if row["case"] in {c.name for c in problems.get(p).cases()})


def tables(paths: list[Path]) -> str:
    by_case: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for path in paths:
        for row in json.loads(path.read_text()):
            by_case[problem_of(row), row["case"]].append({**row, "sweep": path.stem})
    out = []
    for (problem, case), rows in sorted(by_case.items()):
        ref = {(r["reference"], round(r["reference_ms"], 4)) for r in rows}
        out += [f"### {problem} {case}", "",
                "reference in each sweep: " + "; ".join(f"{label} {ms} ms" for label, ms in sorted(ref)), "",
                "| configuration | cold ms | achieved | % of reference | build s | sweep |",
                "|---|---:|---:|---:|---:|---|"]
        for r in sorted(rows, key=lambda r: r.get("cold_ms") or float("inf")):
            config = ", ".join(f"{k}={v}" for k, v in (r.get("tiles") or r.get("plan") or r.get("knobs")).items())
            if r.get("variant"):
                config = f"[{r['variant']}] {config}"
            build = f"{r['build_s']:.0f}" if r.get("build_s") else ""
            if r["status"] != "ok":
                out.append(f"| {config} | failed: {r['error'][:80]} | | | {build} | {r['sweep']} |")
                continue
            achieved = f"{r['tflops']:.1f} TFLOP/s" if problem == "gemm" else f"{r['gb_per_s']:.0f} GB/s"
            out.append(f"| {config} | {r['cold_ms']:.4f} | {achieved} | {r['pct_of_reference']:.1f} | {build} | "
                       f"{r['sweep']} |")
        out.append("")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.sweep_table", description=__doc__.splitlines()[0])
    ap.add_argument("sweeps", nargs="+", type=Path)
    print(tables(ap.parse_args(argv).sweeps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
