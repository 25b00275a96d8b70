#!/usr/bin/env bash
# The measurement-integrity checks on a GPU node (after `source /tmp/gpu-site/env.sh`), one step a
# call so each fits a 10-minute limit. Runs go to /tmp/ways-<step>; the files worth keeping are
# copied to $OUT/<step> (the node's tool returns at most 8 files a call).
#   bash tools/integrity_on_gpu.sh fixtures     # GPU tests (side-stream uploads, cheats, both modes) and
#                                               # `ways timer-check` (the test of the same name runs it)
#   bash tools/integrity_on_gpu.sh tests NAME -b B...   # these backends' test cases with the new checks
#   bash tools/integrity_on_gpu.sh bench NAME -b B...   # both timing modes on the headline bench cases
set -uo pipefail
export PYTHONUNBUFFERED=1
step=${1:?step: fixtures | tests NAME -b B... | bench NAME -b B...}
name=$step; [ "$step" != fixtures ] && { name=$step-${2:?$step needs a name}; shift 2; } || shift
out=${OUT:-/tmp/out}/$name run=/tmp/ways-$name
mkdir -p "$out"
gpu_state() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
    --format=csv,noheader | sed "s/^/$1: /" >> "$out/gpu-state.txt"
}
gpu_state before
case $step in
  fixtures)
    python -m pytest -q -rA tests/test_gpu.py -p no:cacheprovider 2>&1 \
      | tee "$out/pytest.txt" | tail -40
    ways timer-check --out "$run/method-crosscheck" 2>&1 | tail -8
    cp "$run"/method-crosscheck/crosscheck.{json,md} "$out/" ;;
  tests)
    python -m harness run --cases test --no-compile --timeout 300 --out "$run" "$@" 2>&1 | tail -60
    cp "$run"/{results.json,summary.csv} "$out/" ;;
  bench)
    python -m harness run --cases bench --no-compile --out "$run" "$@" --case 8192x8192x8192-bfloat16 \
      --case 4096x4096x4096-float32 --case 268435456-float32 --case 8192x32768-float32 2>&1 | tail -45
    python -m harness report "$run/results.json" >/dev/null
    cp "$run"/{results.json,summary.csv,report.md} "$out/" ;;
esac
gpu_state after
