"""Per-row sum in numba-cuda SIMT, in float32 with four independent loads in flight, then a
shared-memory tree (no warp shuffles, so the CUDA simulator runs it too). A block per long row
reads the row's whole 8-byte words (_common: packed access, 2 or 4 elements a word) and the few
elements before its first and after its last whole word (rows need not start on a word) one by
one; a warp per short row reads elements (on the H100 at 1048576x256 float32, 97% of the copy
against 83% with words: a 256-column row is one pass of a warp, where the word bookkeeping costs), or,
where a GPU kind's sweep chose it (`BY_GPU`) and a row is whole 16-byte vectors, a lane's
vectors two at a time (load2: one 16-byte load each), so more bytes are in flight a lane."""
import numba
import numpy as np
from numba import cuda

from backends.base import cuda_simulator
from backends.gpus import tuned
from backends.numba_simt._common import LOAD, PACK, compile_for, load2, u64, words_of

THREADS = 256
WARPS = THREADS // 32
WARP_PER_ROW_UP_TO = 1024       # columns; longer rows get a whole block each
VECTOR_BYTES = 16               # load2: two uint64 words
# short rows in 16-byte vectors on these GPU kinds (tools/knob_sweep.py numba_simt segreduce): on the
# H200, 96.9% of the copy on 2^20 rows of 256 float32 against 70.8 with elements
# (reports/evidence/h200-tuning/sweeps/numba-simt-segreduce.json)
BY_GPU = {"H200": True}
SIMULATED_ROWS = 64             # the CUDA simulator runs each of a row's 32 lanes as a Python thread


def supports(case, variant=""):
    if cuda_simulator() and case.shape["rows"] > SIMULATED_ROWS:
        return f"CUDA simulator: test cases of up to {SIMULATED_ROWS} rows only"
    return None


def row_kernels(dtype):
    per, bits, unpack, _ = PACK[dtype]
    load = LOAD[dtype]

    @cuda.jit(device=True, inline=True)
    def word_sum(w):
        s = unpack(w)
        for k in range(1, per):
            s += unpack(w >> u64(k * bits))
        return s

    @cuda.jit(device=True, inline=True)
    def word_sum_of_row(xw, flat, row, cols, start, step):     # rows longer than a word or two
        s = row * cols
        e = s + cols
        ws = (s + per - 1) // per                # the row's first whole word
        we = e // per                            # one past its last
        a0 = a1 = a2 = a3 = numba.float32(0.0)
        if start < ws * per - s:                 # head: elements before the first whole word
            a1 += load(flat[s + start])
        if start < e - we * per:                 # tail: elements after the last whole word
            a2 += load(flat[we * per + start])
        c = ws + start
        while c + 3 * step < we:
            w0, w1, w2, w3 = xw[c], xw[c + step], xw[c + 2 * step], xw[c + 3 * step]
            a0 += word_sum(w0)
            a1 += word_sum(w1)
            a2 += word_sum(w2)
            a3 += word_sum(w3)
            c += 4 * step
        while c < we:
            a0 += word_sum(xw[c])
            c += step
        return (a0 + a1) + (a2 + a3)

    @cuda.jit
    def block_per_row(xw, flat, cols, y):
        row = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        partial = cuda.shared.array(THREADS, numba.float32)
        partial[tid] = word_sum_of_row(xw, flat, row, cols, tid, THREADS)
        cuda.syncthreads()
        step = THREADS // 2
        while step > 0:
            if tid < step:
                partial[tid] += partial[tid + step]
            cuda.syncthreads()
            step //= 2
        if tid == 0:
            y[row] = partial[0]

    @cuda.jit(device=True, inline=True)
    def element_sum(x, row, start, step):
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

    @cuda.jit(device=True, inline=True)
    def vector_sum(xw, base, end, v):        # a row of whole 2-word vectors; v: the lane's first word
        a0 = a1 = numba.float32(0.0)
        while v + 64 < end:                  # two vectors in flight
            w0, w1 = load2(xw, base + v)
            w2, w3 = load2(xw, base + v + 64)
            a0 += word_sum(w0) + word_sum(w1)
            a1 += word_sum(w2) + word_sum(w3)
            v += 128
        if v < end:
            w0, w1 = load2(xw, base + v)
            a0 += word_sum(w0) + word_sum(w1)
        return a0 + a1

    @cuda.jit(device=True, inline=True)
    def store_warp_sum(partial, warp, lane, row, mine, y):
        """y[row] = the warp's lane sums, added by lane 0 in lane order (no shuffles: the simulator)."""
        partial[warp, lane] = mine
        cuda.syncthreads()
        if lane == 0 and row < y.shape[0]:
            s = numba.float32(0.0)
            for i in range(32):
                s += partial[warp, i]
            y[row] = s

    @cuda.jit
    def warp_per_row(x, y):
        warp, lane = cuda.threadIdx.x // 32, cuda.threadIdx.x % 32
        row = cuda.blockIdx.x * WARPS + warp
        partial = cuda.shared.array((WARPS, 32), numba.float32)
        mine = element_sum(x, row, lane, 32) if row < y.shape[0] else numba.float32(0.0)
        store_warp_sum(partial, warp, lane, row, mine, y)

    @cuda.jit
    def warp_per_row_vectors(xw, words_a_row, y):
        warp, lane = cuda.threadIdx.x // 32, cuda.threadIdx.x % 32
        row = cuda.blockIdx.x * WARPS + warp
        partial = cuda.shared.array((WARPS, 32), numba.float32)
        mine = vector_sum(xw, row * words_a_row, words_a_row, 2 * lane) if row < y.shape[0] else numba.float32(0.0)
        store_warp_sum(partial, warp, lane, row, mine, y)

    return block_per_row, warp_per_row, warp_per_row_vectors


KERNELS = {dtype: row_kernels(dtype) for dtype in PACK}


def build(case, inputs, outputs, stream, variant="", vectors=None):
    x, y = inputs["x"], outputs["y"]
    rows, cols = x.shape
    if vectors is None:
        vectors = False if cuda_simulator() else tuned(BY_GPU, False)
    block_per_row, warp_per_row, warp_per_row_vectors = KERNELS[case.dtype]
    per = PACK[case.dtype][0]
    row_bytes = cols * x.dtype.itemsize
    if cols <= WARP_PER_ROW_UP_TO and vectors and row_bytes % VECTOR_BYTES == 0:
        xw = words_of(x.reshape(rows * cols), per)
        kernel, grid, args = warp_per_row_vectors, (rows + WARPS - 1) // WARPS, (xw, np.int64(cols // per), y)
    elif cols <= WARP_PER_ROW_UP_TO:
        kernel, grid, args = warp_per_row, (rows + WARPS - 1) // WARPS, (x, y)
    else:
        flat = x.reshape(rows * cols)
        xw = words_of(flat, PACK[case.dtype][0])        # a long row always has whole words
        kernel, grid, args = block_per_row, rows, (xw, flat, np.int64(cols), y)
    compile_for(kernel, *args)

    def run():
        kernel[grid, THREADS, stream](*args)

    return run
