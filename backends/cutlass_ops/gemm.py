"""C = A @ B by the CUTLASS Operator API: the kernels CUTLASS registers for this GEMM on sm_90a
(Hopper TMA + wgmma persistent kernels over tile and cluster shapes, and Ampere mma.sync ones),
found by their metadata; the fastest on this case is kept. No fp32 kernel (no IEEE fp32 on the
tensor cores) and no kernel for rows that are not 16-byte aligned: those cases are not applicable."""
import os

import torch
import cutlass.operators as ops

from backends.base import compiling, timing_kernels
from backends.cutlass_ops import TARGET_SM

TRIALS = 5
# every candidate is compiled (CuTe DSL JIT, seconds each): WAYS_CUTLASS_OPS_MAX keeps the first N
MAX_CANDIDATES = int(os.environ.get("WAYS_CUTLASS_OPS_MAX", "0")) or None


def arguments(a, b, c):
    return ops.GemmArguments(a, b, c, accumulator_type=torch.float32)


def supports(case, variant=""):
    if case.dtype == "float32":
        return "CUTLASS Operator API: no fp32 GEMM kernel on sm_90a (tensor cores: TF32 at best)"
    if case.shape["K"] % 8 or case.shape["N"] % 8:
        return "CUTLASS Operator API: its sm_90a kernels need 16-byte aligned rows (K and N multiples of 8)"
    return None


def time_on_stream(op, args, art, stream) -> float:
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    op.run(args, art, stream=stream, assume_supported_args=True)          # warm
    start.record()
    for _ in range(TRIALS):
        op.run(args, art, stream=stream, assume_supported_args=True)
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / TRIALS


def build(case, inputs, outputs, stream, variant=""):
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    with compiling():          # finding the operators and CuTe DSL's JIT: CPU work, others may time meanwhile
        candidates = ops.get_operators(arguments(a, b, c), target_sm=TARGET_SM, limit=MAX_CANDIDATES)
        if not candidates:
            raise RuntimeError("CUTLASS Operator API: no operator for this case")
        if variant == "first":
            best = candidates[0]
            art = best.compile(arguments(a, b, c), target_sm=TARGET_SM)
    torch_s = torch.cuda.current_stream()
    if variant != "first":
        scratch = torch.empty_like(c)                 # the search writes here: outputs stay poisoned
        trial_args = arguments(a, b, scratch)
        with compiling():                             # CuTe DSL's JIT, seconds a candidate: CPU work
            compiled = [(op, op.compile(trial_args, target_sm=TARGET_SM)) for op in candidates
                        if op.supports(trial_args, target_sm=TARGET_SM)]
        with timing_kernels():                        # beside other workers: the GPU alone while timing
            timed = [(time_on_stream(op, trial_args, art, torch_s), op) for op, art in compiled]
        best = min(timed, key=lambda t: t[0])[1]
        with compiling():
            art = best.compile(arguments(a, b, c), target_sm=TARGET_SM)     # compiled again, cached by CuTe DSL
    args = arguments(a, b, c)

    def run():
        best.run(args, art, stream=torch_s, assume_supported_args=True)

    return run
