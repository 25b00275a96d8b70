"""The lab's timing against an independent timer: for a few cases, the lab's cold and sustained
figures (a normal `ways run` of array_api[torch]) beside triton.testing.do_bench timing the same
implementation, built by the lab's worker Session on a stream made the way the worker makes it.

    ways timer-check --out DIR      (GPU; writes DIR/crosscheck.json and .md)

do_bench times back-to-back calls (it zeroes a 256 MB buffer between them, outside its events), so
it is compared with the lab's sustained mode; the exit status is 1 where they differ by more than
--tolerance (3%).
"""
from __future__ import annotations

import json
from pathlib import Path

import problems
from harness.run import registry
from harness.run.plan import Options
from harness.run.runner import Run

CASES = [("segreduce", "8192x32768-float32"), ("elementwise", "268435456-float32"),
         ("gemm", "8192x8192x8192-bfloat16")]
LABEL = "array_api[torch]"


def lab_figures(out: Path) -> dict:
    """(problem, case) -> the lab's timing record of array_api[torch]."""
    wanted = {p: [problems.get(p).case(c)] for p, c in CASES}
    real = registry.cases_for
    registry.cases_for = lambda p, kinds, custom=None: wanted[p] if "bench" in kinds else real(p, kinds, custom)
    try:
        doc = Run(Options(problems=[p for p, _ in CASES], backends=[LABEL], kinds=("bench",), out=out,
                          measure_compile=False)).execute()
    finally:
        registry.cases_for = real
    return {(r["problem"], r["case"]): r for r in doc["records"] if r["variant"] == "torch"}


def do_bench_ms(problem_name: str, case_name: str) -> tuple[float, float | None]:
    """do_bench's median ms, and the mean SM clock (NVML, read every 10 ms) while it ran."""
    import threading

    import triton.testing

    from harness.measure.timing import SmClock
    from harness.run.session import Session
    s = Session("array_api", "torch")
    problem = problems.get(problem_name)
    b = s.prepare(problem, problem.case(case_name), 0)
    clock, mhz, done = SmClock(s.device.device.pci_bus_id), [], threading.Event()

    def sample():
        while not done.wait(0.01):
            mhz.append(clock.read())
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with s.backend.stream_context(s.stream):
        ms = triton.testing.do_bench(b.run, warmup=500, rep=2000, return_mode="median")
    s.device.sync()
    done.set()
    sampler.join()
    read = [m for m in mhz if m is not None]
    return ms, sum(read) / len(read) if read else None


def add_arguments(ap) -> None:
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--tolerance", type=float, default=0.03, help="largest |sustained / do_bench - 1| (default 0.03)")


def main(args) -> int:
    lab = lab_figures(args.out / "lab")
    rows = []
    for p, c in CASES:
        t = lab[(p, c)]["timing"] or {}
        ref, ref_mhz = do_bench_ms(p, c)
        sus = t.get("device_ms_sustained")
        rows.append({"problem": p, "case": c, "implementation": LABEL, "status": lab[(p, c)]["status"],
                     "lab_cold_ms": t.get("device_ms_cold"), "lab_sustained_ms": sus,
                     "lab_cold_sm_mhz": (t.get("cold") or {}).get("sm_clock_mhz"),
                     "lab_sustained_sm_mhz": (t.get("sustained") or {}).get("sm_clock_mhz"),
                     "do_bench_median_ms": ref, "do_bench_sm_mhz": ref_mhz,
                     "sustained_vs_do_bench": sus / ref - 1 if sus else None})
    (args.out / "crosscheck.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = ["| problem | case | lab cold ms (SM MHz) | lab sustained ms (SM MHz) | do_bench median ms (SM MHz) |"
             " sustained vs do_bench |", "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        diff = r["sustained_vs_do_bench"]
        lines.append(f"| {r['problem']} | {r['case']} | {r['lab_cold_ms']:.4g} ({r['lab_cold_sm_mhz'] or 0:.0f}) | "
                     f"{r['lab_sustained_ms']:.4g} ({r['lab_sustained_sm_mhz'] or 0:.0f}) | "
                     f"{r['do_bench_median_ms']:.4g} ({r['do_bench_sm_mhz'] or 0:.0f}) | {100 * diff:+.1f}% |"
                     if diff is not None else
                     f"| {r['problem']} | {r['case']} | {r['status']} | | {r['do_bench_median_ms']:.4g} | |")
    (args.out / "crosscheck.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    bad = [r for r in rows if r["sustained_vs_do_bench"] is None or abs(r["sustained_vs_do_bench"]) > args.tolerance]
    return 1 if bad else 0

