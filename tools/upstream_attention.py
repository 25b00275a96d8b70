"""Each tool's own published attention example on the lab's attention bench cases, on this GPU.

The examples' code is imported, never copied: from checkouts in the ignored .upstream/ or from the
installed package (JAX Pallas's ops). The checkouts (`git archive <commit> <path> | tar -x -C .upstream/<name>`):
- triton/06-fused-attention.py: python/tutorials/06-fused-attention.py as of Triton 3.6 (the triton
  repository is too big to fetch here: its text from the fork lightseekorg/triton at 36d23e2f with that
  fork's renamed imports restored, checked against triton-lang/Triton-to-tile-IR at 09deb2ab);
- cutile-python: NVIDIA/cutile-python 9c3ee3c, samples/ (AttentionFMHA.py);
- helion: pytorch/helion ef091f41, examples/attention.py;
- tilelang: tile-ai/tilelang a35008a4, examples/flash_attention/;
- cutlass: NVIDIA/cutlass 7107b055, examples/python/CuTeDSL/cute/hopper/kernel/attention/fmha.py and
  examples/python/CuTeDSL/helpers/.
Each is called as its own benchmark calls it, its output checked against PyTorch's SDPA, and timed
by triton.testing.do_bench (L2 flushed before each call, back to back), with PyTorch's flash and cuDNN
SDPA on the same tensors under the same timer beside it (the faster is 100%, as in the lab's rows);
JAX's examples by the Mosaic GPU profiler their own benchmark uses (CUPTI, kernels only).

    python tools/upstream_attention.py [--out FILE.json] [--dtype DTYPE] [--mask full|causal] [NAME...]  # see EXAMPLES
"""
import argparse
import functools
import importlib.util
import json
import math
import os
import sys
import traceback
from pathlib import Path

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")     # JAX beside torch on one GPU
UPSTREAM = Path(__file__).resolve().parent.parent / ".upstream"
CASES = ((4, 32, 4096, 128, False, "bfloat16"), (4, 32, 4096, 128, True, "bfloat16"),
         (4, 32, 4096, 128, False, "float16"), (4, 32, 4096, 128, True, "float16"))
SDPA = ("flash", "cudnn")      # PyTorch's fastest SDPA kernels on Hopper: the faster is 100%, as in the lab


def load(path: Path, name: str, *search: Path):
    """Import an example file as a module, its own folders first on the path (its sibling imports)."""
    sys.path[:0] = [str(p) for p in search or (path.parent,)]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def triton_tutorial(q, k, v, causal):
    """The tutorial's forward (float16; its autotuner on the first call), warp-specialised on Hopper
    where its own benchmark uses that (not causal)."""
    tutorial = load(UPSTREAM / "triton" / "06-fused-attention.py", "fused_attention")
    return lambda: tutorial.attention(q, k, v, causal, 1 / math.sqrt(q.shape[-1]), not causal)


def cutile_sample(q, k, v, causal):
    sample = load(UPSTREAM / "cutile-python" / "samples" / "AttentionFMHA.py", "attention_fmha")
    return lambda: sample.cutile_fmha(q, k, v, tile_m=128, tile_n=128, causal=causal)


def helion_example(q, k, v, causal):
    """examples/attention.py's kernels autotune on first call; with HELION_AUTOTUNE_EFFORT=quick (set
    here unless given) Helion's shorter search, minutes instead of an hour a shape."""
    os.environ.setdefault("HELION_AUTOTUNE_EFFORT", "quick")
    example = load(UPSTREAM / "helion" / "examples" / "attention.py", "helion_attention")
    kernel = example.causal_attention if causal else example.attention

    def run():
        return first(kernel(q, k, v))
    run.config = lambda: repr(kernel.bind((q, k, v))._config)      # the config its autotuner chose
    return run


def first(out):
    """The output alone, where an example also returns its log-sum-exp."""
    return out[0] if isinstance(out, tuple) else out


