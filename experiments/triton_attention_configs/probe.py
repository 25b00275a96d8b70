"""Every config of the Triton attention's autotuning space, launched one at a time outside the autotuner
on a bench case: is each one correct (NaN-poisoned output, max error against cuDNN's SDPA, twice), and
how fast is it (triton.testing.do_bench, L2 flushed before each call) beside cuDNN's SDPA?

    python -m experiments.triton_attention_configs.probe [--case B,H,S,D,causal,dtype ...] [--out FILE.jsonl]

Rows go to FILE.jsonl as they come, a table to stdout at the end.
"""
import argparse
import json
import math

import torch
import torch.nn.functional as F
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

from backends.triton import attention as lab

CASES = ("4,32,4096,128,0,float16", "4,32,4096,128,0,bfloat16", "16,16,1024,64,0,bfloat16")


def launcher(config, warp_specialize, args, heads, causal, d):
    """One config's launch, the autotuner bypassed."""
    grid = (triton.cdiv(args[4], config.kwargs["BM"]), heads)
    meta = {**config.kwargs, "WARP_SPECIALIZE": warp_specialize}
    return lambda: lab.attention_fwd.fn[grid](*args, CAUSAL=bool(causal), HEAD_DIM=d, **meta,
                                              num_warps=config.num_warps, num_stages=config.num_stages)


def probe(b, h, s, d, causal, dtype, out=None):
    torch.manual_seed(0)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=getattr(torch, dtype)) for _ in range(3))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        ref_ms = do_bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)))
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    ws = lab.warp_specialisable(s, bool(causal))
    # the plain loop's configs, each also warp-specialised where the kernel may be (the rule that keeps
    # 3 and 4 stages at 4 warps out of the autotuner's warp-specialised space not applied here)
    configs = [c for c in lab.prune(lab.configs(), {"seq": s}, CAUSAL=bool(causal)) if not c.kwargs["WARP_SPECIALIZE"]]
    flops = 4 * b * h * s * s * d / (2 if causal else 1)
    rows = []
    for ws_on in sorted({ws, False}, reverse=True):
        for c in configs:
            row = {"case": f"{b}x{h}x{s}x{d}-{'causal' if causal else 'full'}-{dtype}", "warp_specialize": ws_on,
                   "BM": c.kwargs["BM"], "BN": c.kwargs["BN"], "num_warps": c.num_warps, "num_stages": c.num_stages}
            o = torch.full_like(q, float("nan"))
            launch = launcher(c, ws_on, (q, k, v, o, s, lab.LOG2E / math.sqrt(d)), b * h, causal, d)
            try:
                for attempt in ("first", "second"):
                    o.fill_(float("nan"))
                    launch()
                    torch.cuda.synchronize()
                    row[f"nan_{attempt}"] = int((~torch.isfinite(o)).sum())
                    row[f"max_abs_err_{attempt}"] = float((o.float() - ref.float()).abs().nan_to_num(1e9).max())
                ms = do_bench(launch)
                row.update(ms=ms, tflops=flops / ms / 1e9, pct_of_cudnn=100 * ref_ms / ms, cudnn_ms=ref_ms)
            except Exception as exc:                      # a config the GPU cannot take (resources)
                row["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            rows.append(row)
            if out:
                with open(out, "a") as f:
                    f.write(json.dumps(row) + "\n")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append")
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = []
    for spec in args.case or CASES:
        b, h, s, d, causal, dtype = spec.split(",")
        rows += probe(int(b), int(h), int(s), int(d), int(causal), dtype, args.out)
    print(f"\n{'case':32} ws BM  BN  w s  nan1      nan2      err1     err2      ms   %cuDNN")
    for r in rows:
        head = f"{r['case']:32} {r['warp_specialize']:d} {r['BM']:3} {r['BN']:3} {r['num_warps']} {r['num_stages']} "
        if "error" in r:
            print(head + r["error"][:60])
        else:
            print(head + f"{r['nan_first']:9} {r['nan_second']:9} {r['max_abs_err_first']:8.2g} "
                  f"{r['max_abs_err_second']:8.2g} {r['ms']:7.3f} {r['pct_of_cudnn']:6.1f}")


if __name__ == "__main__":
    main()
