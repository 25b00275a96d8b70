#!/bin/bash
# One step of a GPU session on the node (a call lasts at most 10 minutes), after the lab's bundle is
# unpacked (source /tmp/gpu-site/env.sh) and, for cuTile, its own site (/tmp/cutile-site). Each step
# writes under $WORK/<step>/, records the GPU's clocks, power and state before and after, and is packed
# as $OUT/<step>.tgz when it ends (the node sends back at most 8 files a call).
#
#   bash tools/gpu_steps.sh STEP...      steps: cutlass, cutlass-part, cutlass-nvcc, cutlass-compile,
#                                        numba-cccl, cutile-sweep, cutile, upstream, upstream-cccl,
#                                        new-ways, new-ways-b, helion-tuned, jobs-compare, full-jobs, serial-quick, tests-jobs, context-probe,
#                                        lanes-full, lanes-check, part, demo, profile, faults, check-fixes, verify, sweep,
#                                        attention, attention-sweep, warp-attention-sweep, scan, scan-sweep,
#                                        memory-sweeps, short-rows-sweep, examples, scan-ncu, jax-gemv, memory-part, like-for-like,
#                                        timer-check
set -uo pipefail
OUT=${OUT:?set OUT}; WORK=${WORK:-/tmp/ways-steps}; CUTILE_SITE=${CUTILE_SITE:-/tmp/cutile-site}
source /tmp/gpu-site/env.sh
gpu_state() { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,pstate,temperature.gpu \
  --format=csv,noheader >> "$OUT/$1/gpu-state.csv"; }
# TOOL's own site (cuTile, TileLang; none for the others) ahead of the lab's, for one command
with_site() { local site; case $1 in cutile) site=$CUTILE_SITE ;; tilelang) site=${TILELANG_SITE:-/tmp/tilelang-site} ;;
  ray) site=${RAY_SITE:-/tmp/ray-site} ;; esac
  shift; PYTHONPATH=${site:+$site:}$PYTHONPATH PATH=${site:+$site/nvidia/cu13/bin:}$PATH "$@"; }
with_cutile() { with_site cutile "$@"; }
# SIGINT before the call's limit: the run keeps what it measured (results.json, complete: false) and the
# step is still packed (a call killed at its limit returns nothing of a step in flight); a run of eight
# GPU workers took over 45 s to stop and lost its summary, so it gets 90 (results.jsonl keeps every row)
# CPUS=0-15: the run on those cores only (a 16-core one-GPU node's share of a bigger one)
run_ways() { ${CPUS:+taskset -c $CPUS} timeout --signal=INT --kill-after=90 "${STEP_TIMEOUT:-540}" \
  python -m harness run "$@"; }

