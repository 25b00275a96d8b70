"""Per-row sum in numba-cuda SIMT: a block per long row, a warp per short row; strided
accumulation in float32 with four independent sums in flight, then a shared-memory tree (no warp
shuffles, so the CUDA simulator runs it too)."""
import numba
from numba import cuda

from backends.numba_simt._common import LOAD, compile_for

THREADS = 256
WARPS = THREADS // 32
WARP_PER_ROW_UP_TO = 1024       # columns; longer rows get a whole block each


def row_kernels(load):
    @cuda.jit(device=True, inline=True)
    def strided_sum(x, row, start, step):
        cols = x.shape[1]
        a0 = a1 = a2 = a3 = numba.float32(0.0)
        c = start
        while c + 3 * step < cols:
            a0 += load(x[row, c])
            a1 += load(x[row, c + step])
            a2 += load(x[row, c + 2 * step])
            a3 += load(x[row, c + 3 * step])
            c += 4 * step
        while c < cols:
            a0 += load(x[row, c])
            c += step
        return (a0 + a1) + (a2 + a3)

    @cuda.jit
    def block_per_row(x, y):
        row = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        partial = cuda.shared.array(THREADS, numba.float32)
        partial[tid] = strided_sum(x, row, tid, THREADS)
        cuda.syncthreads()
        step = THREADS // 2
        while step > 0:
            if tid < step:
                partial[tid] += partial[tid + step]
            cuda.syncthreads()
            step //= 2
        if tid == 0:
            y[row] = partial[0]

    @cuda.jit
    def warp_per_row(x, y):
        warp, lane = cuda.threadIdx.x // 32, cuda.threadIdx.x % 32
        row = cuda.blockIdx.x * WARPS + warp
        partial = cuda.shared.array((WARPS, 32), numba.float32)
        partial[warp, lane] = strided_sum(x, row, lane, 32) if row < x.shape[0] else numba.float32(0.0)
        cuda.syncthreads()
        if lane == 0 and row < x.shape[0]:
            s = numba.float32(0.0)
            for i in range(32):
                s += partial[warp, i]
            y[row] = s

    return block_per_row, warp_per_row


KERNELS = {dtype: row_kernels(load) for dtype, load in LOAD.items()}


def build(case, inputs, outputs, stream):
    x, y = inputs["x"], outputs["y"]
    rows, cols = x.shape
    block_per_row, warp_per_row = KERNELS[case.dtype]
    if cols <= WARP_PER_ROW_UP_TO:
        kernel, grid = warp_per_row, (rows + WARPS - 1) // WARPS
    else:
        kernel, grid = block_per_row, rows
    compile_for(kernel, x, y)

    def run():
        kernel[grid, THREADS, stream](x, y)

    return run
