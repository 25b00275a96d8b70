# ruff: noqa  (the probe as it ran on the node for issue 6, kept as the record of how its figures were made)
"""The issue-6 probe on the H100 (run from the checkout as `python3 tools/full_control_probe.py overhead
cute nvrtc` with the CuTe DSL bundle; it ran as reports/h100/full_control/probe.py, where its
figures, probe.json, still are): nvrtc GEMM tile variants, CuTe DSL GEMM configurations (the lab kernel
and the example's persistent variant), and CuTe DSL launch overhead with and without TVM-FFI.
Needs scratch/cdsl/dense_gemm_persistent_lab.py: CUTLASS's examples/python/CuTeDSL/cute/hopper/kernel/
dense_gemm/dense_gemm_persistent.py with BFloat16 added to is_valid_dtypes (as PR NVIDIA/cutlass#3648).
Event timing after 0.5 s of warm-up, median of 30, no L2 flush. Writes $OUT/probe_s3.json.
Its cute part imports backends/cute_dsl/_hopper_gemm.py (CUTLASS's example as the lab then vendored
it), removed for issue 19: run that part from a checkout of commit 57129c1."""
import json, os, re, statistics, sys, time
sys.path.insert(0, os.getcwd()); sys.path.insert(0, os.path.join(os.getcwd(), "scratch", "cdsl"))
import numpy as np
import torch

OUT = os.environ.get("OUT", "/tmp")
results = []
torch.manual_seed(0)


def bench(fn, warm_s=0.5, reps=30):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warm_s:
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def rec(kind, name, ms, flops, ref_ms, err, **kw):
    r = dict(kind=kind, name=name, ms=ms, tflops=flops / ms / 1e9, pct_cublas=100 * ref_ms / ms, err=err, **kw)
    results.append(r)
    print(f"{kind:8s} {name:40s} {ms:8.3f} ms {r['tflops']:7.1f} TFLOP/s {r['pct_cublas']:6.1f}% err {err:.2e}", flush=True)


M = N = K = 8192
flops = 2 * M * N * K
ab = {dt: (torch.rand(M, K, device="cuda", dtype=dt) - 0.5, torch.rand(K, N, device="cuda", dtype=dt) - 0.5)
      for dt in (torch.bfloat16, torch.float16)}
ref = {}
for dt, (a, b) in ab.items():
    c = a @ b
    ref[dt] = (c.float(), bench(lambda: torch.matmul(a, b)))
    rec("cublas", f"torch {dt}", ref[dt][1], flops, ref[dt][1], 0.0)


def rel_err(c, dt):
    r = ref[dt][0]
    return float((c.float() - r).abs().max() / r.abs().max())


