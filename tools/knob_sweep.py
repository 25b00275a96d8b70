"""Which knobs an implementation takes, for those whose build() takes keyword knobs (CuTe DSL GEMM:
tile, cluster, tile order; nvrtc elementwise: kernel shape and cache hints; nvrtc[cutlass]: CUTLASS tile and
cluster; cuTile GEMM: tile, hints, persistent, prefetch; cuTile attention: tile, hints, prefetch;
Helion attention: its Config; JAX Pallas attention (Triton lowering): tiles, warps, stages; nvrtc
attention: tiles and Q in registers; TileLang attention: tiles, stages, threads; the
scans of Triton, Gluon, Helion and TileLang (one pass): tile and warps, of cuTile (reduce-then-scan): tile;
nvrtc's scan: its tile; CuTe DSL's scan: tile and
look-back sleep; JAX Pallas's scan: two passes or one, tile and warps; cuda.coop's row sum: loads a
lane has in flight on short rows; numba_simt's row sum: elements or 16-byte vectors on short rows;
Triton's row sum: rows a program and warps on short rows; nvrtc's
row sum: a lane's vectors at once or strided, warps a block, on short rows; cuTile's row sum: its
tile's elements):
each candidate built by the lab's Session on a bench case, checked against the float64 reference and
timed cold beside the reference timed the same way in the same process (cuBLAS for GEMM, the 1 GiB
copy for the rest: tools/sweep.py).

    python -m tools.knob_sweep cute_dsl gemm --out DIR [--case NAME ...] [--variant tvm_ffi]
    python -m tools.knob_sweep nvrtc elementwise --out DIR; python -m tools.knob_sweep cuda_coop segreduce --out DIR
    python -m tools.knob_sweep triton segreduce --out DIR; python -m tools.knob_sweep nvrtc segreduce --out DIR
    python -m tools.knob_sweep cutile segreduce --out DIR; python -m tools.knob_sweep numba_simt segreduce --out DIR
    python -m tools.knob_sweep nvrtc gemm --variant cutlass --out DIR
    python -m tools.knob_sweep cutile gemm --out DIR; ... --variant tf32x3 --case 4096x4096x4096-float32
    python -m tools.knob_sweep cutile attention --out DIR
    python -m tools.knob_sweep helion attention --variant fixed --out DIR
    python -m tools.knob_sweep jax_pallas attention --out DIR; python -m tools.knob_sweep nvrtc attention --out DIR
    python -m tools.knob_sweep triton scan --out DIR; python -m tools.knob_sweep gluon scan --out DIR
    python -m tools.knob_sweep helion scan --variant fixed --out DIR
    python -m tools.knob_sweep tilelang scan --out DIR; python -m tools.knob_sweep cutile scan --out DIR
    python -m tools.knob_sweep tilelang attention --out DIR
    python -m tools.knob_sweep nvrtc scan --out DIR; python -m tools.knob_sweep cute_dsl scan --out DIR
    python -m tools.knob_sweep jax_pallas scan --out DIR

`--only TEXT` (repeatable) keeps the candidates whose knobs, as JSON, contain one of the texts (e.g.
`--only '"items": 12'`: nvrtc's scan at that tile alone), so a call spends its time on what is new.

Writes DIR/sweep.json as it goes and prints a table per case, best first; winners go into the
implementation's defaults by hand.
"""
from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping
from pathlib import Path

import problems
from harness.run.session import Session
from tools.sweep import build_and_check, failed, print_case, reference_ms, timed


def cute_dsl_gemm(case, variant):
    """HopperGemm knobs: 128x256 and 128x128 tiles, 1x1 / 2x1 / 1x2 clusters (a 2x1 cluster multicasts
    B to the two CTAs that share it), tile order swizzled in groups along M or N."""
    out = [{"tile_mn": t, "cluster_mn": c} for t in ((128, 256), (128, 128)) for c in ((1, 1), (2, 1), (1, 2))]
    out += [{"tile_mn": (128, 256), "cluster_mn": c, "swizzle": s, "raster_along_m": m}
            for c in ((1, 1), (2, 1)) for s in (4, 8) for m in (True, False)]
    return out


