"""C = A @ B with nvmath-python's device Matmul (cuBLASDx) in numba-cuda kernels, all row-major,
fp32 accumulation in registers, written after nvmath's examples/device performance examples:
- "": cublasdx_device_gemm_performance.py, a K loop of MM.execute() on slices double-buffered
  in shared memory by async copies;
- "pipeline": cublasdx_device_gemm_performance_pipeline.py, a DevicePipeline (built on the host
  for these very arrays) runs the whole K loop with TMA and warpgroup MMA.
A float16 C gets the accumulator narrowed on the way out."""
import functools

import numpy as np
from cuda.bindings import driver
from numba import cuda
from numba.cuda.typing.typeof import typeof
from nvmath.device import Matmul
from nvmath.device.common import clear, copy, copy_fragment, copy_wait, make_tensor
from nvmath.device.cublasdx import MAX_ALIGNMENT
from nvmath.device.cublasdx_numba import pipeline_extensions

from backends.nvmath_device._tiles import copier, padded

TILE = {"float16": (128, 128, 32), "float32": (128, 128, 16)}     # (m, n, k) per block
SMEM_PER_BLOCK = 227 * 1024                                        # sm_90's opt-in maximum
STAGE_SCRATCH = 16                       # bytes a pipeline stage needs beyond its A and B slices


def matmul(dtype, **pipeline):
    T = np.dtype(dtype).type
    return Matmul(size=TILE[dtype], precision=(T, T, np.float32), data_type="real",
                  arrangement=("row_major", "row_major", "row_major"), execution="Block",
                  block_size=128 if pipeline else 256, alignment=MAX_ALIGNMENT, static_block_dim=True,
                  **pipeline)


