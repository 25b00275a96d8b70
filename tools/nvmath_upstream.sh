#!/usr/bin/env bash
# nvmath-python's own device GEMM performance examples, run unmodified beside the lab's kernels
#. Their code stays out of the repo: take examples/device from NVIDIA/nvmath-python
# (commit 63409f5, where both files last changed at release 0.8.0; run with the pinned 1.0.0 wheel)
# into an ignored folder and carry it to the GPU node:
#   git clone https://github.com/NVIDIA/nvmath-python .upstream/nvmath-python && git -C .upstream/nvmath-python checkout 63409f5
#   mkdir -p .upstream/nvmath-examples && cp .upstream/nvmath-python/examples/device/*.py .upstream/nvmath-examples/
# then, on the node (after `source /tmp/gpu-site/env.sh`):  bash tools/nvmath_upstream.sh OUTDIR [NAME...]
# (NAME: device_gemm_performance, device_gemm_performance_pipeline, device_gemm_performance_fp16;
# default the first two, as published).
# Each example's output goes to OUTDIR/<name>.txt: the command line, its output (its own CUDA-event
# timer: 100 back-to-back calls after one warm-up, beside cuBLASLt timed the same way) and the wall
# time of the whole script (its cold build included: a fresh process, no cache).
set -uo pipefail
out=${1:?usage: nvmath_upstream.sh OUTDIR [NAME...]}; shift
names=${*:-device_gemm_performance device_gemm_performance_pipeline}
ex=${NVMATH_EXAMPLES:-.upstream/nvmath-examples}
lock=${WAYS_GPU_LOCK:-/tmp/ways-gpu-timing.lock}   # held while an example runs: tools/nvmath_sweep.py times under it too
out=$(realpath -m "$out"); mkdir -p "$out"
if [[ " $names " == *" device_gemm_performance_fp16 "* ]]; then
  sed 's/^    precision = np.float32$/    precision = np.float16/' "$ex/cublasdx_device_gemm_performance.py" > "$ex/fp16_device_gemm_performance.py"
fi
run() {   # run NAME SECONDS FILE
  local name=$1 limit=$2 file=$3 t0=$SECONDS
  [[ " $names " == *" $name "* ]] || return 0
  { echo "\$ python $file  (nvmath-python $(python -c 'import nvmath; print(nvmath.__version__)' 2>/dev/null), limit ${limit} s)"
    (cd "$ex" && timeout "$limit" flock "$lock" python "$file" 2>&1); echo "exit $?, wall $((SECONDS - t0)) s"; } > "$out/$name.txt"
}
# K loop of MM.execute on double-buffered shared memory: fp32 8192^3, 256x128x16 tiles, column-major, as published
run device_gemm_performance 420 cublasdx_device_gemm_performance.py
# DevicePipeline (TMA + warpgroup MMA): fp16 in, fp32 accumulate, 8192^3, 128x128x32, A row- and B column-major
run device_gemm_performance_pipeline 420 cublasdx_device_gemm_performance_pipeline.py
# the same K loop with its one precision line set to np.float16 (A, B and C in fp16, as the example's
# (precision,) * 3 makes them): the example's own fp16 figure (its 1e-5 error assertion then fails, after the timings)
run device_gemm_performance_fp16 420 fp16_device_gemm_performance.py
tail -n 6 "$out"/*.txt
