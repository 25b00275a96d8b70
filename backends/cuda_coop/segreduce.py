"""Per-row sum with cuda.coop: long rows take a block each (block load of tiles, a running sum
per thread, one block sum at the end); short rows take a warp each (striped loads, LOADS of them a
lane in flight into as many running sums, then a warp sum)."""
import numba
import numpy as np
from numba import cuda

import cuda.coop._experimental as coop

from backends.base import compiling
from backends.gpus import tuned

THREADS = 256
ITEMS = 8                        # per thread and tile: 32 bytes of float32
TILE = THREADS * ITEMS
WARPS = THREADS // 32
WARP_PER_ROW_UP_TO = 1024        # columns
LOADS = 1                        # short rows: loads a lane has in flight (tools/knob_sweep.py cuda_coop segreduce)
# per GPU kind where its sweep differs: on the H200, 8 loads reach 57.5% of the copy on 2^20 rows of 256
# float32, 1 load 50.3 (reports/evidence/h200-tuning/sweeps/cuda-coop-segreduce.json)
BY_GPU = {"H200": 8}


def block_per_row(dtype):
    load = coop.block.make_load(dtype, THREADS, ITEMS, "vectorize")
    block_sum = coop.block.make_sum(numba.float32, THREADS)

    @cuda.jit(link=load.files + block_sum.files)
    def row_sum(x, y):
        row, tid = cuda.blockIdx.x, cuda.threadIdx.x
        xrow = x[row]
        cols = xrow.shape[0]
        items = cuda.local.array(ITEMS, dtype)
        acc = numba.float32(0.0)
        full = cols // TILE
        for t in range(full):
            load(xrow[t * TILE:], items)
            for i in range(ITEMS):
                acc += numba.float32(items[i])
        for c in range(full * TILE + tid, cols, THREADS):      # the tail, guarded by hand
            acc += numba.float32(xrow[c])
        total = block_sum(acc)
        if tid == 0:
            y[row] = total

    return row_sum


def warp_per_row(dtype, loads):
    warp_sum = coop.warp.make_sum(numba.float32)

    @cuda.jit(link=warp_sum.files)
    def row_sum(x, y):
        row = cuda.blockIdx.x * WARPS + cuda.threadIdx.x // 32
        lane = cuda.threadIdx.x % 32
        if row < x.shape[0]:
            cols = x.shape[1]
            part = cuda.local.array(loads, numba.float32)
            for k in range(loads):
                part[k] = numba.float32(0.0)
            for c in range(lane, cols, 32 * loads):
                for k in range(loads):          # a constant count: unrolled, its loads issued together
                    if c + 32 * k < cols:
                        part[k] += numba.float32(x[row, c + 32 * k])
            acc = numba.float32(0.0)
            for k in range(loads):
                acc += part[k]
            total = warp_sum(acc)
            if lane == 0:
                y[row] = total

    return row_sum


def supports(case, variant=""):
    if case.dtype == "float16" and case.shape["cols"] > WARP_PER_ROW_UP_TO:
        return "cuda.coop 1.1.1: its block load does not compile for __half (NVRTC: incomplete type)"
    return None


def build(case, inputs, outputs, stream, variant="", loads=None):
    x, y = inputs["x"], outputs["y"]
    loads = loads or tuned(BY_GPU, LOADS)
    rows, cols = x.shape
    dtype = numba.from_dtype(np.dtype(case.dtype))
    with compiling():          # NVRTC for the primitives, then numba: CPU work, others may time meanwhile
        if cols <= WARP_PER_ROW_UP_TO:
            kernel, grid = warp_per_row(dtype, loads), (rows + WARPS - 1) // WARPS
        else:
            kernel, grid = block_per_row(dtype), rows
        kernel.compile((numba.typeof(x), numba.typeof(y)))

    def run():
        kernel[grid, THREADS, stream](x, y)

    return run
