"""Per-row sum as linear algebra: y = X @ ones, with nvmath-python's device Matmul (cuBLASDx) in
a numba-cuda kernel. Each block takes 32 rows and walks the columns in 64-wide slices staged in
shared memory; B is a column of ones kept in shared memory. n = 1 leaves the tensor cores idle:
this is the "a reduction is a GEMV" way, not the fast way."""
import functools

import numba
import numpy as np
from numba import cuda
from nvmath.device import Matmul
from nvmath.device.common import clear, copy, copy_fragment, copy_wait, make_tensor

from backends.nvmath_device._tiles import copier, padded

THREADS = 128
TM, TK = 32, 64            # 32 rows a block: a long-row matrix still spreads over every SM


@functools.cache
def gemv_kernel(dtype):
    np_dtype = np.dtype(dtype).type
    MM = Matmul(size=(TM, 1, TK), precision=(np_dtype, np_dtype, np.float32), data_type="real",
                arrangement=("row_major", "row_major", "row_major"), execution="Block",
                block_size=THREADS, static_block_dim=True)
    a_size = MM.get_layout_smem_a().cosize
    b_size = MM.get_layout_smem_b().cosize
    c_size = MM.get_layout_rmem_c().cosize

    @cuda.jit
    def gemv(x, ones, y):
        cols = x.shape[1]
        rows = x[cuda.blockIdx.x * TM:(cuda.blockIdx.x + 1) * TM, :]
        smem_a = cuda.shared.array(shape=(a_size,), dtype=np_dtype)
        smem_b = cuda.shared.array(shape=(b_size,), dtype=np_dtype)
        a_tile = make_tensor(smem_a, MM.get_layout_smem_a())
        b_tile = make_tensor(smem_b, MM.get_layout_smem_b())
        copy(make_tensor(ones, MM.get_layout_gmem_b(1)), b_tile)
        acc = make_tensor(cuda.local.array(shape=(c_size,), dtype=np.float32), MM.get_layout_rmem_c())
        clear(acc)
        for s in range(cols // TK):
            copy(make_tensor(rows[:, s * TK:(s + 1) * TK], MM.get_layout_gmem_a(cols)), a_tile)
            copy_wait()
            MM.execute(a_tile, b_tile, acc)
            cuda.syncthreads()                    # the next slice overwrites a_tile
        copy_fragment(acc, make_tensor(y[cuda.blockIdx.x * TM:(cuda.blockIdx.x + 1) * TM, :],
                                       MM.get_layout_gmem_c(1)))

    return gemv


def build(case, inputs, outputs, stream):
    x, y = inputs["x"], outputs["y"]
    rows = x.shape[0]
    kernel = gemv_kernel(case.dtype)
    x_p = padded(x, (TM, TK))
    y_p = cuda.device_array((x_p.shape[0], 1), dtype=np.float32)
    ones = cuda.to_device(np.ones((TK, 1), dtype=np.dtype(case.dtype)))
    kernel.compile(tuple(numba.typeof(v) for v in (x_p, ones, y_p)))
    pad_x = copier(x, x_p, stream)
    crop_y = copier(y_p[:rows], y.reshape(rows, 1), stream)

    def run():
        pad_x()
        kernel[x_p.shape[0] // TM, THREADS, stream](x_p, ones, y_p)
        crop_y()

    return run
