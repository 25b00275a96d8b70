#!/bin/bash
# Chains of gpu_steps.sh steps side by side on a node of several GPUs, a chain a GPU; each chain's
# output (its steps' packs and its log) comes back as one file, $OUT/gpuN.tgz (a call brings back at
# most 8 files). Each argument is GPU=COMMANDS, run by bash with CUDA_VISIBLE_DEVICES=GPU:
#
#   OUT=$OUT bash tools/gpu_together.sh '0=bash tools/gpu_steps.sh scan' '1=EXAMPLES=helion bash tools/gpu_steps.sh examples'
set -uo pipefail
final=${OUT:?set OUT}; here=${TOGETHER:-/tmp/together}
for spec in "$@"; do
  gpu=${spec%%=*}; commands=${spec#*=}
  mkdir -p "$here/gpu$gpu"
  ( CUDA_VISIBLE_DEVICES=$gpu OUT=$here/gpu$gpu WORK=/tmp/ways-steps/gpu$gpu bash -c "$commands" \
      > "$here/gpu$gpu/log.txt" 2>&1
    tar -C "$here" -czf "$final/gpu$gpu.tgz" "gpu$gpu" ) &
done
wait
for spec in "$@"; do gpu=${spec%%=*}; echo "== gpu$gpu: ${spec#*=}"; tail -n 25 "$here/gpu$gpu/log.txt"; done
