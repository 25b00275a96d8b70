"""Where the CuTe DSL FP8 GEMM leaves C unwritten or wrong: each shape built and called once (the lab's
implementation, C poisoned with NaN, fresh inputs), then per 64-row x 128-column block of C (a consumer
warpgroup's slab of one tile) how many elements are NaN, zero, or beyond the problem's bound, and the
median of C / reference over the finite ones (a scale misread shows as a ratio far from 1); with
--repeat, whether calls on fresh poison write the same bits (a race does not).

    python -m experiments.fp8_edges.probe [--variant V] [--knob NAME=INT ...] [--repeat N]
                                          [--shape M,N,K[,blockwise] ...] [--out FILE]
"""
from __future__ import annotations

import argparse
import json

import numpy as np

SLAB = (64, 128)           # one consumer warpgroup's rows of one tile's columns
# the failing test case, then one edge changed at a time: K, M, N, the scaling; the other test cases
SHAPES = ["64,72,16384", "64,72,384", "64,72,2048", "128,128,16384", "136,72,16384", "64,136,16384",
          "64,72,16384,0", "72,1048,512", "129,264,256", "200,72,384"]


def probe(shape: str, variant: str, knobs: dict, repeat: int) -> dict:
    import torch

    import backends
    import problems
    from problems.base import decode, poison
    m, n, k, *blockwise = (int(x) for x in shape.split(","))
    problem, backend = problems.get("gemm_fp8"), backends.get("cute_dsl", variant)
    case = problem.custom_case({"M": m, "N": n, "K": k, "blockwise": blockwise[0] if blockwise else 1},
                               "float8_e4m3", kind="test")
    why_not = backends.implementation("cute_dsl", "gemm_fp8").supports(case, variant)
    if why_not:
        return {"shape": shape, "variant": variant, "not_applicable": why_not}
    host = problem.make_inputs(case, 0)
    inputs = {name: backend.to_device(v, case.dtype) for name, v in host.items()}
    (shape_c, dt), = problem.output_spec(case).values()
    outputs = {"c": backend.to_device(poison(shape_c, dt), dt)}
    stream = torch.cuda.current_stream().cuda_stream
    run = backend.build("gemm_fp8", case, inputs, outputs, stream, **knobs)
    calls = []
    for _ in range(repeat):
        backend.overwrite(outputs["c"], poison(shape_c, dt), dt)
        run()
        torch.cuda.synchronize()
        calls.append(backend.to_host(outputs["c"]).copy())
    c = decode(calls[0], dt)
    expected = problem.reference(case, host)["c"]
    beyond = np.abs(c - expected.value) > expected.bound
    blocks = {}
    for i in range(0, m, SLAB[0]):
        for j in range(0, n, SLAB[1]):
            part = np.s_[i:i + SLAB[0], j:j + SLAB[1]]
            nan, wrong = int(np.isnan(c[part]).sum()), int((beyond[part] & ~np.isnan(c[part])).sum())
            if nan or wrong:
                finite = np.isfinite(c[part]) & (expected.value[part] != 0)
                ratio = c[part][finite] / expected.value[part][finite]
                blocks[f"{i},{j}"] = {"nan": nan, "wrong": wrong, "zero": int((c[part] == 0).sum()),
                                      "of": int(c[part].size),
                                      "median_ratio": float(np.median(ratio)) if ratio.size else None}
    return {"shape": shape, "variant": variant, "knobs": knobs, "nan": int(np.isnan(c).sum()),
            "wrong": int(beyond.sum()), "of": int(c.size),
            "calls_alike": all(np.array_equal(calls[0], x) for x in calls[1:]), "bad_blocks": blocks}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", default="", help="cute_dsl's variant: '' or overlap")
    ap.add_argument("--knob", action="append", default=[], help="a build knob of the kernel, e.g. swizzle=1")
    ap.add_argument("--repeat", type=int, default=2, help="calls on fresh poison, compared bit for bit")
    ap.add_argument("--shape", action="append", help="M,N,K[,blockwise] (default: the edge shapes above)")
    ap.add_argument("--out", help="also write the results here, as JSON")
    args = ap.parse_args()
    knobs = {name: int(value) for name, value in (k.split("=", 1) for k in args.knob)}
    results = []
    for shape in args.shape or SHAPES:
        try:
            results.append(probe(shape, args.variant, knobs, args.repeat))
        except Exception as exc:             # one shape's failure is its result, the others still run
            results.append({"shape": shape, "variant": args.variant, "error": f"{type(exc).__name__}: {exc}"})
        print(json.dumps(results[-1]), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
