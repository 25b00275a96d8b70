"""z = alpha * x + y in numba-cuda SIMT with 16-byte loads and stores: x, y and z viewed as uint64
words (_common: packed access), each thread taking two pairs of words a block-width apart (all four
16-byte loads issued before any arithmetic), unpacking to float32, packing back. The elements after
the last whole pair (fewer than 16 bytes' worth) are done one by one by block 0."""
import numba
import numpy as np
from numba import cuda

from backends.numba_simt._common import LOAD, PACK, STORE, compile_for, load2, store2, u64, words_of

THREADS = 256
PAIRS_PER_THREAD = 2               # pairs of words (16 bytes each)
TILE = THREADS * PAIRS_PER_THREAD  # pairs per block


def axpy_kernel(dtype):
    per, bits, unpack, pack = PACK[dtype]
    load, store = LOAD[dtype], STORE[dtype]

    @cuda.jit(device=True, inline=True)
    def axpy_word(alpha, wx, wy):
        out = u64(0)
        for k in range(per):
            s = u64(k * bits)
            out |= pack(alpha * unpack(wx >> s) + unpack(wy >> s)) << s
        return out

    @cuda.jit
    def axpy(alpha, xw, yw, zw, x, y, z):
        npairs = xw.shape[0] // 2
        u0 = cuda.blockIdx.x * TILE + cuda.threadIdx.x
        u1 = u0 + THREADS
        if u1 < npairs:                               # loads first, then arithmetic and stores
            a0, b0 = load2(xw, 2 * u0)
            a1, b1 = load2(xw, 2 * u1)
            c0, d0 = load2(yw, 2 * u0)
            c1, d1 = load2(yw, 2 * u1)
            store2(zw, 2 * u0, axpy_word(alpha, a0, c0), axpy_word(alpha, b0, d0))
            store2(zw, 2 * u1, axpy_word(alpha, a1, c1), axpy_word(alpha, b1, d1))
        elif u0 < npairs:
            a0, b0 = load2(xw, 2 * u0)
            c0, d0 = load2(yw, 2 * u0)
            store2(zw, 2 * u0, axpy_word(alpha, a0, c0), axpy_word(alpha, b0, d0))
        if cuda.blockIdx.x == 0:                      # the tail, element by element
            i = 2 * npairs * per + cuda.threadIdx.x
            while i < x.shape[0]:
                z[i] = store(alpha * load(x[i]) + load(y[i]))
                i += THREADS

    return axpy


KERNELS = {dtype: axpy_kernel(dtype) for dtype in PACK}


def build(case, inputs, outputs, stream, variant=""):
    x, y, z = inputs["x"], inputs["y"], outputs["z"]
    alpha = numba.float32(inputs["alpha"])
    per = PACK[case.dtype][0]
    pairs = x.shape[0] // (2 * per)
    if pairs:                                         # the whole pairs' words, viewed without a copy
        xw, yw, zw = (words_of(a[:2 * per * pairs], per) for a in (x, y, z))
    else:                                             # too short: all of it is tail
        xw = yw = zw = cuda.device_array(0, dtype=np.uint64)
    kernel = KERNELS[case.dtype]
    compile_for(kernel, alpha, xw, yw, zw, x, y, z)
    blocks = max(1, -(-pairs // TILE))

    def run():
        kernel[blocks, THREADS, stream](alpha, xw, yw, zw, x, y, z)

    return run