def tilelang_example(q, k, v, causal):
    """example_mha_fwd_bhsd.py's flashattn (float16 only) with the one config its autotuner lists."""
    example = load(UPSTREAM / "tilelang" / "examples" / "flash_attention" / "example_mha_fwd_bhsd.py",
                   "tilelang_mha_fwd")
    b, h, s, d = q.shape
    kernel = example.flashattn(b, h, s, s, d, causal, block_M=128, block_N=128, num_stages=2, threads=256)
    return lambda: kernel(q, k, v)


def cute_dsl_example(q, k, v, causal):
    """CUTLASS's CuTe DSL Hopper FMHA example (examples/python/CuTeDSL/cute/hopper/kernel/attention/
    fmha.py): its kernel class compiled once on the lab's (B, H, S, D) tensors as zero-copy views in its
    (S, D, 1, H, B) order, with the settings its docstring runs (64 x 128 tiles, persistent); the scale
    1/sqrt(D) given (its own default is 1.0); causal as its run() sets it (a window mask, right edge 0)."""
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    import torch
    from cutlass.cute.runtime import from_dlpack
    root = UPSTREAM / "cutlass" / "examples" / "python" / "CuTeDSL"
    example = load(root / "cute" / "hopper" / "kernel" / "attention" / "fmha.py", "cute_dsl_fmha", root)
    b, h, s, d = q.shape
    o = torch.empty_like(q)
    lse = torch.empty(b, h, s, dtype=torch.float32, device=q.device)

    def view(t):
        return from_dlpack(t.permute(2, 3, 1, 0).unsqueeze(2), assumed_align=16).mark_layout_dynamic(leading_dim=1)

    tensors = [view(t) for t in (q, k, v, o)]
    tensors.append(from_dlpack(lse.permute(2, 1, 0).unsqueeze(1).unsqueeze(1), assumed_align=16)
                   .mark_layout_dynamic(leading_dim=0))
    tile = (64, 128)
    masks = example.fmha_utils.MaskEnum
    mask = masks.WINDOW_MASK if causal or s % tile[1] == 0 else masks.RESIDUAL_MASK
    kernel = example.HopperFusedMultiHeadAttentionForward(cutlass.Float32, cutlass.Float32, (*tile, d), True, mask)
    scale = 1 / math.sqrt(d)
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    args = (*tensors, scale * math.log2(math.e), scale, 1.0, None, cutlass.Int32(0) if causal else None, stream)
    compiled = cute.compile(kernel, *args)

    def run():
        compiled(*args)
        return o
    return run


def pallas_triton(q, k, v, causal):
    """jax.experimental.pallas.ops.gpu.attention.mha: Pallas's Triton-lowered attention op."""
    from jax.experimental.pallas.ops.gpu import attention
    return jax_call(lambda a, b, c: attention.mha(a, b, c, None, sm_scale=1 / math.sqrt(a.shape[-1]),
                                                  causal=causal), q, k, v)


def pallas_mosaic(q, k, v, causal):
    """jax.experimental.pallas.ops.gpu.attention_mgpu.attention: the Mosaic GPU (Hopper) example
    (float16), with the block sizes its own benchmark (main) tries first. It applies no scale: Q comes
    scaled by 1/sqrt(D)."""
    from jax.experimental.pallas.ops.gpu import attention_mgpu as mgpu
    config = mgpu.TuningConfig(block_q=64, block_kv=128, max_concurrent_steps=2, causal=causal)
    scaled = (q.float() / math.sqrt(q.shape[-1])).to(q.dtype)
    return jax_call(lambda a, b, c: mgpu.attention(a, b, c, config), scaled, k, v)


def jax_call(fn, q, k, v):
    """JAX takes (batch, seq, heads, dim): the torch tensors transposed once, outside the timing."""
    import jax
    import jax.numpy as jnp
    args = [jnp.asarray(t.transpose(1, 2).float().cpu().numpy()).astype(getattr(jnp, str(t.dtype)[6:]))
            for t in (q, k, v)]
    jitted = jax.jit(fn)

    def run():
        return jitted(*args).block_until_ready()
    run.jax = (fn, args)
    return run


