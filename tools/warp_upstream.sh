#!/usr/bin/env bash
# Warp's own tile benchmarks, run unmodified beside the lab's kernels. Their code stays
# out of the repo: take them from the warp-lang wheel of the version the lab pins, into an ignored
# folder, and carry that folder to the GPU node:
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
#       warp-lang==1.19.0 -d .upstream/whl
#   python -m zipfile -e .upstream/whl/warp_lang-1.19.0-*.whl .upstream/warp-1.19.0
#   mkdir -p .upstream/warp-1.19.0-examples && cp -r .upstream/warp-1.19.0/warp/examples/{benchmarks,tile} .upstream/warp-1.19.0-examples/
# then, on the node (after `source /tmp/gpu-site/env.sh`):  bash tools/warp_upstream.sh OUTDIR
# Each benchmark's output goes to OUTDIR/<name>.txt, with the command line as its first line.
set -uo pipefail
out=${1:?usage: warp_upstream.sh OUTDIR}
ex=${WARP_EXAMPLES:-.upstream/warp-1.19.0-examples}
mkdir -p "$out"
run() {   # run NAME SECONDS ARGS...
  local name=$1 limit=$2; shift 2
  { echo "\$ python $*  (warp $(python -c 'import warp; print(warp.__version__)' 2>/dev/null), limit ${limit} s)"
    timeout "$limit" python "$@" 2>&1; echo "exit $?"; } > "$out/$name.txt"
}
# GEMM: the pipelined tile-matmul benchmark (fp32, cuBLASDx off, as published) at the lab's 4096^3
run tile_matmul_pipelined_4096 120 "$ex/benchmarks/benchmark_tile_matmul_pipelined.py" --size 4096 --iterations 20 --repeats 3 \
  --configs 32,32,16,64 64,64,16,64 64,64,16,128 64,64,32,64 64,64,32,128
# GEMM: the tile-shape search against torch.matmul (fp32 1024^3, cuBLASDx on); 144 shapes, cut at the limit
run benchmark_gemm_1024 150 "$ex/benchmarks/benchmark_gemm.py"
# loads and stores: 1-D register tiles (the elementwise kernel's first plan) and 2-D tiles against memcpy
run tile_load_store_1d_fp16 60 "$ex/benchmarks/benchmark_tile_load_store.py" --ndim 1 --tile-size 2048 --block-dim 256 --dtype float16 --storage register
run tile_load_store_1d_fp32 60 "$ex/benchmarks/benchmark_tile_load_store.py" --ndim 1 --tile-size 2048 --block-dim 256 --dtype float32 --storage register
run tile_load_store_2d_fp16 60 "$ex/benchmarks/benchmark_tile_load_store.py" --ndim 2 --tile-size 32 --block-dim 128 --dtype float16
run tile_load_store_2d_fp32 60 "$ex/benchmarks/benchmark_tile_load_store.py" --ndim 2 --tile-size 32 --block-dim 128 --dtype float32
ls -la "$out"
