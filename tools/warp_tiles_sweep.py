"""Which plan each Warp tile kernel takes: candidates for backends/warp_tiles (GEMM tile shapes,
block_dim and cuBLASDx or not; row-sum, elementwise and attention plans), compiled ahead in parallel
threads, each built by the lab's Session on a bench case, checked against the float64 reference and
timed cold (L2 flushed, CUDA events: the lab's EventEngine) beside the reference measured the
same way in the same process: cuBLAS (torch.matmul) for GEMM, PyTorch's flash SDPA for attention,
a 1 GiB device copy for the rest.

    python -m tools.warp_tiles_sweep gemm segreduce elementwise attention --out DIR [--dtype float16 ...] [--match RE]

Writes DIR/sweep.json as it goes and prints a table per case, best first. The winners go into
the BEST tables of backends/warp_tiles by hand; `python -m tools.sweep_table` turns sweep.json
files into the report's tables. The candidates are those the kernels still take: plans that
lost and were removed are in the committed sweeps (reports/evidence/warp-tiles/sweeps/).
"""
from __future__ import annotations

import argparse
import itertools
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import problems
from harness.run.session import Session
from tools.sweep import build_and_check, failed, print_case, reference_ms, timed


def gemm_candidates(dtype):
    """(TILE_M, TILE_N, TILE_K, block_dim). Every shape is a cuBLASDx build of its own (Warp builds
    them one at a time, 10-30 s each), so the list is short: wider tiles and deeper K steps (fewer
    trips through tile_matmul's shared-memory accumulator per multiply-add)."""
    from backends.warp_tiles.gemm import Tiles
    if dtype == "float32":
        shapes = [(64, 64, 16, 128), (64, 64, 32, 128), (128, 64, 32, 128), (128, 128, 16, 256),
                  (128, 128, 32, 256), (64, 64, 64, 128)]
        # Warp's scalar GEMM (cuBLASDx off), as benchmark_tile_matmul_pipelined.py runs it
        scalar = [(64, 64, 32, 64), (64, 64, 16, 64), (64, 64, 32, 128), (128, 64, 32, 128), (128, 128, 32, 256)]
    else:
        shapes = [(64, 64, 64, 128), (128, 128, 64, 128), (128, 128, 64, 256), (128, 128, 128, 256),
                  (128, 128, 256, 256), (128, 64, 128, 128), (64, 64, 256, 128), (128, 256, 64, 256),
                  (256, 128, 64, 256)]
        scalar = [(64, 64, 32, 64)]
    return [{"tiles": Tiles(*s)} for s in shapes] + [{"tiles": Tiles(*s, mathdx=False)} for s in scalar]


