"""C = A @ B with nvmath-python's device Matmul (cuBLASDx) in numba-cuda kernels, fp32
accumulation in registers, written after nvmath's examples/device performance examples:
- "": cublasdx_device_gemm_performance.py, a K loop of MM.execute() on slices double-buffered
  in shared memory by async copies;
- "pipeline": cublasdx_device_gemm_performance_pipeline.py, a DevicePipeline (built on the host
  for these very arrays) runs the whole K loop with TMA and warpgroup MMA; its kernels are compiled
  for the arrays' shapes, so the arrays are padded to a few shape buckets (pipeline_bucket).
The lab's arrays are row-major. A plan with `swap` computes C^T = B^T @ A^T instead, all three
read as column-major (the same bytes): the arrangement nvmath's K-loop example uses."""
import functools
from typing import NamedTuple

import numpy as np
from numba import cuda
from nvmath.device import Matmul
from nvmath.device.common import clear, copy, copy_fragment, copy_wait, make_tensor
from nvmath.device.cublasdx import MAX_ALIGNMENT
from nvmath.device.cublasdx_numba import pipeline_extensions

from backends.base import compiling
from backends.nvmath_device import pipeline_bucket
from backends.nvmath_device._tiles import compiled_with_smem, copier, padded, transposed


class Plan(NamedTuple):
    tile: tuple[int, int, int]      # (m, n, k) per block
    block: int                      # threads per block
    swap: bool = False              # C^T = B^T A^T, column-major
    depth: int = 0                  # pipeline stages; 0: as many as shared memory holds


BEST = {("", "float16"): Plan((256, 128, 32), 256), ("", "float32"): Plan((128, 64, 16), 128, swap=True),
        ("pipeline", "float16"): Plan((128, 256, 64), 256, swap=True)}     # tools/nvmath_sweep.py on an H100
SMEM_PER_BLOCK = 227 * 1024                                        # sm_90's opt-in maximum
STAGE_SCRATCH = 16                       # bytes a pipeline stage needs beyond its A and B slices


def matmul(dtype, plan, **pipeline):
    T = np.dtype(dtype).type
    order = "col_major" if plan.swap else "row_major"
    return Matmul(size=plan.tile, precision=(T, T, np.float32), data_type="real", arrangement=(order,) * 3,
                  execution="Block", block_size=plan.block, alignment=MAX_ALIGNMENT, static_block_dim=True,
                  **pipeline)


