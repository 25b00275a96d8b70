"""Per-row sum with cuda.compute.segmented_reduce (OpKind.PLUS): the plan is made once in build,
with row offsets and temporary storage allocated there; run() only calls it.

Why rows of exactly 256 accumulate in float64 (written through a TransformOutputIterator that
rounds each sum once to the float32 output; CUB writes the accumulator's type): CUB's
segmented reduce (cuda-cccl 1.1.1 and 1.2.x) picks a thread, warp or block per segment from
max_segment_size, and every agent's items per thread scale with the accumulator's size. On sm_90 a
warp's tile is 32 lanes x 16 items for a 4-byte accumulator (512: a 256-item row is a partial tile,
a scalar strided loop) and 32 x 8 for an 8-byte one (256: the row is a full tile, two 16-byte loads
per lane). Longer rows already run full tiles with a block per row."""
import numpy as np
from numba import cuda

from backends.base import compiling
from cuda import compute           # binds only `compute`: `cuda` stays numba.cuda
from cuda.compute import OpKind, TransformOutputIterator

WARP_TILE_F64 = 256                # a warp's tile with a float64 accumulator on sm_90 (see above)


def to_float32(s: np.float64) -> np.float32:
    return np.float32(s)


def build(case, inputs, outputs, stream, variant=""):
    x, y = inputs["x"], outputs["y"]
    rows, cols = x.shape
    offsets = cuda.to_device(np.arange(0, (rows + 1) * cols, cols, dtype=np.int64))
    starts, ends = offsets[:-1], offsets[1:]
    sized = {} if variant == "default_args" else {"max_segment_size": cols}
    wide = bool(sized) and cols == WARP_TILE_F64
    h_init = np.zeros((), dtype=np.float64 if wide else np.float32)    # the accumulator's type
    out = TransformOutputIterator(y, to_float32) if wide else y
    flat = x.reshape(rows * cols)
    with compiling():      # CUB's kernels compiled on the CPU (they load lazily, at the first call)
        reducer = compute.make_segmented_reduce(d_in=flat, d_out=out, start_offsets_in=starts,
                                                end_offsets_in=ends, op=OpKind.PLUS, h_init=h_init)
    args = dict(d_in=flat, d_out=out, num_segments=rows, start_offsets_in=starts, end_offsets_in=ends,
                op=OpKind.PLUS, h_init=h_init, stream=stream, **sized)
    temp = cuda.device_array(reducer(temp_storage=None, **args), dtype=np.uint8)

    def run():
        reducer(temp_storage=temp, **args)

    return run