def segreduce_candidates(cols):
    from backends.warp_tiles.segreduce import LONG, Plan
    if cols < LONG:
        return [{"plan": Plan("loop", r, 256, bd)} for r, bd in itertools.product((4, 16, 64), (32, 64, 128))]
    shared = (1024, 2048, 4096, 8192), (32, 64, 128, 256, 512)
    prefetch = (1024, 2048, 4096, 8192), (128, 256, 512)
    return [{"plan": Plan("shared", 1, c, bd)} for c, bd in itertools.product(*shared) if 4 <= c // bd <= 128] + \
        [{"plan": Plan("prefetch", 1, c, bd)} for c, bd in itertools.product(*prefetch) if c // bd <= 32]


def elementwise_candidates(dtype):
    from backends.warp_tiles.elementwise import Plan
    if dtype == "float32":          # already at the copy's rate (1-D register tiles): the earlier choice and two more
        return [{"plan": Plan(0, t, bd)} for t, bd in ((2048, 256), (4096, 256), (1024, 128))]
    # 16-bit: Warp vectorizes 2-D shared-memory tiles to 16-byte accesses, 1-D register tiles not;
    # the row length of the 2-D view made no difference (256, 512, 1024 within 0.1%)
    return [{"plan": Plan(0, t, bd)} for t, bd in ((2048, 256), (4096, 256))] + \
        [{"plan": Plan(256, t, bd)} for t, bd in itertools.product((2048, 4096, 8192, 16384), (32, 64, 128, 256, 512))
         if 4 <= t // bd <= 128]


def attention_candidates(head_dim):
    """(BM, BN, block_dim), a cuBLASDx build each (two tile_matmul shapes). Shared memory holds Q, K and V,
    three float32 (BM x BN) tiles (S, S masked, P), P in 16 bits and the float32 (BM x D) product P V:
    at head dim 128, 64 x 64 tiles take 138 KB (one block a multiprocessor), 64 x 32 and 32 x 64 under
    100 KB (two), 128 x 64 over the 227 KB a block may have."""
    from backends.warp_tiles.attention import Plan
    shapes = [(64, 64, 128), (64, 64, 256), (64, 32, 128), (32, 64, 64), (128, 32, 256)]
    if head_dim <= 64:
        shapes += [(128, 64, 256)]
    return [{"plan": Plan(*s)} for s in shapes]


def cases(problem: str, dtypes: list[str] | None, match: str | None = None) -> list[tuple[str, list[dict]]]:
    """(bench case, candidates) for one problem; `match`: only candidates whose repr it finds."""
    prob = problems.get(problem)
    out = []
    for c in prob.cases():
        if c.kind != "bench" or (dtypes and c.dtype not in dtypes):
            continue
        if problem == "gemm":
            if c.name in ("8192x8192x8192-bfloat16", "8192x8192x8192-float16", "4096x4096x4096-float32"):
                out.append((c.name, gemm_candidates(c.dtype)))
        elif problem == "segreduce":
            out.append((c.name, segreduce_candidates(c.shape["cols"])))
        elif problem == "elementwise":
            out.append((c.name, elementwise_candidates(c.dtype)))
        elif problem == "attention":
            out.append((c.name, attention_candidates(c.shape["D"])))
    if match:
        out = [(name, [o for o in cands if re.search(match, repr(o))]) for name, cands in out]
    return [(name, cands) for name, cands in out if cands]


def compile_ahead(module, case, candidates):
    """Compile every candidate's kernels in parallel threads (a cuBLASDx GEMM takes seconds)."""
    import warp as wp
    pairs = [kb for opts in candidates for kb in module.kernels(case, **opts)]

    def load(pair):
        kernel, block_dim = pair
        try:
            wp.load_module(kernel.module, device="cuda:0", block_dim=block_dim, max_workers=0)
        except Exception as exc:                  # reported again when that candidate is built
            return f"{type(exc).__name__}: {exc}"
    t0 = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(load, pairs))
    return time.perf_counter() - t0


def sweep(problem: str, dtypes, match, out: Path, rows: list) -> None:
    import backends
    module = backends.implementation("warp_tiles", problem)
    prob = problems.get(problem)
    sessions = {"warp": Session("warp_tiles", "")}
    s = sessions["warp"]
    for case_name, candidates in cases(problem, dtypes, match):
        case = prob.case(case_name)
        compile_s = compile_ahead(module, case, candidates)
        ref_label, ref_ms = reference_ms(problem, case, s, sessions)
        arrays = s.arrays(prob, case, 0)
        print(f"\n{problem} {case_name}: {len(candidates)} candidates compiled in {compile_s:.0f} s; "
              f"{ref_label} {ref_ms:.4f} ms", flush=True)
        for opts in candidates:
            row = {"problem": problem, "case": case_name, "gpu": s.device.properties()["name"],
                   **{k: v._asdict() for k, v in opts.items()}, "reference": ref_label, "reference_ms": ref_ms}
            try:
                run, _ = build_and_check(s, problem, case, arrays, opts)
                row.update(timed(s, problem, case, run, ref_ms))
            except Exception as exc:
                row.update(failed(exc))
            rows.append(row)
            (out / "sweep.json").write_text(json.dumps(rows, indent=1) + "\n")
        print_case([r for r in rows if r["problem"] == problem and r["case"] == case_name],
                   lambda r: tuple((r.get("tiles") or r.get("plan")).values()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.warp_tiles_sweep", description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="+", choices=["gemm", "segreduce", "elementwise", "attention"])
    ap.add_argument("--dtype", action="append", help="only these dtypes (repeatable)")
    ap.add_argument("--match", help="only candidates whose repr this regular expression finds, e.g. 'mathdx=False'")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list = []
    for p in args.problems:
        sweep(p, args.dtype, args.match, args.out, rows)
    (args.out / "sweep.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