@functools.cache
def k_loop_kernel(dtype):
    MM, T = matmul(dtype), np.dtype(dtype).type
    tm, tn, tk = TILE[dtype]
    a_size = MM.suggest_layout_smem_a().cosize
    b_size = MM.suggest_layout_smem_b().cosize
    c_size = MM.suggest_layout_rmem_c().cosize

    @cuda.jit
    def gemm(a, b, c):
        k, n = a.shape[1], b.shape[1]
        bm, bn = cuda.blockIdx.x, cuda.blockIdx.y
        smem = cuda.shared.array(shape=(0,), dtype=T, alignment=16)
        smem_a = make_tensor(smem[0:a_size], MM.suggest_layout_smem_a())
        smem_b = make_tensor(smem[a_size:a_size + b_size], MM.suggest_layout_smem_b())
        smem_a_next = make_tensor(smem[a_size + b_size:2 * a_size + b_size], MM.suggest_layout_smem_a())
        smem_b_next = make_tensor(smem[2 * a_size + b_size:2 * (a_size + b_size)], MM.suggest_layout_smem_b())
        a_rows = a[bm * tm:(bm + 1) * tm, :]
        b_cols = b[:, bn * tn:(bn + 1) * tn]
        copy(make_tensor(a_rows[:, 0:tk], MM.get_layout_gmem_a(k)), smem_a, alignment=16)
        copy(make_tensor(b_cols[0:tk, :], MM.get_layout_gmem_b(n)), smem_b, alignment=16)
        acc = make_tensor(cuda.local.array(shape=(c_size,), dtype=np.float32), MM.suggest_layout_rmem_c())
        clear(acc)
        for s in range(1, k // tk):
            copy_wait()
            copy(make_tensor(a_rows[:, s * tk:(s + 1) * tk], MM.get_layout_gmem_a(k)), smem_a_next, alignment=16)
            copy(make_tensor(b_cols[s * tk:(s + 1) * tk, :], MM.get_layout_gmem_b(n)), smem_b_next, alignment=16)
            MM.execute(smem_a, smem_b, acc)
            smem_a, smem_a_next = smem_a_next, smem_a
            smem_b, smem_b_next = smem_b_next, smem_b
        copy_wait()
        MM.execute(smem_a, smem_b, acc)
        c_tile = make_tensor(c[bm * tm:(bm + 1) * tm, bn * tn:(bn + 1) * tn], MM.get_layout_gmem_c(n))
        if T is np.float32:
            copy_fragment(acc, c_tile)
        else:
            out = make_tensor(cuda.local.array(shape=(c_size,), dtype=T, alignment=16), MM.suggest_layout_rmem_c())
            for i in range(c_size):
                out[i] = T(acc[i])
            copy_fragment(out, c_tile)

    return gemm, 2 * (a_size + b_size) * np.dtype(T).itemsize


@functools.cache
def pipeline_kernel(dtype):
    MM, T = matmul(dtype, with_pipeline=True, enable_input_streaming=True), np.dtype(dtype).type
    tm, tn, _ = TILE[dtype]
    c_size = MM.suggest_layout_rmem_c().cosize

    @cuda.jit(extensions=pipeline_extensions, launch_bounds=[MM.block_size, 1])
    def gemm(c, device_pipeline):
        smem = cuda.shared.array(shape=(0,), dtype=np.byte, alignment=device_pipeline.buffer_alignment)
        bm, bn = cuda.blockIdx.x, cuda.blockIdx.y
        c_tile = make_tensor(c[bm * tm:(bm + 1) * tm, bn * tn:(bn + 1) * tn], MM.get_layout_gmem_c(c.shape[1]))
        tile_pipeline = device_pipeline.get_tile(smem, bm, bn)
        accumulator = MM.suggest_accumulator()
        tile_pipeline.execute(accumulator)
        tile_pipeline._del()
        if accumulator.is_thread_active():
            results = accumulator.get_results()
            out = make_tensor(cuda.local.array(shape=(c_size,), dtype=T, alignment=16), MM.suggest_layout_rmem_c())
            for i in range(c_size):
                out[i] = T(results[i])
            accumulator.partition_and_copy(out, c_tile)

    return gemm, MM


def compiled_with_smem(kernel, smem_bytes, *args):
    """Compile `kernel` for `args` now and let it use `smem_bytes` of dynamic shared memory (numba
    has no knob for the opt-in above 48 KiB: set the attribute on the compiled function)."""
    handle = kernel.compile(tuple(typeof(a) for a in args)).library.get_cufunc().handle
    if isinstance(handle, driver.CUkernel):
        err, handle = driver.cuKernelGetFunction(handle)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuKernelGetFunction: {err}")
    err, = driver.cuFuncSetAttribute(
        handle, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem_bytes)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuFuncSetAttribute: {err}")


def build(case, inputs, outputs, stream, variant=""):
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    tm, tn, tk = TILE[case.dtype]
    a_p, b_p, c_p = padded(a, (tm, tk)), padded(b, (tk, tn)), padded(c, (tm, tn))
    grid = (c_p.shape[0] // tm, c_p.shape[1] // tn)
    if variant == "pipeline":
        kernel, MM = pipeline_kernel(case.dtype)
        stage_bytes = (tm + tn) * tk * a.dtype.itemsize + STAGE_SCRATCH
        depth = min(16, (SMEM_PER_BLOCK - 32) // stage_bytes, a_p.shape[1] // tk)
        pipe = MM.suggest_device_pipeline(depth, a_p, b_p)
        compiled_with_smem(kernel, pipe.buffer_size, c_p, pipe)
        launch = kernel[grid, pipe.block_dim, stream, pipe.buffer_size]
        args = (c_p, pipe)
    else:
        kernel, smem_bytes = k_loop_kernel(case.dtype)
        compiled_with_smem(kernel, smem_bytes, a_p, b_p, c_p)
        launch = kernel[grid, 256, stream, smem_bytes]
        args = (a_p, b_p, c_p)
    pad_a, pad_b = copier(a, a_p, stream), copier(b, b_p, stream)
    crop_c = copier(c_p[:c.shape[0], :c.shape[1]], c, stream) if c_p is not c else (lambda: None)

    def run():
        pad_a()
        pad_b()
        launch(*args)
        crop_c()

    return run
