"""z = alpha * x + y in CUDA C++ (NVRTC) over 16-byte vectors (4 floats or 8 halves), computed in
float32. Two shapes of kernel: "stride" is a grid-stride loop over a few blocks per SM; "chunks"
gives each block THREADS x VPT vectors, which each thread loads all at once (VPT loads in flight
before the first use), then computes and stores, with streaming cache hints (the data is touched
once: evict first) or plain loads and stores, a plan's choice. The ragged tail (fewer than one
vector) element by element."""
from typing import NamedTuple

import numpy as np
from cuda.core import LaunchConfig, launch

from backends.gpus import tuned
from backends.nvrtc import CXX_TYPE, compile_cubin, device_arch

SOURCE = r"""
#include <cuda_bf16.h>
#include <cuda_fp16.h>

template <typename T>
__device__ inline uint4 axpy_vector(float alpha, uint4 xv, uint4 yv) {
    constexpr int VEC = sizeof(uint4) / sizeof(T);
    uint4 zv;
    const T* xs = reinterpret_cast<const T*>(&xv);
    const T* ys = reinterpret_cast<const T*>(&yv);
    T* zs = reinterpret_cast<T*>(&zv);
#pragma unroll
    for (int k = 0; k < VEC; ++k) zs[k] = T(alpha * static_cast<float>(xs[k]) + static_cast<float>(ys[k]));
    return zv;
}

template <typename T>
__device__ inline void axpy_tail(const T* x, const T* y, T* z, float alpha, long long from, long long n,
                                 long long first, long long stride) {
    for (long long i = from + first; i < n; i += stride)
        z[i] = T(alpha * static_cast<float>(x[i]) + static_cast<float>(y[i]));
}

template <typename T>
__global__ void axpy(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ z, float alpha, long long n) {
    constexpr int VEC = sizeof(uint4) / sizeof(T);
    const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x, vectors = n / VEC;
#pragma unroll 4
    for (long long v = first; v < vectors; v += stride)
        reinterpret_cast<uint4*>(z)[v] = axpy_vector<T>(alpha, reinterpret_cast<const uint4*>(x)[v],
                                                        reinterpret_cast<const uint4*>(y)[v]);
    axpy_tail(x, y, z, alpha, vectors * VEC, n, first, stride);
}

template <int STREAMING>
__device__ inline uint4 load_vector(const uint4* p) { if constexpr (STREAMING) return __ldcs(p); else return *p; }

template <int STREAMING>
__device__ inline void store_vector(uint4* p, uint4 v) { if constexpr (STREAMING) __stcs(p, v); else *p = v; }

template <typename T, int VPT, int STREAMING>
__global__ void axpy_chunks(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ z, float alpha,
                            long long n) {
    constexpr int VEC = sizeof(uint4) / sizeof(T);
    const long long vectors = n / VEC, base = static_cast<long long>(blockIdx.x) * blockDim.x * VPT + threadIdx.x;
    const uint4* xv = reinterpret_cast<const uint4*>(x);
    const uint4* yv = reinterpret_cast<const uint4*>(y);
    uint4 a[VPT], b[VPT];
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
        const long long v = base + static_cast<long long>(j) * blockDim.x;
        if (v < vectors) { a[j] = load_vector<STREAMING>(xv + v); b[j] = load_vector<STREAMING>(yv + v); }
    }
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
        const long long v = base + static_cast<long long>(j) * blockDim.x;
        if (v < vectors) store_vector<STREAMING>(reinterpret_cast<uint4*>(z) + v, axpy_vector<T>(alpha, a[j], b[j]));
    }
    if (blockIdx.x == 0) axpy_tail(x, y, z, alpha, vectors * VEC, n, threadIdx.x, blockDim.x);
}
"""


class Plan(NamedTuple):
    kind: str           # "stride" (grid-stride loop, `per_sm` blocks an SM) or "chunks" (VPT vectors a thread)
    threads: int = 256
    vpt: int = 4        # chunks: vectors a thread
    per_sm: int = 8     # stride: blocks an SM
    streaming: bool = True   # chunks: evict-first loads and stores (__ldcs / __stcs), else plain ones


# tools/knob_sweep.py on both GPUs: one vector a thread in 128-thread blocks is within 1 point of each
# GPU's best plan for every dtype (% of the copy, fp32 / fp16 / bf16: H100 98.5 / 97.7 / 97.5, best 98.8 /
# 98.3 / 97.6, reports/evidence/hopper-gemm/sweeps/; H200 97.8 / 96.1 / 96.2, best 97.8 / 97.1 / 97.2,
# reports/evidence/h200-tuning/), where the H100's picks (8 vectors a thread) fall to 91.6-93.2 on the H200
BEST = dict.fromkeys(("float32", "float16", "bfloat16"), Plan("chunks", 128, 1))
# the H200 with plain loads and stores: 102.8 / 101.6% of the copy (fp32 / fp16) where the evict-first
# ones give 97.8 / 96.0 (reports/evidence/h200-tuning/sweeps/nvrtc-elementwise.json; bf16 moves fp16's bytes
# with the same loads and stores, and the sweep ran out of time before it)
BY_GPU = {"H200": dict.fromkeys(BEST, Plan("chunks", 128, 1, streaming=False))}


def kernel_name(case, plan=None):
    plan, t = plan or BEST[case.dtype], CXX_TYPE[case.dtype]
    return f"axpy<{t}>" if plan.kind == "stride" else f"axpy_chunks<{t}, {plan.vpt}, {int(plan.streaming)}>"


def build(case, inputs, outputs, stream, variant="", plan=None):
    from cuda.core import Device
    plan = plan or tuned(BY_GPU, BEST)[case.dtype]
    x, y, z = inputs["x"], inputs["y"], outputs["z"]
    n = x.shape[0]
    name = kernel_name(case, plan)
    kernel = compile_cubin(SOURCE, name, device_arch()).get_kernel(name)
    vectors = n // (16 // x.dtype.itemsize)
    if plan.kind == "stride":
        blocks = min(-(-vectors // plan.threads), Device().properties.multiprocessor_count * plan.per_sm)
    else:
        blocks = -(-vectors // (plan.threads * plan.vpt))
    config = LaunchConfig(grid=max(blocks, 1), block=plan.threads)
    args = (x.data.ptr, y.data.ptr, z.data.ptr, np.float32(inputs["alpha"]), np.int64(n))

    def run():
        launch(stream, config, kernel, *args)

    return run