# where a run's time went (also for a run its step limit stopped, which prints no summary)
run_profile() { python -c 'import json, sys
from harness.report.terminal import profile_lines
doc = json.load(open(sys.argv[1])); run = doc["run"]
print("run:", "complete" if run["complete"] else "stopped", run.get("duration_s"), "s;",
      ", ".join(f"{k} {v:.0f}" for k, v in list((run.get("worker_phases") or {}).items())[:6]))
print("\n".join(profile_lines(doc)))' "$1" || true; }

# FOLDER ARGS...: a run of the lab with the tools' own sites, into the step's FOLDER, then where its time
# went; RESUME=1: go on with the run an earlier call left in $WORK (the node keeps /tmp while warm)
run_part() { local dir=$OUT/$step/$1; shift
  WAYS_CUTILE_SITE=$CUTILE_SITE WAYS_TILELANG_SITE=${TILELANG_SITE:-/tmp/tilelang-site} \
    run_ways "$@" ${RESUME:+--resume} --out "$dir"
  run_profile "$dir/results.json"; }

# each attention example in a process of its own, with its tool's site where it has one (EXAMPLES: which;
# EXAMPLE_DTYPE: that dtype's cases only; EXAMPLE_MASK: full or causal cases only; EXAMPLE_TIMEOUT: seconds
# each, 300 unless given)
upstream_attention() {
  for ex in ${EXAMPLES-triton cutile helion tilelang cute_dsl pallas-triton pallas-mosaic}; do   # EXAMPLES="": none
    with_site $ex timeout "${EXAMPLE_TIMEOUT:-300}" \
      python tools/upstream_attention.py $ex ${EXAMPLE_DTYPE:+--dtype $EXAMPLE_DTYPE} ${EXAMPLE_MASK:+--mask $EXAMPLE_MASK} \
      --out "$1/upstream-$ex.json" 2>&1 | tail -12
  done | tee "$1/upstream.txt"
}

# PROBLEM SECONDS TOOL...: each tool's tools/knob_sweep.py of PROBLEM (Helion's fixed variant), with its own
# site, at most SECONDS each, into the step's folder; SWEEP_ARGS: more arguments for each (--only, --case)
knob_sweeps() {
  local problem=$1 limit=$2 tool; shift 2
  for tool in "$@"; do
    with_site $tool timeout "$limit" python -m tools.knob_sweep $tool $problem \
      $([ $tool = helion ] && echo --variant fixed) ${SWEEP_ARGS:-} --out "$OUT/$step/$tool"
  done
}

final=$OUT; OUT=$WORK
for step in "$@"; do
  mkdir -p "$OUT/$step"; gpu_state "$step"; t0=$SECONDS
  case $step in
    cutlass)          # CUTLASS's tile / cluster configs (bf16), then the nvrtc[cutlass] part
      timeout 280 python -m tools.knob_sweep nvrtc gemm --variant cutlass --case 8192x8192x8192-bfloat16 \
        --case 4096x4096x4096-bfloat16 --case 16384x16384x512-bfloat16 --out "$OUT/$step/sweep"
      # a failed build restarts the worker, which compiles CUTLASS again (~35 s): no part unless one config ran
      if grep -q '"status": "ok"' "$OUT/$step/sweep/sweep.json" 2>/dev/null; then
        run_ways -b "nvrtc[cutlass]" --cases all --compile-repeats 1 --timeout 200 --out "$OUT/$step/part"
      else echo "step $step: no config ran in the sweep: part skipped"; fi ;;
    cutlass-part)     # the default config (no sweep) on the headline case, then every case
      run_ways -b "nvrtc[cutlass]" --quick --timeout 200 --out "$OUT/$step/quick"
      if grep '"variant": "cutlass"' "$OUT/$step/quick/results.jsonl" | grep -q '"status": "ok"'; then
        run_ways -b "nvrtc[cutlass]" --cases all --compile-repeats 1 --timeout 200 --out "$OUT/$step/part"
      else echo "step $step: the quick run failed: part skipped"; fi ;;
    cutlass-nvcc)     # the nvcc column (CUTLASS's own host code), fresh nvcc processes
      python -m experiments.cutlass_nvcc.build --repeats 3 --out "$OUT/$step" ;;
    cutlass-compile)  # the talk's table, NVRTC side: fresh processes, 8192^3 bf16
      ways compile-table --impl "nvrtc[cutlass]" --repeats ${REPEATS:-3} --out "$OUT/$step" ;;
    upstream-cccl)    # cuda.compute's own segmented-reduce benchmark alone
      bash tools/upstream_examples.sh "$OUT/$step" cccl ;;
    numba-cccl)       # numba_simt packed loads, cuda_compute short rows (the full-run part)
      run_ways -b numba_simt -b cuda_coop -b cuda_compute --cases all --compile-repeats 1 --timeout 250 \
        --out "$OUT/$step/part" ;;
    cutile-sweep)     # cuTile GEMM knobs, 16-bit and float32 (IEEE, 3xTF32)
      with_cutile timeout 420 python -m tools.knob_sweep cutile gemm --out "$OUT/$step/sweep"
      with_cutile timeout 120 python -m tools.knob_sweep cutile gemm --variant tf32x3 \
        --case 4096x4096x4096-float32 --out "$OUT/$step/sweep-tf32x3" ;;
    cutile)           # the cuTile full-run part with the chosen defaults
      WAYS_CUTILE_SITE=$CUTILE_SITE run_ways -b cutile -b "cutile[tf32x3]" --cases all --compile-repeats 1 \
        --timeout 250 --out "$OUT/$step/part" ;;
    upstream)         # the tools' own examples for the same operations (.upstream/ carried)
      bash tools/upstream_examples.sh "$OUT/$step" cutile cccl numba ;;
    new-ways)         # the DLPack stream probe, then JAX Pallas and Helion (fixed configs) on every case
      timeout 120 python -m experiments.jax_stream.probe 2>&1 | tee "$OUT/$step/jax_stream_probe.txt"
      run_ways -b jax_pallas -b "helion[fixed]" --cases all --compile-repeats 1 --timeout 200 --out "$OUT/$step/part" ;;
    new-ways-b)       # the CUTLASS Operator API (both variants) and TileLang (its own site) on every case
      WAYS_TILELANG_SITE=${TILELANG_SITE:-/tmp/tilelang-site} run_ways -b cutlass_ops -b tilelang --cases all \
        --compile-repeats 1 --timeout 200 --out "$OUT/$step/part" ;;
    helion-tuned)     # Helion's autotuned variant on the bench cases (its search is build time, reported
                      # apart; 20-34 s a case on the H200, so every test case too takes ~40 min: helion[fixed] has them)
      run_ways -b "helion[]" ${PROBLEM:+-p $PROBLEM} --cases bench --compile-repeats 1 --timeout 400 ${RESUME:+--resume} \
        --out "$OUT/$step/part" ;;
    jobs-compare)     # the same bench cases serially and with --jobs (ways compare: same?)
      sel=(-b "array_api[torch]" -b "array_api[cupy]" -b triton -b cute_dsl -b "nvrtc[]" --cases bench --no-compile)
      run_ways "${sel[@]}" --out "$OUT/$step/serial"
      run_ways "${sel[@]}" --jobs "${JOBS:-4}" --out "$OUT/$step/jobs"
      python -m harness compare "$OUT/$step/serial/results.json" "$OUT/$step/jobs/results.json" \
        | tee "$OUT/$step/compare.txt" ;;
    part)             # any selection of the lab's run (PART: its arguments, e.g. "-b tilelang -p attention
                      # --cases all"; PART_NAME: its folder, so parts of one call are packed together)
      run_part "${PART_NAME:-run}" ${PART:?PART: the selection to run} --jobs "${JOBS:-4}" ;;
    memory-part)      # the memory-bound problems' bench cases on every backend, in one run: each GPU kind's
                      # plans against the same run's copy and read stream and each case's best row
      run_part run -p elementwise -p segreduce -p scan --cases bench --no-compile --jobs "${JOBS:-8}" ;;
    full-jobs)        # the full default run, --jobs at a time (every bundle unpacked first); GPUS=0,: that
                      # GPU; RESUME=1: go on with the run an earlier call left in $WORK (the node keeps /tmp while warm)
      WAYS_CUTILE_SITE=$CUTILE_SITE WAYS_TILELANG_SITE=${TILELANG_SITE:-/tmp/tilelang-site} \
        run_ways --jobs "${JOBS:-8}" ${GPUS:+--gpus $GPUS} ${RESUME:+--resume} --out "$OUT/$step/run"
      run_profile "$OUT/$step/run/results.json" ;;
    tests-jobs)       # workers with test cases only, beside each other under nvbench (no bench case to
                      # time: such workers died before their first case in an earlier full run)
      run_ways -b triton -b numba_simt -b "array_api[cupy]" --cases test --no-compile --jobs 3 --out "$OUT/$step/run" ;;
    context-probe)    # does another process opening a CUDA context stretch a kernel being timed?
      for n in 268435456 1048576; do
        timeout 120 python -m experiments.context_probe.probe --n $n --out "$OUT/$step/context-$n.json" 2>&1 | tee -a "$OUT/$step/probe.txt"
      done ;;
    serial-quick)     # the demo's selection the old, serial way (one worker at a time, no compile-time
                      # processes): the reference `ways compare` judges the full-jobs run's timed rows against
      WAYS_CUTILE_SITE=$CUTILE_SITE WAYS_TILELANG_SITE=${TILELANG_SITE:-/tmp/tilelang-site} \
        run_ways --quick --no-compile --out "$OUT/$step/run"
      run_profile "$OUT/$step/run/results.json" ;;
    lanes-full)       # the full default run on every GPU of the node, a lane each, --jobs per lane;
                      # RESUME=1: the lanes go on with the run an earlier call left in $WORK
      WAYS_CUTILE_SITE=$CUTILE_SITE WAYS_TILELANG_SITE=${TILELANG_SITE:-/tmp/tilelang-site} \
        run_ways --gpus all --jobs "${JOBS:-8}" ${RESUME:+--resume} --out "$OUT/$step/run"
      run_profile "$OUT/$step/run/results.json"
      for lane in "$OUT/$step"/run/lanes/gpu*; do echo "${lane##*/}:"; run_profile "$lane/results.json"; done ;;
    lanes-check)      # do lanes measure what one GPU does? The same bench rows on GPU 0 alone twice (the
                      # repeat is the baseline: how "same" one GPU is with itself), then on every GPU in
                      # lanes, judged by compare --repeat. STAGE=one-a, one-b, lanes: a call each (the
                      # three runs outlast one call; the node keeps $WORK while warm). STAGE=other: the same
                      # on GPU 1 alone, a repeat on another chip (lanes are several chips), judged beside;
                      # STAGE=chip GPU=k RUN=a|b: a run on chip k alone, twice: the lanes stage then judges the
                      # cases the lanes timed on chip k against them (compare --same-chip);
                      # STAGE=ray: the lanes' run through Ray (--ray local:N, N the node's GPUs; Ray's own
                      # site, bash tools/gpu_bundles.sh ray), beside the lanes run
      sel=(-b "array_api[torch]" -b triton -b "nvrtc[]" --cases bench --no-compile --jobs "${JOBS:-8}")
      stage=${STAGE:-one-a}
      case $stage in
        one-a|one-b) run_ways "${sel[@]}" --gpus 0, --out "$OUT/$step/$stage" ;;
        other) run_ways "${sel[@]}" --gpus 1, --out "$OUT/$step/other" ;;
        chip) run_ways "${sel[@]}" --gpus "${GPU:?GPU=k: the chip}," --out "$OUT/$step/gpu$GPU-${RUN:-a}" ;;
        ray)              # the bundle keeps only bin/ executable: Ray's own servers (gcs_server, raylet) too
          find "${RAY_SITE:-/tmp/ray-site}/ray/core" -type f -exec chmod +x {} +
          with_site ray run_ways "${sel[@]}" --ray "local:$(nvidia-smi -L | wc -l)" --out "$OUT/$step/ray"
          python -m harness compare "$OUT/$step/lanes/results.json" "$OUT/$step/ray/results.json" \
            | tee "$OUT/$step/compare-lanes-vs-ray.md" ;;
        lanes)
          run_ways "${sel[@]}" --gpus all --out "$OUT/$step/lanes"
          python -m harness compare "$OUT/$step/one-a/results.json" "$OUT/$step/one-b/results.json" \
            | tee "$OUT/$step/compare-one-vs-one.md"
          python -m harness compare "$OUT/$step/one-a/results.json" "$OUT/$step/lanes/results.json" \
            --repeat "$OUT/$step/one-b/results.json" | tee "$OUT/$step/compare-lanes-repeat.md"
          if [ -f "$OUT/$step/other/results.json" ]; then
            python -m harness compare "$OUT/$step/one-a/results.json" "$OUT/$step/lanes/results.json" \
              --repeat "$OUT/$step/other/results.json" | tee "$OUT/$step/compare-lanes-repeat-other-gpu.md"
          fi
          for one in "$OUT/$step"/gpu*-a; do            # each chip's cases against its own run and repeat
            [ -f "${one%-a}-b/results.json" ] || continue
            python -m harness compare "$one/results.json" "$OUT/$step/lanes/results.json" --same-chip \
              --repeat "${one%-a}-b/results.json" | tail -3 | tee "$OUT/$step/compare-lanes-same-chip-${one##*/}.md"
          done ;;
        *) echo "lanes-check: STAGE is one-a, one-b, other, chip, lanes or ray" >&2 ;;
      esac ;;
    profile)          # the host side of a bench case piece by piece, then where a short run's time goes
      timeout 60 python -m experiments.host_side.probe --out "$OUT/$step/host-elementwise.json"
      timeout 60 python -m experiments.host_side.probe --problem gemm --case 8192x8192x8192-bfloat16 \
        --out "$OUT/$step/host-gemm.json"
      run_ways -b "array_api[torch]" -b triton -b "nvrtc[]" --cases bench --no-compile --jobs 3 --out "$OUT/$step/run" ;;
    demo)             # what `make demo` runs on a GPU (--quick, 6 jobs), then its page
      t1=$SECONDS
      WAYS_CUTILE_SITE=$CUTILE_SITE WAYS_TILELANG_SITE=${TILELANG_SITE:-/tmp/tilelang-site} \
        run_ways --quick --jobs "${JOBS:-6}" ${GPUS:+--gpus $GPUS} --out "$OUT/$step/run" --html
      run_profile "$OUT/$step/run/results.json"
      echo "demo (run + page): $((SECONDS - t1)) s" | tee "$OUT/$step/demo-time.txt" ;;
    faults)           # a spinning kernel beside correct rows under --jobs (tests/test_hang.py), the odd-shape test
                      # cases of every problem on every backend, and the ceilings (copy and read stream)
      timeout 200 python -m pytest -q -p no:cacheprovider tests/test_hang.py -k spinning 2>&1 | tee "$OUT/$step/hang-test.txt"
      odd=(--case 200x264x136-bfloat16 --case 200x264x136-float16 --case 72x1048x520-bfloat16 --case 72x1048x520-float16
           --case 2x100003-float16 --case 3x65537-float32 --case 50000x3-float32 --case 20011x5-bfloat16)
      WAYS_CUTILE_SITE=$CUTILE_SITE WAYS_TILELANG_SITE=${TILELANG_SITE:-/tmp/tilelang-site} \
        run_ways -p gemm -p segreduce --cases test "${odd[@]}" --no-compile --jobs 8 --out "$OUT/$step/odd"
      timeout 120 python -m harness.run.worker peaks > "$OUT/$step/peaks.json" ;;
    check-fixes)      # the ceilings (copy and both read streams), then CUTLASS's GEMM on every test case
      timeout 120 python -m harness.run.worker peaks > "$OUT/$step/peaks.json"
      run_ways -p gemm -b "nvrtc[cutlass]" --cases test --no-compile --jobs 4 --out "$OUT/$step/cutlass" ;;
    verify)           # CUTLASS's GEMM on every test case and on shapes that faulted (tile counts not a power of
                      # two), beside the CuTe DSL GEMM; PROBE=script: run it under compute-sanitizer with PROBE_ARGS
      shapes=(M=611,N=8,K=8:bf16 M=1388,N=32,K=328:fp16 M=1163,N=296,K=712:fp16 M=24,N=560,K=8:fp16
              M=384,N=768,K=64:bf16 M=1,N=264,K=104:bf16 M=2,N=264,K=104:bf16)
      run_ways -p gemm -b "nvrtc[cutlass]" --cases test --no-compile --jobs 2 --out "$OUT/$step/cutlass-tests"
      given=(); for s in "${shapes[@]}"; do given+=(--shape "$s"); done
      run_ways -p gemm -b "nvrtc[cutlass]" -b "cute_dsl[]" "${given[@]}" --no-compile --jobs 3 \
        --out "$OUT/$step/shapes"
      if [ -n "${PROBE:-}" ]; then
        timeout 240 compute-sanitizer --print-limit 5 python "$PROBE" $PROBE_ARGS > "$OUT/$step/sanitizer.txt" 2>&1
        tail -30 "$OUT/$step/sanitizer.txt"
      fi ;;
    attention)        # attention on every backend that has it, every case (BACKENDS="-b x -b y": those only),
                      # then the tools' own attention examples (the examples step); TIMEOUT: a case's seconds of
                      # its own work (default: the run's limit from each backend's first build)
      WAYS_CUTILE_SITE=$CUTILE_SITE WAYS_TILELANG_SITE=${TILELANG_SITE:-/tmp/tilelang-site} \
        run_ways -p attention ${BACKENDS:-} --cases all --compile-repeats 1 --jobs "${JOBS:-4}" ${TIMEOUT:+--timeout $TIMEOUT} \
        ${RESUME:+--resume} --out "$OUT/$step/part"
      run_profile "$OUT/$step/part/results.json"
      upstream_attention "$OUT/$step" ;;
    scan)             # scan on every backend that has it, every case, then cuda.compute's own scan benchmark
      WAYS_CUTILE_SITE=$CUTILE_SITE WAYS_TILELANG_SITE=${TILELANG_SITE:-/tmp/tilelang-site} \
        run_ways -p scan ${BACKENDS:-} --cases all --compile-repeats 1 --jobs "${JOBS:-4}" ${TIMEOUT:+--timeout $TIMEOUT} \
        ${RESUME:+--resume} --out "$OUT/$step/part"
      run_profile "$OUT/$step/part/results.json"
      bash tools/upstream_examples.sh "$OUT/$step" cccl-scan ;;
    attention-sweep)  # attention configs, checked and timed beside cuDNN (SWEEPS: which; TileLang's: SWEEPS=tilelang): Helion's (tiles, warps,
                      # stages, pointer or TMA loads), JAX Pallas's Triton lowering (tiles, warps, stages), nvrtc's tiles
      knob_sweeps attention "${SWEEP_TIMEOUT:-400}" ${SWEEPS-helion jax_pallas nvrtc} ;;
    scan-sweep)       # the scans' knobs (the tile DSLs' tile and warps, one pass or two, nvrtc's and CuTe DSL's
                      # look-back), checked and timed beside the copy (SWEEPS: which)
      knob_sweeps scan "${SWEEP_TIMEOUT:-240}" ${SWEEPS-triton helion tilelang cutile nvrtc cute_dsl jax_pallas} ;;
    warp-attention-sweep)  # Warp's attention plans (queries and keys a block, threads) beside PyTorch's flash SDPA
      timeout "${SWEEP_TIMEOUT:-400}" python -m tools.warp_tiles_sweep attention --out "$OUT/$step/warp" ;;
    scan-ncu)         # Nsight Compute on the one-pass scans at 2^28 float32 (the kernel's second call, after
                      # its check): memory throughput, occupancy, warp stalls side by side (SCANS: which)
      for b in ${SCANS-nvrtc numba_simt cute_dsl cuda_coop}; do
        timeout 240 ncu --kernel-name regex:scan --launch-skip 1 --launch-count 1 --section SpeedOfLight \
          --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
          --section SchedulerStats python -m experiments.scan_profile.probe "$b" > "$OUT/$step/$b.txt" 2>&1
        grep -E "Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Duration|Stall|checked" \
          "$OUT/$step/$b.txt" | head -20 | sed "s/^/$b: /"
      done ;;
    memory-sweeps)    # the memory-bound rows below their case's best on this GPU kind: nvrtc's elementwise
                      # plans (shape, cache hints), Warp's row-sum and 16-bit elementwise plans (the short
                      # rows: short-rows-sweep; the scans: scan-sweep; nvmath's row sums, at its best plan
                      # on both GPUs: reports/evidence/h200-tuning)
      timeout 240 python -m tools.knob_sweep nvrtc elementwise --out "$OUT/$step/nvrtc-elementwise"
      timeout 150 python -m tools.warp_tiles_sweep segreduce --out "$OUT/$step/warp-segreduce"
      timeout 150 python -m tools.warp_tiles_sweep elementwise --dtype float16 --dtype bfloat16 \
        --out "$OUT/$step/warp-elementwise" ;;
    short-rows-sweep) # 1048576x256 row sums: cuda.coop's loads in flight, Triton's rows a program and warps,
                      # nvrtc's loads at once or strided and warps a block, numba_simt's elements or vectors,
                      # cuTile's tile (its own site); SHORT_ROWS: which (default: all five)
      knob_sweeps segreduce 180 ${SHORT_ROWS-cuda_coop triton nvrtc numba_simt cutile} ;;
    jax-gemv)         # JAX's one-row bf16 product: which arithmetic, and which way of asking keeps fp32
                      # accumulation (experiments/jax_gemv); then the one-row shapes again under each of XLA's
                      # dot flags in GEMV_FLAGS (a folder each; an unknown flag stops its process at start)
      timeout 300 python -m experiments.jax_gemv.probe --out "$OUT/$step"
      for flag in ${GEMV_FLAGS-xla_gpu_triton_gemm_disable_reduced_precision_reduction=true xla_gpu_enable_triton_gemm=false
                   xla_gpu_gemm_rewrite_size_threshold=0 xla_gpu_enable_dot_strength_reduction=false}; do
        echo "XLA_FLAGS=--$flag:"
        XLA_FLAGS=--$flag timeout 120 python -m experiments.jax_gemv.probe --shape 1,264,104 --shape 2,264,104 \
          --out "$OUT/$step/${flag%%=*}" 2>&1 | tail -8
      done ;;
    examples)         # the tools' own attention examples and cuda.compute's scan benchmark (.upstream/ carried)
      upstream_attention "$OUT/$step"
      bash tools/upstream_examples.sh "$OUT/$step" cccl-scan ;;
    like-for-like)    # each problem's headline case, the cold samples timed by ENGINE (gated: behind the GPU-side
                      # gate, the default; nvbench or events: without one) into the step's ENGINE folder;
                      # BACKENDS: -b options (default: every one that runs); CASES: --case options; JOBS workers at once
      WAYS_COLD_ENGINE=${ENGINE:-gated} run_part "${ENGINE:-gated}" ${BACKENDS:-} --cases bench --no-compile --jobs "${JOBS:-4}" \
        ${CASES:---case 4x32x4096x128-full-bfloat16 --case 8192x8192x8192-bfloat16 --case 268435456-float32 \
        --case 8192x32768-float32} ;;
    timer-check)      # `ways timer-check`: every problem's headline case, every default backend (BACKENDS: -b
                      # options), each row also timed by the second timer; JOBS workers at once
      WAYS_CUTILE_SITE=$CUTILE_SITE WAYS_TILELANG_SITE=${TILELANG_SITE:-/tmp/tilelang-site} \
        ${CPUS:+taskset -c $CPUS} timeout --signal=INT --kill-after=90 "${STEP_TIMEOUT:-540}" \
        python -m harness timer-check ${BACKENDS:-} --jobs "${JOBS:-4}" --out "$OUT/$step/run" | tail -80
      run_profile "$OUT/$step/run/results.json" ;;
    sweep)            # random shapes per problem on every backend, checked (COUNT a problem, SEED)
      WAYS_CUTILE_SITE=$CUTILE_SITE WAYS_TILELANG_SITE=${TILELANG_SITE:-/tmp/tilelang-site} \
        ${CPUS:+taskset -c $CPUS} timeout --signal=INT --kill-after=90 "${STEP_TIMEOUT:-540}" \
        python -m harness sweep --count "${COUNT:-60}" --seed "${SEED:-0}" --jobs "${JOBS:-8}" --out "$OUT/$step/sweep" ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
  echo "step $step: $((SECONDS - t0)) s"; gpu_state "$step"
  # results only: the outputs a run keeps for the cross-check would pass the 16 MiB a file may bring back
  tar -C "$OUT" -czf "$final/$step.tgz" --exclude='.crosscheck-outputs' "$step"
done
