"""z = alpha * x + y with cuda.coop block load/store: each thread moves 16 bytes at a time
(vectorized when aligned), computes in float32; the last partial tile is done by hand."""
import numba
import numpy as np
from numba import cuda

import cuda.coop._experimental as coop

from backends.base import compiling

THREADS = 256


def axpy_kernel(dtype, items):
    tile = THREADS * items
    load = coop.block.make_load(dtype, THREADS, items, "vectorize")
    store = coop.block.make_store(dtype, THREADS, items, "vectorize")

    @cuda.jit(link=load.files + store.files)
    def axpy(alpha, x, y, z):
        base = cuda.blockIdx.x * tile
        n = x.shape[0]
        if base + tile <= n:
            xs = cuda.local.array(items, dtype)
            ys = cuda.local.array(items, dtype)
            load(x[base:], xs)
            load(y[base:], ys)
            for i in range(items):
                xs[i] = alpha * numba.float32(xs[i]) + numba.float32(ys[i])
            store(z[base:], xs)
        else:
            for i in range(base + cuda.threadIdx.x, n, THREADS):
                z[i] = alpha * numba.float32(x[i]) + numba.float32(y[i])

    return axpy, tile


def supports(case, variant=""):
    if case.dtype == "float16":
        return "cuda.coop 1.1.1: its block load does not compile for __half (NVRTC: incomplete type)"
    return None


def build(case, inputs, outputs, stream, variant=""):
    x, y, z = inputs["x"], inputs["y"], outputs["z"]
    alpha = numba.float32(inputs["alpha"])
    items = 16 // np.dtype(case.dtype).itemsize
    with compiling():          # NVRTC for the primitives, then numba: CPU work, others may time meanwhile
        kernel, tile = axpy_kernel(numba.from_dtype(np.dtype(case.dtype)), items)
        kernel.compile((numba.float32, numba.typeof(x), numba.typeof(y), numba.typeof(z)))
    blocks = (x.shape[0] + tile - 1) // tile

    def run():
        kernel[blocks, THREADS, stream](alpha, x, y, z)

    return run
