#!/bin/bash
# Each tool's own example or benchmark for the lab's operation, its code imported from a
# checkout in the ignored .upstream/ (never copied into the lab; only the figures are committed, in
# reports/evidence/ceilings/README.md). Fetch here, carry .upstream/<name> to the GPU node, run there after
# `source /tmp/gpu-site/env.sh` (cuTile also needs its site: CUTILE_SITE, default /tmp/cutile-site):
#
#   git -C <NVIDIA/cutile-python> archive 9c3ee3ccc504f18bbabf55b0d3e6d398bb21ecc4 samples test \
#       | tar -x -C .upstream/cutile-python
#   git -C <NVIDIA/cccl> archive 69702a9f63088e9b8b3397ab10621b31338dfaff python/cuda_cccl/benchmarks/compute \
#       | tar -x -C .upstream/cccl          # == cuda-cccl 1.1.1's segmented reduce
#   (.upstream/triton-gluon: python/tutorials/gluon/05-wgmma.py and 07-persistence.py of triton-lang/triton
#    e7fb8414, whose triton/experimental/gluon is Triton 3.6's, by read_file of the code index)
#   (.upstream/triton-tutorials: python/tutorials/09-persistent-matmul.py of the same commit)
#   bash tools/upstream_examples.sh OUTDIR [cutile] [cccl] [cccl-scan] [numba] [gluon] [triton-fp8]
#
# cutile: samples/MatMul.py's cutile_matmul timed by the samples' own report_benchmark (back to back),
#   and test/bench_matmul.py's launcher and torch.matmul timed by its CUDA-graph runner (L2 flushed);
# cccl: benchmarks/compute/segmented_reduce/variable_sum.py (nvbench, L2 flushed), unmodified on its
#   own random segment sizes, and with its offsets generator swapped for fixed rows of 256 (the lab's
#   case); cccl-scan: benchmarks/compute/scan/exclusive/sum.py (nvbench, L2 flushed) at 2^20 and 2^28
#   float32, as published; numba: the vector-add kernel of numba-cuda's doc example test_vecadd.py (shipped in the
#   installed wheel), launched as the example does, timed with CUDA events back to back.
# gluon: Gluon's Hopper GEMM tutorial 07-persistence.py (float16, its Hopper settings: 128x256x64 tiles,
#   3 buffers, 8 warps), pipelined and persistent-pipelined with its grouped scheduler, and torch.matmul
#   beside, each timed by the tutorial's own do_bench_cudagraph at 8192^3 and 4096^3.
# triton-fp8: Triton's own FP8 GEMM on Hopper, tutorial 09-persistent-matmul.py's float8_e4m3fn paths
#   (no scales, e4m3 out, its autotuned configs: persistent, TMA, TMA persistent, device descriptors),
#   and torch._scaled_mm with unit tensorwise scales (bf16 out) beside, all by triton.testing.do_bench
#   (L2 flushed before each call) at 8192^3 and 4096x7168x2048.
set -uo pipefail
out=${1:?usage: upstream_examples.sh OUTDIR [cutile] [cccl] [numba]}; shift
mkdir -p "$out"; out=$(cd "$out" && pwd); CUTILE_SITE=${CUTILE_SITE:-/tmp/cutile-site}
with_cutile() { PYTHONPATH=$CUTILE_SITE:$PYTHONPATH PATH=$CUTILE_SITE/nvidia/cu13/bin:$PATH "$@"; }

[ $# -gt 0 ] || set -- cutile cccl numba
for what in "$@"; do case $what in
cutile)
  (cd .upstream/cutile-python/samples && with_cutile python - <<'EOF') 2>&1 | tee "$out/cutile-sample.txt"
import torch
from MatMul import cutile_matmul                     # (A, B, persistent=False) -> C
from utils.benchmark import report_benchmark
print(torch.cuda.get_device_name(), "samples/MatMul.py cutile_matmul, samples/utils/benchmark.py (back to back)")
for dt, n in ((torch.bfloat16, 8192), (torch.float16, 8192), (torch.float32, 4096)):
    a, b = (torch.randn(n, n, dtype=dt, device="cuda") for _ in range(2))
    for p in (False, True):
        ms = report_benchmark(lambda x, y: cutile_matmul(x, y, persistent=p), (a, b))["mean_time_ms"]
        print(dt, n, "persistent" if p else "per tile", f"{ms:.4f} ms", f"{2 * n**3 / ms / 1e9:.1f} TFLOP/s")
