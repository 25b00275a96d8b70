"""Per-row sum in CuTe DSL, after its cta_norm and reduce examples: threads copy 128-bit vectors of
a row tile (a tiled copy over a thread-value layout) and sum them in float32, then a butterfly
shuffle reduces each warp. Short rows (up to SHORT_ROW columns) get a warp each; long rows a block
each, whose warps meet in shared memory. Rows whose length is not a whole number of vectors are
read element by element."""
import operator

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.utils
from cutlass import Float32

from backends.cute_dsl import as_cute, compile_once, launcher
from problems.base import DTYPES

SHORT_ROW, WARPS_PER_BLOCK, ROW_THREADS, VECTORS_PER_THREAD = 1024, 8, 256, 4


@cute.kernel
def row_sum_kernel(mX: cute.Tensor, mY: cute.Tensor, tiled_copy: cute.TiledCopy, tile: cutlass.Constexpr,
                   threads_per_row: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    thr = tiled_copy.get_slice(tidx)
    coords = cute.make_identity_tensor(mX.shape)
    acc = Float32(0.0)
    for j in range(cute.ceil_div(mX.shape[1], tile[1])):
        tXgX = thr.partition_S(cute.local_tile(mX, tile, (bidx, j)))      # (vector, 1, vectors per thread)
        tXcX = thr.partition_S(cute.local_tile(coords, tile, (bidx, j)))
        tXrX = cute.make_fragment_like(tXgX)
        tXrX.fill(0)
        for k in cutlass.range_constexpr(cute.size(tXgX, mode=[2])):
            if cute.elem_less(tXcX[None, 0, k][0], mX.shape):
                cute.autovec_copy(tXgX[None, 0, k], tXrX[None, 0, k])
        acc += tXrX.load().to(Float32).reduce(cute.ReductionOp.ADD, Float32(0.0), reduction_profile=0)
    acc = cute.arch.warp_reduction(acc, operator.add, threads_in_group=32)
    lane, warp = cute.arch.lane_idx(), cute.arch.warp_idx()
    if cutlass.const_expr(threads_per_row == 32):
        row = bidx * tile[0] + warp
        if lane == 0 and row < mX.shape[0]:
            mY[row] = acc
    else:
        partial = cutlass.utils.SmemAllocator().allocate_tensor(Float32, cute.make_layout((threads_per_row // 32,)),
                                                                byte_alignment=16)
        if lane == 0:
            partial[warp] = acc
        cute.arch.sync_threads()
        if warp == 0:
            total = Float32(0.0)
            if lane < threads_per_row // 32:
                total = partial[lane]
            total = cute.arch.warp_reduction_sum(total)
            if lane == 0:
                mY[bidx] = total


@cute.jit
def row_sum(mX: cute.Tensor, mY: cute.Tensor, stream: cuda.CUstream, short_rows: cutlass.Constexpr,
            vector: cutlass.Constexpr, vectors_per_thread: cutlass.Constexpr):
    rows, threads = (WARPS_PER_BLOCK, 32) if cutlass.const_expr(short_rows) else (1, ROW_THREADS)
    thr_layout = cute.make_ordered_layout((rows, threads), order=(1, 0))    # lanes walk a row
    val_layout = cute.make_ordered_layout((1, vector), order=(1, 0))
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), mX.element_type,
                               num_bits_per_copy=vector * mX.element_type.width)
    tiled_copy = cute.make_tiled_copy_tv(atom, thr_layout, val_layout)
    row_sum_kernel(mX, mY, tiled_copy, (rows, threads * vector * vectors_per_thread), threads).launch(
        grid=[cute.ceil_div(mX.shape[0], rows), 1, 1], block=[rows * threads, 1, 1], stream=stream)


def shape_constants(case):
    cols, width = case.shape["cols"], 16 // DTYPES[case.dtype].itemsize
    vector = width if cols % width == 0 else 1
    short_rows = cols <= SHORT_ROW
    per_thread = max(1, min(VECTORS_PER_THREAD, cols // (32 * vector))) if short_rows else VECTORS_PER_THREAD
    return {"short_rows": short_rows, "vector": vector, "vectors_per_thread": per_thread}


def compile_case(case, inputs, outputs, variant, options=""):
    tensors = [as_cute(inputs["x"], variant), as_cute(outputs["y"], variant)]
    return compile_once(row_sum, tensors, variant, options, **shape_constants(case)), tensors


def build(case, inputs, outputs, stream, variant=""):
    compiled, tensors = compile_case(case, inputs, outputs, variant)
    return launcher(compiled, tensors, (inputs["x"], outputs["y"]), stream, variant)