EXAMPLES = {"triton": triton_tutorial, "cutile": cutile_sample, "helion": helion_example,
            "tilelang": tilelang_example, "cute_dsl": cute_dsl_example, "pallas-triton": pallas_triton,
            "pallas-mosaic": pallas_mosaic}


def measure(name, build, case):
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench
    BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}

    b, h, s, d, causal, dtype = case
    flops = 4 * b * h * s * s * d / (2 if causal else 1)
    q, k, v = (torch.randn(b, h, s, d, dtype=getattr(torch, dtype), device="cuda") for _ in range(3))
    row = {"example": name, "case": f"{b}x{h}x{s}x{d}-{'causal' if causal else 'full'}-{dtype}"}
    try:
        run = build(q, k, v, causal)
        out = run()
        for kernel in SDPA:
            with sdpa_kernel(BACKENDS[kernel]):
                sdpa = functools.partial(F.scaled_dot_product_attention, q, k, v, is_causal=causal)
                ref = sdpa()
                row[f"{kernel}_do_bench_ms"] = do_bench(sdpa)
        got = torch.from_numpy(np.asarray(out, dtype=np.float32)).cuda().transpose(1, 2) if hasattr(run, "jax") \
            else out.float()
        row["max_abs_diff_vs_sdpa"] = float((got - ref.float()).abs().max())
        if hasattr(run, "jax"):
            from jax.experimental.mosaic.gpu import profiler
            fn, args = run.jax
            _, ms = profiler.measure(fn)(*args)
            row["profiler_ms"] = ms
        else:
            ms = row["do_bench_ms"] = do_bench(run)
        if hasattr(run, "config"):
            try:
                row["config"] = run.config()
            except Exception as exc:    # the figure stands without it
                row["config"] = f"not read: {type(exc).__name__}: {exc}"
        row["tflops"] = flops / ms / 1e9
        row["pct_of_fastest_sdpa"] = 100 * min(row[f"{k}_do_bench_ms"] for k in SDPA) / ms
    except Exception as exc:            # an example that does not take the case says why; the rest go on
        row["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
        traceback.print_exc()
    print(json.dumps(row), flush=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"examples to run (default: all of {', '.join(EXAMPLES)})")
    parser.add_argument("--out", type=Path, help="the rows as JSON, written after each")
    parser.add_argument("--dtype", choices=sorted({c[-1] for c in CASES}), help="that dtype's cases only")
    parser.add_argument("--mask", choices=("full", "causal"), help="those cases only")
    args = parser.parse_args()
    unknown = set(args.names) - set(EXAMPLES)
    if unknown:
        parser.error(f"no example named {', '.join(sorted(unknown))}; known: {', '.join(EXAMPLES)}")
    import torch
    rows = []
    for name in args.names or EXAMPLES:
        for case in CASES:
            if args.dtype in (None, case[-1]) and args.mask in (None, "causal" if case[4] else "full"):
                rows.append(measure(name, EXAMPLES[name], case))
                if args.out:
                    args.out.write_text(json.dumps(rows, indent=1))
    print(f"\n{torch.cuda.get_device_name()}: the tools' own attention examples (ms, TFLOP/s, % of the faster of "
          f"flash and cuDNN SDPA by do_bench; JAX's own time by its profiler)")
    for r in rows:
        ms = r.get("do_bench_ms", r.get("profiler_ms"))
        text = r.get("error") or f"{ms:.3f} ms {r['tflops']:6.1f} TF {r['pct_of_fastest_sdpa']:5.1f}% of SDPA " \
                                 f"(max |diff| {r['max_abs_diff_vs_sdpa']:.2e})"
        print(f"{r['example']:<14} {r['case']:<28} {text}")


if __name__ == "__main__":
    main()
