"""z = alpha * x + y in numba-cuda SIMT: a grid-stride loop in float32 arithmetic, each thread
taking a few elements a block-width apart (coalesced)."""
import numba
from numba import cuda

from backends.numba_simt._common import LOAD, STORE, compile_for

THREADS = 256
ITEMS_PER_THREAD = 4


def axpy_kernel(load, store):
    @cuda.jit
    def axpy(alpha, x, y, z):
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, x.shape[0], stride):
            z[i] = store(alpha * load(x[i]) + load(y[i]))

    return axpy


KERNELS = {dtype: axpy_kernel(LOAD[dtype], STORE[dtype]) for dtype in LOAD}


def build(case, inputs, outputs, stream):
    x, y, z = inputs["x"], inputs["y"], outputs["z"]
    alpha = numba.float32(inputs["alpha"])
    kernel = KERNELS[case.dtype]
    compile_for(kernel, alpha, x, y, z)
    blocks = max(1, -(-x.shape[0] // (THREADS * ITEMS_PER_THREAD)))

    def run():
        kernel[blocks, THREADS, stream](alpha, x, y, z)

    return run