def nvrtc_elementwise(case, variant):
    from backends.nvrtc.elementwise import Plan
    return [{"plan": Plan("stride", t, per_sm=b)} for t, b in ((256, 8), (512, 4), (1024, 2), (256, 16))] + \
        [{"plan": Plan("chunks", t, vpt=v, streaming=s)} for s in (True, False) for t in (128, 256, 512)
         for v in (1, 2, 4, 8)]


def nvrtc_cutlass_gemm(case, variant):
    """CUTLASS's cooperative kernel (nvrtc[cutlass]): tile 128x256 or 128x128, cluster 2x1 or 1x1."""
    from backends.nvrtc._gemm_cutlass import CONFIGS
    return [{"config": c} for c in CONFIGS]


def cutile_gemm(case, variant):
    """16-bit: 128x128 at one CTA per SM (today), 128x256 / 256x128 in 2-CTA clusters (TMA multicast),
    128x256 with two consumer warpgroups (num_worker_warps=8), each launched per tile or persistent,
    with the loads' prefetch hint (latency) left to the compiler or 8. float32: IEEE SIMT tiles;
    with --variant tf32x3, tensor-core tiles."""
    if variant == "tf32x3":
        return [{"tile": t, "hints": h} for t in ((128, 64, 32), (128, 128, 32), (64, 128, 32))
                for h in ({}, {"occupancy": 1})]
    if case.dtype == "float32":
        return [{"tile": t, "latency": lat} for t in ((32, 32, 32), (64, 32, 32), (32, 64, 32), (64, 64, 16))
                for lat in (0, 4)]
    shapes = (((128, 128, 64), {"occupancy": 1}), ((128, 256, 64), {"num_ctas": 2}), ((256, 128, 64), {"num_ctas": 2}),
              ((128, 256, 64), {"num_worker_warps": 8}), ((128, 256, 64), {"num_ctas": 2, "num_worker_warps": 8}),
              ((128, 256, 64), {"occupancy": 1}))
    return [{"tile": t, "hints": h, "persistent": p, "latency": lat} for t, h in shapes for p in (False, True)
            for lat in (0, 8)]


def cutile_attention(case, variant):
    """128-query tiles in two consumer warpgroups (num_worker_warps=8, the default) with 128- or 64-key
    tiles, the sample's 128 x 128 at two blocks an SM (it spills at D = 128), 64-query tiles at two or
    three blocks an SM, and at D = 64 128 x 256; the loads' prefetch hints the sample's (K 2, V 4) or
    the compiler's."""
    shapes = [((128, 128), {"num_worker_warps": 8}), ((128, 64), {"num_worker_warps": 8}),
              ((128, 128), {"occupancy": 2}), ((64, 128), {"occupancy": 2}), ((64, 128), {"occupancy": 3})]
    if case.shape["D"] == 64:
        shapes.append(((128, 256), {"num_worker_warps": 8}))
    return [{"tile": t, "hints": h, "latency": lat} for t, h in shapes for lat in ((2, 4), (0, 0))]


def helion_attention(case, variant):
    """Query x key tiles (both key loops alike), warps and stages around the lab's Triton attention's
    configs, each with Helion's pointer loads and with its TMA tensor descriptors (which it takes on
    Hopper only, so a CPU never sees them), and the fixed shape as a persistent kernel."""
    import helion
    shapes = ((128, 64, 8, 3), (128, 64, 8, 4), (128, 64, 8, 2), (128, 64, 4, 3), (128, 128, 8, 2), (64, 64, 4, 3))
    loops = 1 + case.shape["causal"]              # causal: a loop before the diagonal band, then the band
    out = [{"config": helion.Config(block_sizes=[m] + [n] * loops, num_warps=w, num_stages=s, indexing=i)}
           for m, n, w, s in shapes for i in ("pointer", "tensor_descriptor")]
    out += [{"config": helion.Config(block_sizes=[128] + [64] * loops, num_warps=8, num_stages=3, indexing=i,
                                     pid_type="persistent_interleaved")} for i in ("pointer", "tensor_descriptor")]
    return out


