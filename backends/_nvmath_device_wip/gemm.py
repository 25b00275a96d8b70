"""C = A @ B with nvmath-python's device Matmul (cuBLASDx) in a numba-cuda kernel: 128x128 output
tiles, a K loop over slices double-buffered in shared memory (async copies), fp32 accumulation in
registers, as examples/device/cublasdx_device_gemm_performance.py does, all row-major here."""
import numba
import numpy as np
from numba import cuda
from nvmath.device import Matmul
from nvmath.device.common import clear, copy, copy_fragment, copy_wait, make_fragment_like, make_tensor
from nvmath.device.cublasdx import MAX_ALIGNMENT

from backends.nvmath_device._tiles import copier, padded

THREADS = 256
TILE = {"float16": (128, 128, 32), "float32": (128, 128, 16)}     # (m, n, k) per block


def make_gemm(dtype):
    np_dtype = np.dtype(dtype).type
    tm, tn, tk = TILE[dtype]
    narrow = np_dtype != np.float32          # fp16 C: convert the fp32 accumulator on the way out
    MM = Matmul(size=(tm, tn, tk), precision=(np_dtype, np_dtype, np.float32), data_type="real",
                arrangement=("row_major", "row_major", "row_major"), execution="Block",
                block_size=THREADS, alignment=MAX_ALIGNMENT, static_block_dim=True)
    a_size = MM.suggest_layout_smem_a().cosize
    b_size = MM.suggest_layout_smem_b().cosize
    c_size = MM.suggest_layout_rmem_c().cosize

    @cuda.jit
    def gemm(a, b, c):
        k, n = a.shape[1], b.shape[1]
        bm, bn = cuda.blockIdx.x, cuda.blockIdx.y
        smem = cuda.shared.array(shape=(0,), dtype=np_dtype, alignment=16)
        smem_a = make_tensor(smem[0:a_size], MM.suggest_layout_smem_a())
        smem_b = make_tensor(smem[a_size:a_size + b_size], MM.suggest_layout_smem_b())
        smem_a_next = make_tensor(smem[a_size + b_size:2 * a_size + b_size], MM.suggest_layout_smem_a())
        smem_b_next = make_tensor(smem[2 * a_size + b_size:2 * (a_size + b_size)], MM.suggest_layout_smem_b())
        a_rows = a[bm * tm:(bm + 1) * tm, :]
        b_cols = b[:, bn * tn:(bn + 1) * tn]
        copy(make_tensor(a_rows[:, 0:tk], MM.get_layout_gmem_a(k)), smem_a)
        copy(make_tensor(b_cols[0:tk, :], MM.get_layout_gmem_b(n)), smem_b)
        acc = make_tensor(cuda.local.array(shape=(c_size,), dtype=np.float32), MM.suggest_layout_rmem_c())
        clear(acc)
        for s in range(1, k // tk):
            copy_wait()
            copy(make_tensor(a_rows[:, s * tk:(s + 1) * tk], MM.get_layout_gmem_a(k)), smem_a_next)
            copy(make_tensor(b_cols[s * tk:(s + 1) * tk, :], MM.get_layout_gmem_b(n)), smem_b_next)
            MM.execute(smem_a, smem_b, acc)
            smem_a, smem_a_next = smem_a_next, smem_a
            smem_b, smem_b_next = smem_b_next, smem_b
        copy_wait()
        MM.execute(smem_a, smem_b, acc)
        c_tile = make_tensor(c[bm * tm:(bm + 1) * tm, bn * tn:(bn + 1) * tn], MM.get_layout_gmem_c(n))
        if narrow:
            out = make_fragment_like(acc, np_dtype)
            for i in range(c_size):
                out[i] = np_dtype(acc[i])
            copy_fragment(out, c_tile)
        else:
            copy_fragment(acc, c_tile)

    return gemm, (tm, tn, tk), 2 * (a_size + b_size) * np.dtype(np_dtype).itemsize


def build(case, inputs, outputs, stream):
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    kernel, (tm, tn, tk), smem_bytes = make_gemm(case.dtype)
    a_p, b_p, c_p = padded(a, (tm, tk)), padded(b, (tk, tn)), padded(c, (tm, tn))
    kernel.compile(tuple(numba.typeof(x) for x in (a_p, b_p, c_p)))
    grid = (c_p.shape[0] // tm, c_p.shape[1] // tn)
    pad_a, pad_b = copier(a, a_p, stream), copier(b, b_p, stream)
    crop_c = copier(c_p[:c.shape[0], :c.shape[1]], c, stream) if c_p is not c else (lambda: None)

    def run():
        pad_a()
        pad_b()
        kernel[grid, THREADS, stream, smem_bytes](a_p, b_p, c_p)
        crop_c()

    return run
