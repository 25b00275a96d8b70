#!/bin/bash
# One step of a GPU session on the node (a call lasts at most 10 minutes), after the lab's bundle is
# unpacked (source /tmp/gpu-site/env.sh) and, for cuTile, its own site (/tmp/cutile-site). Each step
# writes under $OUT/<step>/ and records the GPU's clocks, power and state before and after.
#
#   bash tools/gpu_steps.sh STEP...      steps: cutlass, cutlass-compile, numba-cccl, cutile-sweep, cutile
set -uo pipefail
OUT=${OUT:?set OUT}; CUTILE_SITE=${CUTILE_SITE:-/tmp/cutile-site}
source /tmp/gpu-site/env.sh
gpu_state() { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,pstate,temperature.gpu \
  --format=csv,noheader >> "$OUT/$1/gpu-state.csv"; }
with_cutile() { PYTHONPATH=$CUTILE_SITE:$PYTHONPATH PATH=$CUTILE_SITE/nvidia/cu13/bin:$PATH "$@"; }
run_ways() { python -m harness run "$@"; }

for step in "$@"; do
  mkdir -p "$OUT/$step"; gpu_state "$step"; t0=$SECONDS
  case $step in
    cutlass)          # issue 18: CUTLASS's tile / cluster configs, then the nvrtc[cutlass] part
      timeout 240 python -m tools.knob_sweep nvrtc gemm --variant cutlass --out "$OUT/$step/sweep"
      run_ways -b "nvrtc[cutlass]" --cases all --no-compile --timeout 200 --out "$OUT/$step/part" ;;
    cutlass-compile)  # issue 18: the talk's table: NVRTC and nvcc, fresh processes, 8192^3 bf16
      python -m tools.cutlass_nvcc --repeats 3 --out "$OUT/$step/nvcc"
      python -m tools.compile_table --impl "nvrtc[cutlass]" --impl nvrtc --repeats 3 --out "$OUT/$step/nvrtc" ;;
    numba-cccl)       # issue 20: numba_simt packed loads, cuda_compute short rows (the full-run part)
      run_ways -b numba_simt -b cuda_coop -b cuda_compute --cases all --compile-repeats 1 --timeout 250 \
        --out "$OUT/$step/part" ;;
    cutile-sweep)     # issue 20: cuTile GEMM knobs, 16-bit and float32 (IEEE, 3xTF32)
      with_cutile timeout 420 python -m tools.knob_sweep cutile gemm --out "$OUT/$step/sweep"
      with_cutile timeout 120 python -m tools.knob_sweep cutile gemm --variant tf32x3 \
        --case 4096x4096x4096-float32 --out "$OUT/$step/sweep-tf32x3" ;;
    cutile)           # the cuTile full-run part with the chosen defaults
      WAYS_CUTILE_SITE=$CUTILE_SITE run_ways -b cutile -b "cutile[tf32x3]" --cases all --compile-repeats 1 \
        --timeout 250 --out "$OUT/$step/part" ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
  echo "step $step: $((SECONDS - t0)) s"; gpu_state "$step"
done