# ---------------- nvrtc variants
def nvrtc_part():
    from cuda.bindings import driver
    from cuda.core import Device, LaunchConfig, Stream, launch
    from backends.nvrtc import compile_cubin, device_arch
    from backends.nvrtc import gemm as g
    Device(0).set_current()
    stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    variants = [(128, 256, 32, 64, 64, 4), (128, 256, 64, 64, 64, 3), (128, 128, 32, 64, 32, 4),
                (256, 128, 32, 64, 64, 4), (128, 128, 64, 64, 32, 3), (128, 256, 32, 64, 64, 5),
                (128, 128, 32, 64, 64, 4), (64, 256, 32, 64, 64, 4)]
    for bm, bn, bk, wm, wn, st in variants:
        src = re.sub(r"constexpr int BM = .*?;", f"constexpr int BM = {bm}, BN = {bn}, BK = {bk}, WM = {wm}, WN = {wn}, STAGES = {st}, GROUP_M = 8;", g.SOURCE, count=1)
        threads = (bm // wm) * (bn // wn) * 32
        for dt, t in ((torch.bfloat16, "__nv_bfloat16"), (torch.float16, "__half")):
            a, b = ab[dt]
            c = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
            name = f"gemm<{t}, true>"
            try:
                t0 = time.perf_counter()
                kernel = compile_cubin(src, name, device_arch()).get_kernel(name)
                ct = time.perf_counter() - t0
                smem = st * (bm * bk + bk * bn) * 2
                err, = driver.cuKernelSetAttribute(driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem, kernel.handle, 0)
                assert err == driver.CUresult.CUDA_SUCCESS, err
                cfg = LaunchConfig(grid=-(-M // bm) * -(-N // bn), block=threads, shmem_size=smem)
                args = (a.data_ptr(), b.data_ptr(), c.data_ptr(), np.int32(M), np.int32(N), np.int32(K))
                fn = lambda: launch(stream, cfg, kernel, *args)
                fn(); torch.cuda.synchronize()
                e = rel_err(c, dt)
                rec("nvrtc", f"{bm}x{bn}x{bk} w{wm}x{wn} s{st} {t}", bench(fn), flops, ref[dt][1], e,
                    regs=kernel.attributes.num_regs, compile_s=ct)
            except Exception as exc:
                print("nvrtc", bm, bn, bk, wm, wn, st, t, "FAILED", repr(exc)[:400], flush=True)


# ---------------- CuTe DSL GEMM configs
def cute_part():
    import cutlass, cutlass.cute as cute
    import cuda.bindings.driver as cuda
    from cutlass.cute.runtime import from_dlpack, make_fake_stream
    from backends.cute_dsl._hopper_gemm import HopperWgmmaGemmKernel
    from dense_gemm_persistent_lab import HopperWgmmaGemmPersistentKernel
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    configs = [("plain", (128, 256), (1, 1)), ("plain", (128, 256), (2, 1)), ("plain", (128, 256), (1, 2)),
               ("plain", (128, 128), (2, 1)), ("persistent", (128, 256), (1, 1)), ("persistent", (128, 256), (2, 1)),
               ("persistent", (128, 256), (1, 2)), ("persistent", (128, 128), (2, 1))]
    for kind, tile, cluster in configs:
        for dt in (torch.bfloat16, torch.float16):
            a, b = ab[dt]
            c = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
            views = (a.as_strided((M, K, 1), (K, 1, M * K)), b.as_strided((N, K, 1), (1, N, K * N)),
                     c.as_strided((M, N, 1), (N, 1, M * N)))
            t = [from_dlpack(v, assumed_align=16) for v in views]
            try:
                t0 = time.perf_counter()
                if kind == "plain":
                    k = HopperWgmmaGemmKernel(cutlass.Float32, tile, cluster)
                    f = cute.compile(k, *t, stream)
                    fn = lambda: f(*t, stream)
                else:
                    mac = cutlass.utils.HardwareInfo().get_max_active_clusters(cluster[0] * cluster[1])
                    k = HopperWgmmaGemmPersistentKernel(cutlass.Float32, tile, cluster, 1, True)
                    f = cute.compile(k, *t, mac, stream)
                    fn = lambda: f(*t, stream)
                ct = time.perf_counter() - t0
                fn(); torch.cuda.synchronize()
                e = rel_err(c, dt)
                rec("cute", f"{kind} {tile} c{cluster} {dt}", bench(fn), flops, ref[dt][1], e, compile_s=ct)
            except Exception as exc:
                print("cute", kind, tile, cluster, dt, "FAILED", repr(exc)[:600], flush=True)


# ---------------- launch overhead, CuTe DSL elementwise, tiny n
def overhead_part():
    import cutlass, cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack
    from backends.cute_dsl import elementwise as ew, launcher
    import cuda.bindings.driver as cuda
    n = 1024
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    z = torch.empty_like(x)
    inputs, outputs = {"x": x, "y": y, "alpha": 2.0}, {"z": z}
    handle = torch.cuda.current_stream().cuda_stream
    for variant in ("", "tvm_ffi"):
        run = ew.build(None, inputs, outputs, handle, variant)
        run(); torch.cuda.synchronize()
        assert torch.allclose(z, 2 * x + y), variant
        for _ in range(2000): run()
        torch.cuda.synchronize()
        calls = 20000
        t0 = time.perf_counter()
        for _ in range(calls): run()
        host = (time.perf_counter() - t0) / calls * 1e6
        torch.cuda.synchronize()
        results.append(dict(kind="overhead", name=f"cute_dsl[{variant}] axpy n=1024", us_per_call=host))
        print(f"overhead cute_dsl[{variant}] {host:.2f} us/call", flush=True)
    # the plain ABI with a from_dlpack per call (what a caller without cached CuTe tensors pays)
    compiled, _ = ew.compile_case(None, inputs, outputs, "")
    cu = cuda.CUstream(handle)
    fn = lambda: compiled(cutlass.Float32(2.0), *(from_dlpack(t, assumed_align=16) for t in (x, y, z)), cu)
    for _ in range(500): fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(5000): fn()
    host = (time.perf_counter() - t0) / 5000 * 1e6
    torch.cuda.synchronize()
    results.append(dict(kind="overhead", name="cute_dsl[] + from_dlpack per call", us_per_call=host))
    print(f"overhead cute_dsl[] + from_dlpack per call {host:.2f} us/call", flush=True)
    # torch's own launch, for scale
    fn = lambda: torch.add(y, x, alpha=2.0, out=z)
    for _ in range(2000): fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20000): fn()
    host = (time.perf_counter() - t0) / 20000 * 1e6
    results.append(dict(kind="overhead", name="torch.add(out=)", us_per_call=host))
    print(f"overhead torch.add {host:.2f} us/call", flush=True)


for part in sys.argv[1:]:
    try:
        globals()[f"{part}_part"]()
    except Exception as exc:
        import traceback; traceback.print_exc()
    json.dump(results, open(os.path.join(OUT, "probe_s3.json"), "w"), indent=1)
