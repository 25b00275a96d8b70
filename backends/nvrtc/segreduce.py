"""Per-row sum in CUDA C++ (NVRTC): long rows get a block each, reduced with CUB's BlockReduce;
short rows (up to SHORT_ROW columns) a warp each, reduced with CUB's WarpReduce. Rows that start
on a 16-byte boundary are read as 16-byte vectors; the sum is float32 for every input type. Short
rows that all start on one (whole vectors a row) may instead be loaded a lane's share at once
(CUB's striped direct load of VPL vectors, then summed): build's `at_once`."""
import numpy as np
from cuda.core import LaunchConfig, launch

from backends.gpus import tuned
from backends.nvrtc import CXX_TYPE, compile_cubin, device_arch

SOURCE = r"""
#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// Sum of row[first], row[first + step], ... counted in 16-byte vectors where the row allows it
template <typename T>
__device__ inline float strided_sum(const T* __restrict__ row, long long cols, int first, int step) {
    constexpr int VEC = sizeof(uint4) / sizeof(T);
    const long long vectors = reinterpret_cast<unsigned long long>(row) % sizeof(uint4) == 0 ? cols / VEC : 0;
    float acc = 0.0f;
#pragma unroll 4
    for (long long v = first; v < vectors; v += step) {
        const uint4 raw = reinterpret_cast<const uint4*>(row)[v];
        const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
        for (int k = 0; k < VEC; ++k) acc += static_cast<float>(e[k]);
    }
    for (long long j = vectors * VEC + first; j < cols; j += step) acc += static_cast<float>(row[j]);
    return acc;
}

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) block_row_sum(const T* __restrict__ x, float* __restrict__ y, long long cols) {
    using Reduce = cub::BlockReduce<float, BLOCK>;
    __shared__ typename Reduce::TempStorage scratch;
    float total = Reduce(scratch).Sum(strided_sum(x + blockIdx.x * cols, cols, threadIdx.x, BLOCK));
    if (threadIdx.x == 0) y[blockIdx.x] = total;
}

template <typename T, int WARPS>
__global__ void __launch_bounds__(WARPS * 32) warp_row_sum(const T* __restrict__ x, float* __restrict__ y,
                                                           long long rows, long long cols) {
    using Reduce = cub::WarpReduce<float>;
    __shared__ typename Reduce::TempStorage scratch[WARPS];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const long long r = static_cast<long long>(blockIdx.x) * WARPS + warp;
    if (r >= rows) return;                       // the whole warp leaves together
    float total = Reduce(scratch[warp]).Sum(strided_sum(x + r * cols, cols, lane, 32));
    if (lane == 0) y[r] = total;
}

// Short rows of whole 16-byte vectors: a lane's VPL vectors of its row loaded together, then summed
template <typename T, int WARPS, int VPL>
__global__ void __launch_bounds__(WARPS * 32) warp_row_sum_at_once(const T* __restrict__ x, float* __restrict__ y,
                                                                   long long rows, long long cols) {
    constexpr int VEC = sizeof(uint4) / sizeof(T);
    using Reduce = cub::WarpReduce<float>;
    __shared__ typename Reduce::TempStorage scratch[WARPS];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const long long r = static_cast<long long>(blockIdx.x) * WARPS + warp;
    if (r >= rows) return;
    uint4 raw[VPL];
    cub::LoadDirectStriped<32>(lane, reinterpret_cast<const uint4*>(x + r * cols), raw, static_cast<int>(cols / VEC),
                               make_uint4(0, 0, 0, 0));
    float acc = 0.0f;
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
        const T* e = reinterpret_cast<const T*>(&raw[i]);
#pragma unroll
        for (int k = 0; k < VEC; ++k) acc += static_cast<float>(e[k]);
    }
    float total = Reduce(scratch[warp]).Sum(acc);
    if (lane == 0) y[r] = total;
}
"""

BLOCK, WARPS, SHORT_ROW = 512, 8, 1024
VECTOR_BYTES = 16
AT_ONCE = False          # short rows' loads at once: tools/knob_sweep.py nvrtc segreduce
# per GPU kind where its sweep differs: on the H200 the loads at once reach 100.2% of the copy on 2^20 rows
# of 256 float32, the strided loop 86.5 (reports/evidence/h200-tuning/sweeps/nvrtc-segreduce.json)
BY_GPU = {"H200": True}


def kernel_name(case, at_once=AT_ONCE, warps=WARPS):
    t, cols = CXX_TYPE[case.dtype], case.shape["cols"]
    if cols > SHORT_ROW:
        return f"block_row_sum<{t}, {BLOCK}>"
    vec = VECTOR_BYTES // np.dtype(case.dtype).itemsize
    if at_once and cols % vec == 0:
        return f"warp_row_sum_at_once<{t}, {warps}, {-(-cols // (vec * 32))}>"
    return f"warp_row_sum<{t}, {warps}>"


def build(case, inputs, outputs, stream, variant="", at_once=None, warps=WARPS):
    x, y = inputs["x"], outputs["y"]
    if at_once is None:
        at_once = tuned(BY_GPU, AT_ONCE)
    rows, cols = x.shape
    name = kernel_name(case, at_once and x.data.ptr % VECTOR_BYTES == 0, warps)
    kernel = compile_cubin(SOURCE, name, device_arch()).get_kernel(name)
    if cols <= SHORT_ROW:
        config = LaunchConfig(grid=-(-rows // warps), block=warps * 32)
        args = (x.data.ptr, y.data.ptr, np.int64(rows), np.int64(cols))
    else:
        config = LaunchConfig(grid=rows, block=BLOCK)
        args = (x.data.ptr, y.data.ptr, np.int64(cols))

    def run():
        launch(stream, config, kernel, *args)

    return run
