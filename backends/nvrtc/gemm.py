"""C = A @ B in CUDA C++ (NVRTC) the Hopper way, sm_90a: a 128x256x64 block tile; warpgroup 0 is
the producer (one thread issues TMA loads with 128-byte swizzle into a 4-stage ring guarded by
full/empty mbarriers; the warpgroup gives registers back with setmaxnreg), warpgroups 1 and 2 are
consumers (64 rows each, wgmma.mma_async m64n256k16 straight from shared memory, 128 float32
accumulators a thread, A K-major, B N-major via the transpose bit). Persistent: one CTA per SM walks
the output tiles in grouped (GROUP_M) order, so the producer prefetches the next tile while the
consumers store the last one from registers (guarded stores). TMA zero-fills rows and columns
beyond M, N and K. TMA needs 16-byte row pitches (K and N multiples of 8); those shapes, and
matrices smaller than one TMA box, take the mma.sync kernel (_mma_sync_gemm.py).

Variant "cutlass": the same GEMM from CUTLASS's C++ templates (_gemm_cutlass.py).

The tensor maps are cuda.core TensorMapDescriptors (StridedMemoryView.as_tensor_map), which
`launch` passes by value: the kernel takes them as `const __grid_constant__` parameters."""
import numpy as np
from cuda.core import LaunchConfig, launch

from backends.nvrtc import CXX_TYPE, allow_shared_memory, compile_cubin, device_arch
from backends.nvrtc import _mma_sync_gemm as ampere

_ACC = ", ".join(f"%{i}" for i in range(128))
_OPS = ", ".join(f'"+f"(d[{i}])' for i in range(128))

HOPPER_SOURCE = r"""
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace hopper {
constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, GROUP_M = 8, THREADS = 384;
constexpr int A_BYTES = BM * BK * 2, B_BOX_BYTES = BK * 64 * 2, STAGE_BYTES = A_BYTES + BN / 64 * B_BOX_BYTES;

struct alignas(64) TMap { unsigned long long opaque[16]; };            // layout of CUtensorMap


__device__ inline unsigned smem_u32(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
__device__ inline void bar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ inline void bar_wait(unsigned bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
__device__ inline void bar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
__device__ inline void bar_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
// 2-D TMA tile load: box at (c0 = innermost coordinate, c1 = row) into shared memory, completes tx on bar
__device__ inline void tma_load(unsigned dst, const void* map, int c0, int c1, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}

// wgmma shared-memory matrix descriptor, 128-byte swizzle: start, leading / stride byte offsets (>> 4)
__device__ inline unsigned long long smem_desc(unsigned addr, unsigned lbo, unsigned sbo) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (unsigned long long)(lbo >> 4) << 16
         | (unsigned long long)(sbo >> 4) << 32 | 1ull << 62;
}
// D(64x256, f32) (+)= A(64x16, K-major) * B(16x256, N-major: imm-trans-b = 1); scale_d = 0 overwrites D
#define WGMMA(TY) asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                  \
    "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " {@ACC@}, %128, %129, p, 1, 1, 0, 1;\n}\n"    \
    : @OPS@ : "l"(da), "l"(db), "r"(scale_d))
typedef unsigned long long u64;
__device__ inline void wgmma(float* d, u64 da, u64 db, int scale_d, __half) { WGMMA("f16"); }
__device__ inline void wgmma(float* d, u64 da, u64 db, int scale_d, __nv_bfloat16) { WGMMA("bf16"); }

__device__ inline void store2(__half* p, float a, float b) { *reinterpret_cast<__half2*>(p) = __floats2half2_rn(a, b); }
__device__ inline void store2(__nv_bfloat16* p, float a, float b) {
    *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
}

__device__ inline void tile_origin(int tile, int tiles_m, int tiles_n, int& m0, int& n0) {   // grouped order
    const int first_m = tile / (GROUP_M * tiles_n) * GROUP_M, size_m = min(tiles_m - first_m, GROUP_M);
    m0 = (first_m + tile % size_m) * BM;
    n0 = (tile % (GROUP_M * tiles_n)) / size_m * BN;
}

// map_a: A (M x K) in boxes of 128 rows x 64 columns; map_b: B (K x N) in boxes of 64 rows x 64 columns.
template <typename T>
__global__ void __launch_bounds__(THREADS, 1)
gemm_tma(const __grid_constant__ TMap map_a, const __grid_constant__ TMap map_b, T* __restrict__ C,
         int M, int N, int K) {
    extern __shared__ unsigned char smem[];
    const unsigned base = (smem_u32(smem) + 1023) & ~1023u;     // swizzle atoms are 8 rows x 128 B = 1024 B
    const unsigned full = base + STAGES * STAGE_BYTES, empty = full + 8 * STAGES;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
    const int k_tiles = (K + BK - 1) / BK;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            bar_init(full + 8 * s, 1);          // the producer's arrive.expect_tx (+ the TMA bytes)
            bar_init(empty + 8 * s, 8);         // one arrive per consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {                                                   // producer warpgroup
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (tid != 0) return;
        asm volatile("prefetch.tensormap [%0];" :: "l"(&map_a) : "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"(&map_b) : "memory");
        int s = 0;
        unsigned phase = 0;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int m0, n0;
            tile_origin(tile, tiles_m, tiles_n, m0, n0);
            for (int kt = 0; kt < k_tiles; ++kt) {
                bar_wait(empty + 8 * s, phase ^ 1);                  // passes at once on a fresh barrier
                const unsigned stage = base + s * STAGE_BYTES, bar = full + 8 * s;
                bar_expect_tx(bar, STAGE_BYTES);                     // out-of-bounds parts count too (zero-filled)
                tma_load(stage, &map_a, kt * BK, m0, bar);
#pragma unroll
                for (int j = 0; j < BN / 64; ++j)
                    tma_load(stage + A_BYTES + j * B_BOX_BYTES, &map_b, n0 + 64 * j, kt * BK, bar);
                if (++s == STAGES) { s = 0; phase ^= 1; }
            }
        }
    } else {                                                         // consumer warpgroups 1, 2
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int c = wg - 1, warp = tid / 32, lane = tid % 32;
        float d[128];
        int s = 0;
        unsigned phase = 0;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int m0, n0;
            tile_origin(tile, tiles_m, tiles_n, m0, n0);
            int prev = -1;
            for (int kt = 0; kt < k_tiles; ++kt) {
                bar_wait(full + 8 * s, phase);
                const unsigned a = base + s * STAGE_BYTES + c * (64 * BK * 2), b = base + s * STAGE_BYTES + A_BYTES;
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)                 // K-major A: +32 B; N-major B: +16 rows
                    wgmma(d, smem_desc(a + 32 * kk, 16, 1024), smem_desc(b + 2048 * kk, B_BOX_BYTES, 1024),
                          kt > 0 || kk > 0, T());
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");   // the previous stage is read
                if (prev >= 0 && lane == 0) bar_arrive(empty + 8 * prev);
                prev = s;
                if (++s == STAGES) { s = 0; phase ^= 1; }
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            if (prev >= 0 && lane == 0) bar_arrive(empty + 8 * prev);
            if (k_tiles == 0)
#pragma unroll
                for (int i = 0; i < 128; ++i) d[i] = 0.0f;
            // d[4j + {0,1}]: row 16 warp + lane / 4, columns 8j + 2 (lane % 4) + {0,1}; d[4j + {2,3}]: row + 8
            const int row = m0 + 64 * c + 16 * warp + lane / 4;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
                const int col = n0 + 8 * j + 2 * (lane % 4);         // N is even: col < N covers col + 1
                if (col >= N) continue;
                if (row < M) store2(C + (long long)row * N + col, d[4 * j], d[4 * j + 1]);
                if (row + 8 < M) store2(C + (long long)(row + 8) * N + col, d[4 * j + 2], d[4 * j + 3]);
            }
        }
    }
}
}  // namespace hopper
""".replace("@ACC@", _ACC).replace("@OPS@", _OPS)
SOURCE = ampere.SOURCE + HOPPER_SOURCE      # both kernels: kernel_name(case) picks one

