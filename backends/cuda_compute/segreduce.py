"""Per-row sum with cuda.compute.segmented_reduce (OpKind.PLUS): the plan is made once in build,
with row offsets and temporary storage allocated there; run() only calls it.

Why rows of exactly 256 accumulate in float64 (the output stays float32, rounded once): CUB's
segmented reduce (cuda-cccl 1.1.1 and 1.2.x) picks a thread, warp or block per segment from
max_segment_size, and every agent's items per thread scale with the accumulator's size. On sm_90 a
warp's tile is 32 lanes x 16 items for a 4-byte accumulator (512: a 256-item row is a partial tile,
a scalar strided loop) and 32 x 8 for an 8-byte one (256: the row is a full tile, two 16-byte loads
per lane). Longer rows already run full tiles with a block per row."""
import numpy as np
from numba import cuda

from cuda import compute           # binds only `compute`: `cuda` stays numba.cuda
from cuda.compute import OpKind

WARP_TILE_F64 = 256                # a warp's tile with a float64 accumulator on sm_90 (see above)


def build(case, inputs, outputs, stream, variant=""):
    x, y = inputs["x"], outputs["y"]
    rows, cols = x.shape
    offsets = cuda.to_device(np.arange(0, (rows + 1) * cols, cols, dtype=np.int64))
    starts, ends = offsets[:-1], offsets[1:]
    sized = {} if variant == "default_args" else {"max_segment_size": cols}
    acc = np.float64 if sized and cols == WARP_TILE_F64 else np.float32
    h_init = np.zeros((), dtype=acc)                # the accumulator's type; y stays float32
    flat = x.reshape(rows * cols)
    reducer = compute.make_segmented_reduce(d_in=flat, d_out=y, start_offsets_in=starts,
                                            end_offsets_in=ends, op=OpKind.PLUS, h_init=h_init)
    args = dict(d_in=flat, d_out=y, num_segments=rows, start_offsets_in=starts, end_offsets_in=ends,
                op=OpKind.PLUS, h_init=h_init, stream=stream, **sized)
    temp = cuda.device_array(reducer(temp_storage=None, **args), dtype=np.uint8)

    def run():
        reducer(temp_storage=temp, **args)

    return run
