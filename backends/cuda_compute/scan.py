"""Inclusive prefix sum with cuda.compute.make_inclusive_scan (OpKind.PLUS): CUB's single-pass
decoupled look-back scan, no kernel written. A float32 initial value makes float32 the accumulator (CUB
scans in the initial value's type), so float16 inputs are summed and written in float32. The plan and
its temporary storage are made once in build; run() only calls it."""
import numpy as np
from numba import cuda

from backends.base import compiling
from cuda import compute           # binds only `compute`: `cuda` stays numba.cuda
from cuda.compute import OpKind


def build(case, inputs, outputs, stream, variant=""):
    x, y = inputs["x"], outputs["y"]
    init = np.zeros((), dtype=np.float32)      # the accumulator's type
    with compiling():      # CUB's kernels compiled on the CPU
        scanner = compute.make_inclusive_scan(d_in=x, d_out=y, op=OpKind.PLUS, init_value=init)
    args = dict(d_in=x, d_out=y, op=OpKind.PLUS, init_value=init, num_items=x.size, stream=stream)
    temp = cuda.device_array(max(1, scanner(temp_storage=None, **args)), dtype=np.uint8)

    def run():
        scanner(temp_storage=temp, **args)

    return run