EOF
  (cd .upstream/cutile-python/test && with_cutile python - <<'EOF') 2>&1 | tee "$out/cutile-bench.txt"
import torch
import bench_matmul as bm
import util
print(torch.cuda.get_device_name(), "test/bench_matmul.py launchers, util.benchmark_cudagraph_runner (L2 flushed)")
for dt, n in ((torch.bfloat16, 8192), (torch.float16, 8192), (torch.float32, 4096)):
    a, b = (torch.rand(n, n, dtype=dt, device="cuda") for _ in range(2))
    c = torch.zeros_like(a)
    for name in ("cutile_matmul", "torch_matmul"):
        try:
            f = getattr(bm, name)
            f(a, b, c)
            torch.cuda.synchronize()
            _, it, rounds = util.estimate_bench_iter(f, (a, b, c), cudagraph=True)
            run = util.benchmark_cudagraph_runner(f, (a, b, c), {})
            s = min(run(range(it)) / it for _ in range(rounds))
            print(dt, n, name, f"{s * 1e3:.4f} ms", f"{2 * n**3 / s / 1e12:.1f} TFLOP/s")
        except Exception as exc:
            print(dt, n, name, "failed:", type(exc).__name__, str(exc)[:300])
EOF
  ;;
cccl)
  d=.upstream/cccl/python/cuda_cccl/benchmarks/compute/segmented_reduce
  (cd $d && python variable_sum.py -b variable_medium_dynamic -a "T{ct}=F32" -a "Elements{io}[pow2]=28" \
     -a "MaxSegmentSize[pow2]=8" -a "GuaranteedMaxSegSize[pow2]=8" --md "$out/cccl-random-sizes.md") \
     2>&1 | tail -20 | tee "$out/cccl-random-sizes.txt"
  # a file, not stdin: nvbench parses every argv entry, and `python -` leaves "-" among them
  cat > $d/rows256.py <<'EOF'
import sys
import cupy as cp
import cuda.bench as bench
import variable_sum as v
v.generate_uniform_segment_offsets = lambda n, lo, hi: cp.arange(0, n + 1, hi, dtype=cp.int64)   # rows of 256
b = bench.register(v.bench_variable_segmented_reduce)
b.set_name("rows_256")
b.add_string_axis("T{ct}", ["F32"])
b.add_int64_power_of_two_axis("Elements{io}", [28])
b.add_int64_axis("MaxSegmentSize", [256])
b.add_int64_axis("GuaranteedMaxSegSize", [0, 256])
bench.run_all_benchmarks(sys.argv)
EOF
  (cd $d && python rows256.py --md "$out/cccl-rows256.md") 2>&1 | tail -20 | tee "$out/cccl-rows256.txt"
  ;;
cccl-scan)   # cuda.compute's own scan benchmark (exclusive sum, nvbench, L2 flushed), float32, 2^28 and 2^20
  d=.upstream/cccl/python/cuda_cccl/benchmarks/compute/scan/exclusive
  (cd $d && python sum.py -b base -a "T{ct}=F32" -a "Elements{io}[pow2]=[20,28]" --md "$out/cccl-scan.md") \
    2>&1 | tail -20 | tee "$out/cccl-scan.txt"
  ;;
gluon)
  (cd .upstream/triton-gluon && python - <<'EOF') 2>&1 | tee "$out/gluon-tutorial.txt"
import importlib, sys
import torch, triton
sys.path.insert(0, ".")                               # 07 imports 05-wgmma by name
tutorial = importlib.import_module("07-persistence")
print(torch.cuda.get_device_name(), "triton", triton.__version__,
      "tutorials/gluon/07-persistence.py, 128x256x64, 3 buffers, 8 warps, do_bench_cudagraph")