def tilelang_scan(case, variant):
    """The one-pass TileLang scan's tile (rows x columns, one warp scanning a row) and its threads: the
    Triton and Helion sweeps found 4 warps where 8 lost a third of the bandwidth."""
    shapes = ((8, 2048, 256), (16, 1024, 256), (8, 1024, 256), (8, 1024, 128), (4, 2048, 128), (16, 1024, 512),
              (16, 2048, 256), (32, 1024, 256))
    return [{"tile_rows": r, "tile_cols": c, "threads": t} for r, c, t in shapes]


def tilelang_attention(case, variant):
    """(queries, keys a step, stages, threads) around the example's one config (128 x 128, 2 stages, 256
    threads: two consumer warpgroups, TileLang adds the TMA producer): 64-key steps in 2 and 3 stages
    (shared memory: Q, O and 3 K and V tiles fit 227 KB at head dim 128), no pipelining, one warpgroup."""
    shapes = ((128, 128, 2, 256), (128, 64, 2, 256), (128, 64, 3, 256), (128, 128, 1, 256), (64, 128, 2, 128),
              (64, 64, 3, 128))
    return [{"block_m": m, "block_n": n, "stages": st, "threads": t} for m, n, st, t in shapes]


def cutile_scan(case, variant):
    """cuTile's reduce-then-scan: the elements a block sums, then scans; last (an earlier one-pass try
    did not finish on the GPU), its windowed one-pass look-back."""
    return [{"tile": t} for t in (1024, 2048, 4096, 8192, 16384)] + \
        [{"tile": t, "one_pass": True} for t in (4096, 8192)]


def nvrtc_attention(case, variant):
    """The CUDA C++ FlashAttention-2 kernel's tiles (warps of 32 query rows, keys a block) and whether Q
    stays in registers: FlashAttention-2's tiles first, then their neighbours (2 warps do not take D 128)."""
    if case.shape["D"] > 64:
        tiles = ((4, 64, False), (4, 64, True), (4, 32, False), (4, 32, True), (8, 64, False), (8, 32, False))
    else:
        tiles = ((4, 128, False), (4, 128, True), (4, 64, False), (8, 128, False), (8, 64, False), (2, 128, False))
    return [{"warps": w, "block_m": 32 * w, "block_n": n, "q_regs": q} for w, n, q in tiles]


def jax_pallas_attention(case, variant):
    """The Triton-lowered Pallas attention's (BM, BN, num_warps, num_stages): its op's default, then
    the lab's earlier 64-key tiles and the neighbours of both."""
    return [{"tiles": t} for t in ((128, 128, 8, 2), (128, 64, 8, 3), (128, 64, 4, 3), (128, 128, 4, 2),
                                   (128, 128, 8, 3), (64, 64, 4, 3), (128, 32, 4, 3))]


def jax_pallas_scan(case, variant):
    """Pallas's reduce-then-scan (the default) against its one-pass look-back: tile and warps."""
    return [{"one_pass": False}] + [{"one_pass": True, "block": b, "warps": w} for b in (4096, 8192, 16384)
                                    for w in (4, 8)]


def cute_dsl_scan(case, variant):
    """The CuTe DSL look-back scan's tile (threads x 128-bit vectors a thread) and its sleep between
    polls of a window with an empty word: the module's tile with its sleep, then tiles without it."""
    tiles = ((128, 8), (256, 4), (128, 4), (256, 2), (256, 8), (512, 2), (512, 4))
    return [{"threads": 128, "vectors_per_thread": 8, "sleep_ns": 100}] + \
        [{"threads": t, "vectors_per_thread": v, "sleep_ns": 0} for t, v in tiles]


def nvrtc_scan(case, variant):
    """The look-back scan's tile (threads x items): CUB's sm90 tile first, then its neighbours (CUB's own
    look-back with its delays, swept here before, lost 12 points to the ticket look-back at CUB's tile),
    then tiles of 6-8K elements: fewer look-backs a byte, for a GPU whose copy outruns the chain of tiles."""
    return [{"threads": t, "items": i} for t, i in ((128, 24), (256, 12), (128, 16), (256, 16), (128, 32),
                                                     (256, 24), (512, 16), (128, 48))]


