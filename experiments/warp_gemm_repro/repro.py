"""Minimal reproduction, for an upstream Warp issue, of the tile GEMM's gap to cuBLAS: C = A @ B
written as Warp's benchmark_gemm.py writes it (tile_load, tile_matmul into a float32 tile,
tile_store), against torch.matmul on the same arrays; both timed the same way (CUDA events
around `--iterations` back-to-back launches after a warm-up, the median of `--repeats`).

    python experiments/warp_gemm_repro/repro.py --size 8192 --dtype bfloat16 --tiles 128,128,128,256
    python experiments/warp_gemm_repro/repro.py --size 4096 --dtype float32 --tiles 64,64,32,64 --no-mathdx

Needs only warp-lang and torch (no lab code), so it can be pasted into an issue as it is.
"""
import argparse
import statistics

import torch
import warp as wp


def gemm_kernel(dtype, tm, tn, tk):
    @wp.kernel
    def gemm(a: wp.array2d[dtype], b: wp.array2d[dtype], c: wp.array2d[dtype]):
        i, j = wp.tid()
        acc = wp.tile_zeros(shape=(tm, tn), dtype=wp.float32)
        for k in range(0, a.shape[1], tk):
            wp.tile_matmul(wp.tile_load(a, shape=(tm, tk), offset=(i * tm, k)),
                           wp.tile_load(b, shape=(tk, tn), offset=(k, j * tn)), acc)
        wp.tile_store(c, wp.tile_astype(acc, dtype), offset=(i * tm, j * tn))

    return gemm


def median_ms(fn, iterations, repeats):
    for _ in range(5):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / iterations)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--dtype", choices=["float16", "bfloat16", "float32"], default="bfloat16")
    ap.add_argument("--tiles", default="128,128,128,256", help="TILE_M,TILE_N,TILE_K,BLOCK_DIM")
    ap.add_argument("--no-mathdx", action="store_true", help="Warp's scalar tile_matmul instead of cuBLASDx")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    tm, tn, tk, block_dim = map(int, args.tiles.split(","))
    n = args.size
    wp.set_module_options({"enable_backward": False, "enable_mathdx_gemm": not args.no_mathdx})
    wp.init()

    a, b = (torch.randn(n, n, device="cuda").to(getattr(torch, args.dtype)) for _ in range(2))
    c = torch.empty_like(a)
    wdt = {"float16": wp.float16, "bfloat16": wp.bfloat16, "float32": wp.float32}[args.dtype]
    wa, wb, wc = (wp.from_torch(t, dtype=wdt) for t in (a, b, c))
    kernel = gemm_kernel(wdt, tm, tn, tk)
    stream = wp.stream_from_torch(torch.cuda.current_stream())
    cmd = wp.launch_tiled(kernel, dim=(n // tm, n // tn), inputs=[wa, wb, wc], block_dim=block_dim,
                          stream=stream, record_cmd=True)
    cmd.launch()
    ref = a.float() @ b.float()
    err = ((c.float() - ref).abs().max() / ref.abs().max()).item()

    flop = 2 * n**3
    warp_ms = median_ms(cmd.launch, args.iterations, args.repeats)
    torch_ms = median_ms(lambda: torch.matmul(a, b), args.iterations, args.repeats)
    print(f"{torch.cuda.get_device_name()}, Warp {wp.__version__}, torch {torch.__version__}: "
          f"{n}^3 {args.dtype}, tiles {tm}x{tn}x{tk} block_dim {block_dim}, "
          f"cuBLASDx {'off' if args.no_mathdx else 'on'}; max rel error {err:.1e}")
    print(f"  warp tile_matmul {warp_ms:8.3f} ms {flop / warp_ms / 1e9:7.1f} TFLOP/s")
    print(f"  torch.matmul     {torch_ms:8.3f} ms {flop / torch_ms / 1e9:7.1f} TFLOP/s")
    print(f"  warp / torch     {100 * torch_ms / warp_ms:7.1f} % of torch.matmul's rate")


if __name__ == "__main__":
    main()
