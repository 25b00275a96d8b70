"""Per-row sum as linear algebra: y = X @ ones, with nvmath-python's device Matmul (cuBLASDx) in
a numba-cuda kernel; the device API has no reduction of its own. Each block takes `rows` rows and
walks the columns in `cols`-wide slices, loaded into shared memory by 16-byte async copies
(double-buffered as in nvmath's K-loop GEMM example, or one at a time); B is a column of ones
kept in shared memory. n = 1 leaves the tensor cores idle: the work is the streaming of X.
Shared-memory layouts are cuBLASDx's plain ones or its suggested (swizzled) ones; long rows can be
split over `splits` blocks whose partial sums a second kernel adds (more blocks than SMs)."""
import functools
from typing import NamedTuple

import numpy as np
from numba import cuda
from numba.cuda.typing.typeof import typeof
from nvmath.device import Matmul
from nvmath.device.common import clear, copy, copy_fragment, copy_wait, make_tensor

from backends.base import compiling
from backends.nvmath_device._tiles import compiled_with_smem, copier, padded


class Plan(NamedTuple):
    rows: int           # rows per block (the GEMV's m)
    cols: int           # columns per slice (its k)
    block: int          # threads per block
    stages: int = 2     # 2: the next slice loads while this one is summed; 1: load, wait, sum
    suggested: bool = False     # cuBLASDx's suggested shared-memory layout for X (else its plain one)
    splits: int = 1     # blocks per row range, each summing cols / splits columns


LONG = 4096             # rows at least this long take BEST["long"]
# tools/nvmath_sweep.py: the best on the H100 and on the H200 (reports/evidence/h200-tuning)
BEST = {"long": Plan(64, 128, 256, 1, True, 4), "short": Plan(32, 64, 128, 1)}


def plan_for(cols: int) -> Plan:
    return BEST["long" if cols >= LONG else "short"]


@functools.cache
def gemv_matmul(dtype, plan):
    """cuBLASDx's block GEMV for `plan` and the layouts the kernel puts it on: (MM, smem_a, smem_b, rmem_c)."""
    T = np.dtype(dtype).type
    MM = Matmul(size=(plan.rows, 1, plan.cols), precision=(T, T, np.float32), data_type="real",
                arrangement=("row_major", "row_major", "row_major"), execution="Block",
                block_size=plan.block, static_block_dim=True)
    if plan.suggested:
        return MM, MM.suggest_layout_smem_a(), MM.suggest_layout_smem_b(), MM.suggest_layout_rmem_c()
    return MM, MM.get_layout_smem_a(), MM.get_layout_smem_b(), MM.get_layout_rmem_c()


def operands(x, dtype, plan):
    """What the kernel takes besides X's own array: X zero-padded to whole slices (X itself when it
    fits), the column of ones, and the (rows, splits) partial sums."""
    x_p = padded(x, (plan.rows, plan.cols * plan.splits))
    ones = cuda.to_device(np.ones((plan.cols, 1), dtype=np.dtype(dtype)))
    return x_p, ones, cuda.device_array((x_p.shape[0], plan.splits), dtype=np.float32)


@functools.cache
def gemv_kernel(dtype, plan):
    T = np.dtype(dtype).type
    tm, tk = plan.rows, plan.cols
    MM, smem_a, smem_b, rmem_c = gemv_matmul(dtype, plan)
    a_size, b_size, c_size = smem_a.cosize, smem_b.cosize, rmem_c.cosize
    stages = plan.stages

    @cuda.jit
    def gemv(x, ones, y):
        cols, splits = x.shape[1], cuda.gridDim.y          # y: (rows, splits) partial sums
        rows = x[cuda.blockIdx.x * tm:(cuda.blockIdx.x + 1) * tm, cuda.blockIdx.y * (cols // splits):]
        smem = cuda.shared.array(shape=(0,), dtype=T, alignment=16)
        a_tile = make_tensor(smem[0:a_size], smem_a)
        a_next = make_tensor(smem[a_size:2 * a_size], smem_a)     # unused with 1 stage
        b_tile = make_tensor(smem[stages * a_size:stages * a_size + b_size], smem_b)
        copy(make_tensor(ones, MM.get_layout_gmem_b(1)), b_tile)
        copy(make_tensor(rows[:, 0:tk], MM.get_layout_gmem_a(cols)), a_tile, alignment=16)
        acc = make_tensor(cuda.local.array(shape=(c_size,), dtype=np.float32), rmem_c)
        clear(acc)
        for s in range(1, cols // splits // tk):
            if stages == 2:
                copy_wait()
                copy(make_tensor(rows[:, s * tk:(s + 1) * tk], MM.get_layout_gmem_a(cols)), a_next, alignment=16)
                MM.execute(a_tile, b_tile, acc)
                a_tile, a_next = a_next, a_tile
            else:
                copy_wait()
                MM.execute(a_tile, b_tile, acc)
                cuda.syncthreads()                # the next slice overwrites a_tile
                copy(make_tensor(rows[:, s * tk:(s + 1) * tk], MM.get_layout_gmem_a(cols)), a_tile, alignment=16)
        copy_wait()
        MM.execute(a_tile, b_tile, acc)
        copy_fragment(acc, make_tensor(y[cuda.blockIdx.x * tm:(cuda.blockIdx.x + 1) * tm, cuda.blockIdx.y:],
                                       MM.get_layout_gmem_c(splits)))

    smem_bytes = (stages * a_size + b_size) * np.dtype(T).itemsize
    return gemv, smem_bytes


@cuda.jit
def add_parts(parts, y):
    """y[r] = the sum of row r's partial sums (the column splits)."""
    r = cuda.grid(1)
    if r < y.shape[0]:
        total = np.float32(0)
        for s in range(parts.shape[1]):
            total += parts[r, s]
        y[r] = total


def build(case, inputs, outputs, stream, variant="", plan=None):
    x, y = inputs["x"], outputs["y"]
    rows, cols = x.shape
    plan = plan or plan_for(cols)
    with compiling():          # nvmath's Matmul: cuBLASDx's code generated on the CPU
        kernel, smem_bytes = gemv_kernel(case.dtype, plan)
    x_p, ones, y_p = operands(x, case.dtype, plan)
    compiled_with_smem(kernel, smem_bytes, x_p, ones, y_p)
    pad_x = copier(x, x_p, stream)
    if plan.splits == 1:
        finish = copier(y_p[:rows], y.reshape(rows, 1), stream)
    else:
        add_parts.compile((typeof(y_p), typeof(y)))
        finish = functools.partial(add_parts[-(-rows // 256), 256, stream], y_p, y)
    launch = kernel[(x_p.shape[0] // plan.rows, plan.splits), plan.block, stream, smem_bytes]

    def run():
        pad_x()
        launch(x_p, ones, y_p)
        finish()

    return run