def one_pass_scan(case, variant):
    """A program's tile (elements) and its warps, for the one-pass look-back scans (triton, gluon, helion[fixed]):
    a larger tile halves the look-backs, a smaller one the registers a thread holds. The larger tiles first:
    the tools' own (Triton's 8192, Helion's 16384) are timed before a sweep's time runs out."""
    return [{"block": b, "warps": w} for b in (16384, 8192, 4096, 2048) for w in (4, 8, 16)]


def cuda_coop_segreduce(case, variant):
    """cuda.coop's short rows (a warp a row): the loads a lane has in flight, one (a plain striped
    loop) to eight (a 256-column row's whole share in one go)."""
    return [{"loads": n} for n in (1, 2, 4, 8)]


def numba_simt_segreduce(case, variant):
    """numba_simt's short rows (a warp a row): elements, four loads a lane in flight (the default), or
    16-byte vectors, two a lane in flight."""
    return [{"vectors": v} for v in (False, True)]


def cutile_segreduce(case, variant):
    """cuTile's row sum: the elements of a block's tile (short rows: rows a block), the default first."""
    return [{"tile_elements": t} for t in (4096, 2048, 8192, 16384)]


def nvrtc_segreduce(case, variant):
    """nvrtc's short rows: a lane's vectors loaded together (CUB's striped direct load) or in its strided
    loop (the default), in blocks of 8, 4 or 16 warps."""
    return [{"at_once": a, "warps": w} for a in (False, True) for w in (8, 4, 16)]


def triton_segreduce(case, variant):
    """Triton's short rows: the rows a program sums (the default: 4096 elements a program) and its warps."""
    return [{"per_program": r, "warps": w} for r in (16, 8, 32, 64) for w in (8, 4, 16)]


SCAN_CASES = ("268435456-float32", "268435456-bfloat16", "1048576-float32")
SHORT_ROW_CASES = ("1048576x256-float32",)
GEMM_CASES = ("8192x8192x8192-bfloat16", "8192x8192x8192-float16", "4096x4096x4096-bfloat16",
              "16384x16384x512-bfloat16")
CANDIDATES = {("cute_dsl", "gemm"): (cute_dsl_gemm, GEMM_CASES),
              ("nvrtc", "gemm"): (nvrtc_cutlass_gemm, GEMM_CASES),       # with --variant cutlass
              ("cutile", "gemm"): (cutile_gemm, ("8192x8192x8192-bfloat16", "8192x8192x8192-float16",
                                                 "4096x4096x4096-float32")),
              ("cutile", "attention"): (cutile_attention, ("4x32x4096x128-full-bfloat16",
                                                           "4x32x4096x128-causal-bfloat16",
                                                           "16x16x1024x64-full-bfloat16",
                                                           "1x16x16384x128-causal-bfloat16")),
              ("nvrtc", "elementwise"): (nvrtc_elementwise, ("268435456-float32", "268435456-float16",
                                                             "268435456-bfloat16")),
              ("nvrtc", "attention"): (nvrtc_attention, ("4x32x4096x128-full-bfloat16",
                                                         "4x32x4096x128-causal-bfloat16",
                                                         "16x16x1024x64-full-bfloat16")),
              ("jax_pallas", "attention"): (jax_pallas_attention, ("4x32x4096x128-full-bfloat16",
                                                                   "4x32x4096x128-causal-bfloat16",
                                                                   "16x16x1024x64-full-bfloat16")),
              ("helion", "attention"): (helion_attention, ("4x32x4096x128-full-bfloat16",       # --variant fixed
                                                           "4x32x4096x128-causal-bfloat16",
                                                           "16x16x1024x64-full-bfloat16")),
              ("cuda_coop", "segreduce"): (cuda_coop_segreduce, SHORT_ROW_CASES),
              ("triton", "segreduce"): (triton_segreduce, SHORT_ROW_CASES),
              ("numba_simt", "segreduce"): (numba_simt_segreduce, SHORT_ROW_CASES),
              ("nvrtc", "segreduce"): (nvrtc_segreduce, SHORT_ROW_CASES),
              ("cutile", "segreduce"): (cutile_segreduce, SHORT_ROW_CASES),
              ("nvrtc", "scan"): (nvrtc_scan, SCAN_CASES),
              ("cute_dsl", "scan"): (cute_dsl_scan, SCAN_CASES),
              ("jax_pallas", "scan"): (jax_pallas_scan, SCAN_CASES),
              ("triton", "scan"): (one_pass_scan, SCAN_CASES),
              ("gluon", "scan"): (one_pass_scan, SCAN_CASES),
              ("helion", "scan"): (one_pass_scan, SCAN_CASES),          # with --variant fixed
              ("tilelang", "scan"): (tilelang_scan, SCAN_CASES),
              ("tilelang", "attention"): (tilelang_attention, ("4x32x4096x128-full-bfloat16",
                                                               "4x32x4096x128-causal-bfloat16")),
              ("cutile", "scan"): (cutile_scan, SCAN_CASES)}