@functools.cache
def k_loop_kernel(dtype, plan):
    MM, T = matmul(dtype, plan), np.dtype(dtype).type
    tm, tn, tk = plan.tile
    a_size = MM.suggest_layout_smem_a().cosize
    b_size = MM.suggest_layout_smem_b().cosize
    c_size = MM.suggest_layout_rmem_c().cosize
    col = plan.swap

    @cuda.jit
    def gemm(a, b, c):
        m, k = a.shape
        n = b.shape[1]
        ld_a, ld_b, ld_c = (m, k, m) if col else (k, n, n)
        bm, bn = cuda.blockIdx.x, cuda.blockIdx.y
        smem = cuda.shared.array(shape=(0,), dtype=T, alignment=16)
        smem_a = make_tensor(smem[0:a_size], MM.suggest_layout_smem_a())
        smem_b = make_tensor(smem[a_size:a_size + b_size], MM.suggest_layout_smem_b())
        smem_a_next = make_tensor(smem[a_size + b_size:2 * a_size + b_size], MM.suggest_layout_smem_a())
        smem_b_next = make_tensor(smem[2 * a_size + b_size:2 * (a_size + b_size)], MM.suggest_layout_smem_b())
        a_rows = a[bm * tm:(bm + 1) * tm, :]
        b_cols = b[:, bn * tn:(bn + 1) * tn]
        copy(make_tensor(a_rows[:, 0:tk], MM.get_layout_gmem_a(ld_a)), smem_a, alignment=16)
        copy(make_tensor(b_cols[0:tk, :], MM.get_layout_gmem_b(ld_b)), smem_b, alignment=16)
        acc = make_tensor(cuda.local.array(shape=(c_size,), dtype=np.float32), MM.suggest_layout_rmem_c())
        clear(acc)
        for s in range(1, k // tk):
            copy_wait()
            copy(make_tensor(a_rows[:, s * tk:(s + 1) * tk], MM.get_layout_gmem_a(ld_a)), smem_a_next, alignment=16)
            copy(make_tensor(b_cols[s * tk:(s + 1) * tk, :], MM.get_layout_gmem_b(ld_b)), smem_b_next, alignment=16)
            MM.execute(smem_a, smem_b, acc)
            smem_a, smem_a_next = smem_a_next, smem_a
            smem_b, smem_b_next = smem_b_next, smem_b
        copy_wait()
        MM.execute(smem_a, smem_b, acc)
        c_tile = make_tensor(c[bm * tm:(bm + 1) * tm, bn * tn:(bn + 1) * tn], MM.get_layout_gmem_c(ld_c))
        if T is np.float32:
            copy_fragment(acc, c_tile, alignment=16)
        else:
            out = make_tensor(cuda.local.array(shape=(c_size,), dtype=T, alignment=16), MM.suggest_layout_rmem_c())
            for i in range(c_size):
                out[i] = T(acc[i])
            copy_fragment(out, c_tile, alignment=16)

    return gemm, 2 * (a_size + b_size) * np.dtype(T).itemsize


@functools.cache
def pipeline_kernel(dtype, plan):
    MM, T = matmul(dtype, plan, with_pipeline=True, enable_input_streaming=True), np.dtype(dtype).type
    tm, tn, _ = plan.tile
    c_size = MM.suggest_layout_rmem_c().cosize
    col = plan.swap

    @cuda.jit(extensions=pipeline_extensions, launch_bounds=[MM.block_size, 1])
    def gemm(c, device_pipeline):
        smem = cuda.shared.array(shape=(0,), dtype=np.byte, alignment=device_pipeline.buffer_alignment)
        bm, bn = cuda.blockIdx.x, cuda.blockIdx.y
        ld_c = c.shape[0] if col else c.shape[1]
        c_tile = make_tensor(c[bm * tm:(bm + 1) * tm, bn * tn:(bn + 1) * tn], MM.get_layout_gmem_c(ld_c))
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


def pipeline_kernels_compiled(MM, depth, a, b):
    """Compile cuBLASDx's pipeline-init and -destroy kernels for these shapes now, with the GPU
    released: suggest_device_pipeline compiles the first (about 30 s a case on the H100 node) and
    launches it in one call, the pipeline's finalizer the second, so either would hold the GPU
    throughout, and nvmath's public API has no way to compile them apart. nvmath caches both by
    their descriptors (lru_cache on shapes, strides, depth, types), so the later calls only launch.
    These are nvmath 1.0's private names: if they change, this fails loudly, not silently slower."""
    from nvmath.device import cublasdx as dx
    stand_in = dx.DevicePipeline.__new__(dx.DevicePipeline)     # its descriptor's fields, no launch
    stand_in.mm, stand_in.pipeline_depth = MM, depth
    stand_in._a_view, stand_in._b_view = (dx.StridedMemoryView.from_any_interface(x, stream_ptr=-1) for x in (a, b))
    descriptors = (dx._blas_tensors_handle(MM), dx._blas_device_pipeline_handle(stand_in))
    dx._compile_blas_device_pipeline_init_kernel(*descriptors, code_type=dx.get_default_code_type())
    dx._compile_blas_device_pipeline_destroy_kernel(*descriptors, code_type=dx.get_default_code_type())


def build(case, inputs, outputs, stream, variant="", plan=None):
    plan = plan or BEST[variant, case.dtype]
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    tm, tn, tk = plan.tile
    # one pipeline depth for every case (a kernel built once), K padded to at least that many slices
    depth = plan.depth or min(16, (SMEM_PER_BLOCK - 32) // ((tm + tn) * tk * a.dtype.itemsize + STAGE_SCRATCH))
    (m, k), n = a.shape, b.shape[1]
    if variant == "pipeline":           # its kernels are compiled for these shapes: one per bucket
        m, n, k = pipeline_bucket(m), pipeline_bucket(n), max(pipeline_bucket(k), depth * tk)
    if plan.swap:                       # the kernel's (m, n) are C^T's: N and M
        b_p, a_p, c_p = padded(b, (tk, tm), (k, n)), padded(a, (tn, tk), (m, k)), padded(c, (tn, tm), (m, n))
        ka, kb, kc = transposed(b_p), transposed(a_p), transposed(c_p)
    else:
        a_p, b_p, c_p = padded(a, (tm, tk), (m, k)), padded(b, (tk, tn), (k, n)), padded(c, (tm, tn), (m, n))
        ka, kb, kc = a_p, b_p, c_p
    grid = (kc.shape[0] // tm, kc.shape[1] // tn)
    if variant == "pipeline":
        with compiling():      # nvmath's Matmul: cuBLASDx's code generated on the CPU
            kernel, MM = pipeline_kernel(case.dtype, plan)
            pipeline_kernels_compiled(MM, depth, ka, kb)
        pipe = MM.suggest_device_pipeline(depth, ka, kb)     # launches the pipeline-init kernel
        compiled_with_smem(kernel, pipe.buffer_size, kc, pipe)
        launch = kernel[grid, pipe.block_dim, stream, pipe.buffer_size]
        args = (kc, pipe)
    else:
        with compiling():      # nvmath's Matmul: cuBLASDx's code generated on the CPU
            kernel, smem_bytes = k_loop_kernel(case.dtype, plan)
        compiled_with_smem(kernel, smem_bytes, ka, kb, kc)
        launch = kernel[grid, plan.block, stream, smem_bytes]
        args = (ka, kb, kc)
    pad_a, pad_b = copier(a, a_p, stream), copier(b, b_p, stream)
    crop_c = copier(c_p[:c.shape[0], :c.shape[1]], c, stream) if c_p is not c else (lambda: None)

    def run():
        pad_a()
        pad_b()
        launch(*args)
        crop_c()

    return run