BM, BN, BK, STAGES, THREADS = 128, 256, 64, 4, 384
SMEM_BYTES = STAGES * (BM * BK + BK * BN) * 2 + 1024 + 16 * STAGES    # + 1024-byte alignment slack + mbarriers


def supports(case, variant=""):
    if variant == "cutlass":       # its restrictions (TMA pitches, no float32) are its own
        from backends.nvrtc import _gemm_cutlass
        return _gemm_cutlass.supports(case)
    return ampere.supports(case)


def _hopper(case):
    """TMA needs 16-byte row pitches: K and N multiples of 8 (cupy allocations are 256-byte aligned);
    matrices smaller than one TMA box (M < 128, K < 64, N < 64) take the mma.sync kernel too."""
    s = case.shape
    return s["K"] % 8 == 0 and s["N"] % 8 == 0 and s["M"] >= BM and s["K"] >= BK and s["N"] >= 64


def kernel_name(case):
    if not _hopper(case):
        return ampere.kernel_name(case)
    return f"hopper::gemm_tma<{CXX_TYPE[case.dtype]}>"


def tensor_maps(a, b):
    """A in boxes of BM x BK, B in boxes of BK x 64 (128-byte rows: the swizzle's width)."""
    from cuda.core._tensor_map import TensorMapL2Promotion, TensorMapSwizzle   # enums not re-exported
    from cuda.core.utils import StridedMemoryView

    def tmap(x, box):       # box in row-major order (rows, columns); dtype inferred (uint16 / float16)
        view = StridedMemoryView.from_any_interface(x, stream_ptr=-1)
        return view.as_tensor_map(box_dim=box, swizzle=TensorMapSwizzle.SWIZZLE_128B,
                                  l2_promotion=TensorMapL2Promotion.L2_256B)
    return tmap(a, (BM, BK)), tmap(b, (BK, 64))


def build(case, inputs, outputs, stream, variant="", **knobs):
    if variant == "cutlass":            # CUTLASS's own kernel, instantiated from its C++ templates (knob: config)
        from backends.nvrtc import _gemm_cutlass
        return _gemm_cutlass.build(case, inputs, outputs, stream, **knobs)
    if knobs:
        raise TypeError(f"nvrtc gemm takes no knobs, got {sorted(knobs)}")
    if not _hopper(case):
        return ampere.build(case, inputs, outputs, stream)
    from cuda.core import Device
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    (m, k), n = a.shape, b.shape[1]
    if device_arch() != "sm_90":
        raise RuntimeError(f"wgmma/setmaxnreg need sm_90a, device is {device_arch()}")
    name = kernel_name(case)
    kernel = compile_cubin(SOURCE, name, "sm_90a").get_kernel(name)
    dev = Device()
    allow_shared_memory(kernel, SMEM_BYTES)
    maps = tensor_maps(a, b)
    tiles = -(-m // BM) * -(-n // BN)
    config = LaunchConfig(grid=max(1, min(tiles, dev.properties.multiprocessor_count)), block=THREADS,
                          shmem_size=SMEM_BYTES)     # persistent: at most one CTA per SM
    args = (*maps, c.data.ptr, np.int32(m), np.int32(n), np.int32(k))

    def run():
        launch(stream, config, kernel, *args)

    return run
