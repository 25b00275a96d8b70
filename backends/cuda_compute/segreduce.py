"""Per-row sum with cuda.compute.segmented_reduce (OpKind.PLUS): the plan is made once in build,
with row offsets and temporary storage allocated there; run() only calls it."""
import numpy as np
from numba import cuda

from cuda import compute           # binds only `compute`: `cuda` stays numba.cuda
from cuda.compute import OpKind


def build(case, inputs, outputs, stream, variant=""):
    x, y = inputs["x"], outputs["y"]
    rows, cols = x.shape
    offsets = cuda.to_device(np.arange(0, (rows + 1) * cols, cols, dtype=np.int64))
    starts, ends = offsets[:-1], offsets[1:]
    h_init = np.zeros((), dtype=np.float32)         # accumulates (and returns) float32, any input dtype
    flat = x.reshape(rows * cols)
    sized = {} if variant == "default_args" else {"max_segment_size": cols}
    reducer = compute.make_segmented_reduce(d_in=flat, d_out=y, start_offsets_in=starts,
                                                 end_offsets_in=ends, op=OpKind.PLUS, h_init=h_init)
    args = dict(d_in=flat, d_out=y, num_segments=rows, start_offsets_in=starts, end_offsets_in=ends,
                op=OpKind.PLUS, h_init=h_init, stream=stream, **sized)
    temp = cuda.device_array(reducer(temp_storage=None, **args), dtype=np.uint8)

    def run():
        reducer(temp_storage=temp, **args)

    return run