for n in (8192, 4096):
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.float16) for _ in range(2))
    c = torch.empty(n, n, device="cuda", dtype=torch.float16)
    grouped = tutorial.GroupedPersistentTileScheduler(8)
    for name, fn in (("matmul_pipelined", lambda: tutorial.matmul_pipelined(a, b, c, 128, 256, 64, 3, 8)),
                     ("persistent_matmul_pipelined", lambda: tutorial.persistent_matmul_pipelined(
                         a, b, c, 128, 256, 64, 3, 8, grouped)),
                     ("torch.matmul", lambda: torch.matmul(a, b, out=c))):
        fn()
        ok = torch.allclose(c.float(), (a.float() @ b.float()), atol=0.5, rtol=0.02)
        ms = triton.testing.do_bench_cudagraph(fn)
        print(f"{n}^3 float16 {name}: {ms:.4f} ms, {2 * n**3 / ms / 1e9:.1f} TFLOP/s, matches torch: {ok}")
EOF
  ;;
triton-fp8)
  (cd .upstream/triton-tutorials && python - <<'EOF') 2>&1 | tee "$out/triton-fp8-tutorial.txt"
import importlib, sys
import torch, triton
sys.path.insert(0, ".")
tutorial = importlib.import_module("09-persistent-matmul")
print(torch.cuda.get_device_name(), "triton", triton.__version__,
      "tutorials/09-persistent-matmul.py float8_e4m3fn (no scales), triton.testing.do_bench")
for m, n, k in ((8192, 8192, 8192), (4096, 7168, 2048)):
    a = (0.25 * torch.randn(m, k, device="cuda")).to(torch.float8_e4m3fn)     # sums within e4m3 out
    b = (0.25 * torch.randn(n, k, device="cuda")).to(torch.float8_e4m3fn)     # (N, K): "b is transposed"
    one = torch.ones((), device="cuda")
    want = (a.float() @ b.float().T)
    for name, fn in (("matmul_persistent", lambda: tutorial.matmul_persistent(a, b.T)),
                     ("matmul_tma", lambda: tutorial.matmul_tma(a, b, False)),
                     ("matmul_tma_persistent", lambda: tutorial.matmul_tma_persistent(a, b, False)),
                     ("matmul_descriptor_persistent", lambda: tutorial.matmul_descriptor_persistent(a, b, False)),
                     ("torch._scaled_mm", lambda: torch._scaled_mm(a, b.T, one, one, out_dtype=torch.bfloat16))):
        try:
            got = fn().float()
            ok = torch.allclose(got, want, rtol=0.07, atol=1.0)
            ms = triton.testing.do_bench(fn)
            print(f"{m}x{n}x{k} {name}: {ms:.4f} ms, {2 * m * n * k / ms / 1e9:.1f} TFLOP/s, matches: {ok}")
        except Exception as e:                          # a path this GPU or release does not take
            print(f"{m}x{n}x{k} {name}: {type(e).__name__}: {str(e)[:200]}")
EOF
  ;;
numba)
  python - <<'EOF' 2>&1 | tee "$out/numba-vecadd.txt"
import importlib.util
import textwrap
import cupy as cp
from numba import cuda
src = open(importlib.util.find_spec("numba.cuda.tests.doc_examples.test_vecadd").origin).read()
ns = {"cuda": cuda}
exec(textwrap.dedent(src.split("# ex_vecadd.kernel.begin")[1].split("# ex_vecadd.kernel.end")[0]), ns)
f = ns["f"]                                   # the example's kernel: c = a + b, one element a thread
n, threads = 1 << 28, 256
print(cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "numba-cuda doc example test_vecadd.py, f[n // 256 + 1, 256]")
for dt in (cp.float16, cp.float32):
    a, b = (cp.random.random(n).astype(dt) for _ in range(2))
    c = cp.empty_like(a)
    k = f[n // threads + 1, threads]
    k(a, b, c)
    cp.cuda.runtime.deviceSynchronize()
    assert bool(cp.allclose(c, a + b))
    for _ in range(20):
        k(a, b, c)
    s, e, it = cp.cuda.Event(), cp.cuda.Event(), 50
    s.record()
    for _ in range(it):
        k(a, b, c)
    e.record()
    e.synchronize()
    ms = cp.cuda.get_elapsed_time(s, e) / it
    print(cp.dtype(dt).name, f"{ms:.4f} ms", f"{3 * n * cp.dtype(dt).itemsize / ms / 1e6:.0f} GB/s")
EOF
  ;;
*) echo "unknown: $what" >&2; exit 2 ;;
esac; done
