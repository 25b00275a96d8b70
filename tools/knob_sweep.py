"""Which knobs an implementation takes, for those whose build() takes keyword knobs and compiles in
seconds (CuTe DSL GEMM: tile, cluster, tile order; nvrtc elementwise: kernel shape): each candidate
built by the lab's Session on a bench case, checked against the float64 reference and timed cold
beside the reference timed the same way in the same process (cuBLAS for GEMM, the 1 GiB copy for
the rest: tools/sweep.py).

    python -m tools.knob_sweep cute_dsl gemm --out DIR [--case NAME ...] [--variant tvm_ffi]
    python -m tools.knob_sweep nvrtc elementwise --out DIR

Writes DIR/sweep.json as it goes and prints a table per case, best first; winners go into the
implementation's defaults by hand.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import problems
from harness.run.session import Session
from tools.sweep import build_and_check, failed, print_case, reference_ms, timed


def cute_dsl_gemm():
    """HopperGemm knobs: 128x256 and 128x128 tiles, 1x1 / 2x1 / 1x2 clusters (a 2x1 cluster multicasts
    B to the two CTAs that share it), tile order swizzled in groups along M or N."""
    out = [{"tile_mn": t, "cluster_mn": c} for t in ((128, 256), (128, 128)) for c in ((1, 1), (2, 1), (1, 2))]
    out += [{"tile_mn": (128, 256), "cluster_mn": c, "swizzle": s, "raster_along_m": m}
            for c in ((1, 1), (2, 1)) for s in (4, 8) for m in (True, False)]
    return out


def nvrtc_elementwise():
    from backends.nvrtc.elementwise import Plan
    return [{"plan": Plan("stride", t, per_sm=b)} for t, b in ((256, 8), (512, 4), (1024, 2), (256, 16))] + \
        [{"plan": Plan("chunks", t, vpt=v)} for t in (128, 256, 512) for v in (1, 2, 4, 8)]


CANDIDATES = {("cute_dsl", "gemm"): (cute_dsl_gemm, ("8192x8192x8192-bfloat16", "8192x8192x8192-float16",
                                                     "4096x4096x4096-bfloat16", "16384x16384x512-bfloat16")),
              ("nvrtc", "elementwise"): (nvrtc_elementwise, ("268435456-float32", "268435456-float16",
                                                             "268435456-bfloat16"))}


def shown(knobs: dict) -> dict:
    """Knobs as JSON: named tuples as dicts, tuples as lists."""
    return {k: v._asdict() if hasattr(v, "_asdict") else list(v) if isinstance(v, tuple) else v
            for k, v in knobs.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.knob_sweep", description=__doc__.splitlines()[0])
    ap.add_argument("backend", choices=sorted({b for b, _ in CANDIDATES}))
    ap.add_argument("problem", choices=sorted({p for _, p in CANDIDATES}))
    ap.add_argument("--case", action="append")
    ap.add_argument("--variant", default="")
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
        for knobs in make():
            row = {"case": name, "backend": args.backend, "variant": args.variant, "knobs": shown(knobs)}
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
