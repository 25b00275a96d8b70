"""C = A @ B in numba-cuda SIMT: 128x128 output tiles, 8-deep K slices staged in shared memory
(converted to float32 on the way in), each of 256 threads accumulating an 8x8 block of C in
registers. No tensor cores: this is what plain CUDA cores give from Python."""
import numba
from numba import cuda

from backends.numba_simt._common import LOAD, STORE, compile_for

BM = BN = 128
BK = 8
TM = TN = 8
THREADS = (BM // TM) * (BN // TN)      # 256


def gemm_kernel(load, store):
    @cuda.jit
    def gemm(a, b, c):
        m, k = a.shape
        n = b.shape[1]
        tx = cuda.threadIdx.x % 16
        ty = cuda.threadIdx.x // 16
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        a_tile = cuda.shared.array((BK, BM), numba.float32)     # A stored k-major: rows read as a vector
        b_tile = cuda.shared.array((BK, BN), numba.float32)
        acc = cuda.local.array((TM, TN), numba.float32)
        a_frag = cuda.local.array(TM, numba.float32)
        b_frag = cuda.local.array(TN, numba.float32)
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = 0.0
        t = cuda.threadIdx.x
        for k0 in range(0, k, BK):
            for e in range(t, BM * BK, THREADS):                 # 4 elements of each tile per thread
                r, kk = e // BK, e % BK
                ar, ak = row0 + r, k0 + kk
                a_tile[kk, r] = load(a[ar, ak]) if ar < m and ak < k else numba.float32(0.0)
                kk2, cc = e // BN, e % BN
                bk, bc = k0 + kk2, col0 + cc
                b_tile[kk2, cc] = load(b[bk, bc]) if bk < k and bc < n else numba.float32(0.0)
            cuda.syncthreads()
            for kk in range(BK):
                for i in range(TM):
                    a_frag[i] = a_tile[kk, ty + 16 * i]
                for j in range(TN):
                    b_frag[j] = b_tile[kk, tx + 16 * j]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += a_frag[i] * b_frag[j]
            cuda.syncthreads()
        for i in range(TM):
            r = row0 + ty + 16 * i
            for j in range(TN):
                col = col0 + tx + 16 * j
                if r < m and col < n:
                    c[r, col] = store(acc[i, j])

    return gemm


KERNELS = {dtype: gemm_kernel(LOAD[dtype], STORE[dtype]) for dtype in LOAD}


def build(case, inputs, outputs, stream, variant=""):
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    kernel = KERNELS[case.dtype]
    compile_for(kernel, a, b, c)
    grid = ((c.shape[1] + BN - 1) // BN, (c.shape[0] + BM - 1) // BM)

    def run():
        kernel[grid, THREADS, stream](a, b, c)

    return run
