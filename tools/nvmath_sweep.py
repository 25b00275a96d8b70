"""Which plan each nvmath_device kernel takes: candidates for backends/nvmath_device (GEMM tile,
threads, operand order, pipeline depth; row-sum tile and threads), each built in a process of
its own (a cold cuBLASDx build is minutes of CPU, so `--jobs` build at once), then checked and
timed cold one process at a time beside the reference timed in the parent (tools/sweep.py). The
GPU is held through a file lock (`--lock`): anything else that times on the GPU meanwhile takes
it too (`flock FILE python example.py`). `--profile DIR` writes each build's cProfile (where a cold
build's time goes).

    python -m tools.nvmath_sweep gemm segreduce --out DIR [--variant pipeline] [--dtype D] [--match RE] [--jobs 8]

Writes DIR/sweep.json as it goes and prints a table per case, best first; winners go into the
BEST tables of backends/nvmath_device by hand.
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import fcntl
import io
import json
import multiprocessing as mp
import pstats
import re
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import problems

BENCH = {"gemm": ("8192x8192x8192-float16", "4096x4096x4096-float32"),
         "segreduce": ("8192x32768-float32", "1048576x256-float32")}


def candidates(problem, variant, dtype, cols=0):
    if problem == "segreduce":
        from backends.nvmath_device.segreduce import BEST, Plan
        # sweeps 5-6: two-stage plans ran at half the rate of one-stage ones, all with cuBLASDx's
        # plain shared-memory layout and one block per row range; sweep 7: suggested layouts, splits
        if cols < 4096:            # (rows, cols, threads, stages, suggested)
            shapes = ((32, 64, 128, 1, True), (32, 64, 128, 2, True), (32, 128, 128, 2, True), (64, 64, 256, 2, True),
                      (32, 256, 128, 1, True), (16, 256, 128, 1, True), (64, 128, 256, 2, True))
            return [BEST["short"]] + [Plan(*s) for s in shapes]
        shapes = ((32, 128, 256, 1, True, 1), (32, 128, 256, 2, True, 1), (32, 128, 256, 1, True, 4),
                  (32, 128, 256, 1, True, 8), (64, 128, 256, 1, True, 4), (32, 256, 256, 2, True, 4),
                  (16, 256, 128, 2, True, 8), (32, 128, 256, 2, True, 8))
        return [BEST["long"]] + [Plan(*s) for s in shapes]
    from backends.nvmath_device.gemm import Plan
    if variant == "pipeline":          # warpgroup MMA: 128 threads a warpgroup
        shapes = ((128, 128, 32, 128), (128, 128, 64, 128), (128, 256, 64, 128), (128, 256, 64, 256),
                  (256, 128, 64, 256), (128, 256, 32, 256))
        more = [Plan((128, 256, 64), 384), Plan((256, 128, 64), 384), Plan((128, 256, 64), 256, False, 3),
                Plan((128, 256, 128), 256)]
        return [Plan(s[:3], s[3], swap) for s in shapes for swap in (False, True)] + more
    if dtype == "float32":             # nvmath's example: 256x128x16, 256 threads, column-major
        shapes = ((128, 128, 16, 256), (256, 128, 16, 256), (128, 128, 32, 256), (128, 64, 16, 128))
    else:
        shapes = ((128, 128, 32, 256), (128, 128, 64, 256), (256, 128, 32, 256), (128, 256, 32, 256),
                  (64, 128, 64, 128))
    return [Plan(s[:3], s[3], swap) for s in shapes for swap in (False, True)]


def items(problem_names, variant, dtypes, match):
    for problem in problem_names:
        prob = problems.get(problem)
        for name in BENCH[problem]:
            case = prob.case(name)
            if dtypes and case.dtype not in dtypes:
                continue
            if variant == "pipeline" and (problem != "gemm" or case.dtype != "float16"):
                continue
            for plan in candidates(problem, variant, case.dtype, case.shape.get("cols", 0)):
                if not match or re.search(match, repr(plan)):
                    yield problem, name, plan


@contextlib.contextmanager
def gpu_lock(path):
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def measure(problem, case_name, variant, plan, profile_dir, lock):
    """In a worker process: build (profiled if asked), then check and time under the lock (a
    candidate that faults must not do so while another one is timed)."""
    from harness.run.session import Session
    from tools.sweep import build_and_check, failed, timed
    row = {"problem": problem, "case": case_name, "variant": variant, "plan": plan._asdict()}
    try:
        s = Session("nvmath_device", variant)
        prob = problems.get(problem)
        case = prob.case(case_name)
        with gpu_lock(lock):                   # its uploads would slow another candidate's timing
            arrays = s.arrays(prob, case, 0)
        prof = cProfile.Profile() if profile_dir else None
        if prof:
            prof.enable()
        run, row["build_s"] = build_and_check(s, problem, case, arrays, {"plan": plan}, lambda: gpu_lock(lock))
        if prof:
            prof.disable()
            text = io.StringIO()
            pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(45)
            tag = re.sub(r"[^0-9a-zA-Z]+", "_", f"{case_name}_{variant}_{tuple(plan)}")
            (Path(profile_dir) / f"profile_{tag}.txt").write_text(text.getvalue())
        with gpu_lock(lock):
            row["gpu"] = s.device.properties()["name"]
            row.update(timed(s, problem, case, run, None, warm_s=0.5))
    except Exception as exc:
        row.update(failed(exc))
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.nvmath_sweep", description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="+", choices=sorted(BENCH))
    ap.add_argument("--variant", default="", help="'' (K loop) or 'pipeline' (GEMM only)")
    ap.add_argument("--dtype", action="append")
    ap.add_argument("--match", help="only plans whose repr this regular expression finds")
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--profile", type=Path, help="write each build's cProfile into this folder")
    ap.add_argument("--lock", default="/tmp/ways-gpu-timing.lock", help="file locked while timing")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    from harness.run.session import Session
    from tools.sweep import pct_of_reference, print_case, reference_ms
    work = list(items(args.problems, args.variant, args.dtype, args.match))
    cases = sorted({(p, c) for p, c, _ in work})
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    home, sessions, refs, rows, t0 = Session("nvmath_device", ""), {}, {}, [], time.perf_counter()
    with ProcessPoolExecutor(args.jobs, mp_context=mp.get_context("spawn")) as pool:
        futures = [pool.submit(measure, p, c, args.variant, plan, args.profile, args.lock) for p, c, plan in work]
        with gpu_lock(args.lock):              # while the workers build
            for p, c in cases:
                refs[p, c] = reference_ms(p, problems.get(p).case(c), home, sessions)
                print(f"{p} {c}: {refs[p, c][0]} {refs[p, c][1]:.4f} ms", flush=True)
        for f in as_completed(futures):
            row = f.result()
            ref_label, ref_ms = refs[row["problem"], row["case"]]
            row.update(reference=ref_label, reference_ms=ref_ms)
            if row["status"] == "ok":
                case = problems.get(row["problem"]).case(row["case"])
                row["pct_of_reference"] = pct_of_reference(row["problem"], case, row["cold_ms"], ref_ms)
            rows.append(row)
            ok = f"{row['pct_of_reference']:.1f}%" if row["status"] == "ok" else row["error"][:100]
            print(f"[{time.perf_counter() - t0:5.0f} s] {row['case']} {tuple(row['plan'].values())}: {ok}", flush=True)
            (args.out / "sweep.json").write_text(json.dumps(rows, indent=1) + "\n")
    with gpu_lock(args.lock):
        for p, c in cases:
            again = reference_ms(p, problems.get(p).case(c), home, sessions)[1]
            print(f"{p} {c}: reference again {again:.4f} ms ({100 * (again / refs[p, c][1] - 1):+.1f}%)")
    for p, c in cases:
        print(f"\n{p} {c} ({args.variant or 'K loop'}):")
        print_case([r for r in rows if (r["problem"], r["case"]) == (p, c)],
                   lambda r: tuple(r["plan"].values()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