def shown(knobs: dict) -> dict:
    """Knobs as JSON: named tuples and mappings (a helion.Config) as dicts, tuples as lists."""
    return {k: v._asdict() if hasattr(v, "_asdict") else list(v) if isinstance(v, tuple)
            else dict(v) if isinstance(v, Mapping) else v for k, v in knobs.items()}


def selected(candidates: list[dict], only: list[str] | None) -> list[dict]:
    """The candidates whose knobs as JSON contain one of `only` (all of them without it)."""
    return [k for k in candidates if not only or any(text in json.dumps(shown(k)) for text in only)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.knob_sweep", description=__doc__.splitlines()[0])
    ap.add_argument("backend", choices=sorted({b for b, _ in CANDIDATES}))
    ap.add_argument("problem", choices=sorted({p for _, p in CANDIDATES}))
    ap.add_argument("--case", action="append")
    ap.add_argument("--variant", default="")
    ap.add_argument("--only", action="append", help="keep the candidates whose knobs (JSON) contain this text")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if (args.backend, args.problem) not in CANDIDATES:
        ap.error(f"no candidates for {args.backend} {args.problem}: {sorted(CANDIDATES)}")
    make, default_cases = CANDIDATES[args.backend, args.problem]
    args.out.mkdir(parents=True, exist_ok=True)
    prob, s = problems.get(args.problem), Session(args.backend, args.variant)
    sessions, rows, t0 = {}, [], time.perf_counter()
    names = args.case or default_cases
    for name in names:
        case = prob.case(name)
        arrays = s.arrays(prob, case, 0)
        label, ref_ms = reference_ms(args.problem, case, s, sessions)
        print(f"{name}: {label} {ref_ms:.4f} ms", flush=True)
        for knobs in selected(make(case, args.variant), args.only):
            row = {"problem": args.problem, "case": name, "backend": args.backend, "variant": args.variant,
                   "knobs": shown(knobs)}
            try:
                run, row["build_s"] = build_and_check(s, args.problem, case, arrays, knobs)
                row.update(timed(s, args.problem, case, run, ref_ms, warm_s=0.5), gpu=s.device.properties()["name"])
            except Exception as exc:
                row.update(failed(exc))
            row.update(reference=label, reference_ms=ref_ms)
            rows.append(row)
            ok = f"{row['pct_of_reference']:.1f}%" if row["status"] == "ok" else row["error"][:100]
            print(f"[{time.perf_counter() - t0:5.0f} s] {name} {row['knobs']}: {ok}", flush=True)
            (args.out / "sweep.json").write_text(json.dumps(rows, indent=1) + "\n")
        again = reference_ms(args.problem, case, s, sessions)[1]
        print(f"{name}: reference again {again:.4f} ms ({100 * (again / ref_ms - 1):+.1f}%)", flush=True)
    for name in names:
        print(f"\n{args.problem} {name} ({args.backend}{f'[{args.variant}]' if args.variant else ''}):")
        print_case([r for r in rows if r["case"] == name], lambda r: r["knobs"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
