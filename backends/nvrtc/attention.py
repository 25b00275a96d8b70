"""Attention forward in CUDA C++ (NVRTC), FlashAttention-2's way with mma.sync: a CTA per (block of
16 x WARPS query rows, batch x head), each warp owning 16 query rows whose Q fragments stay in
registers. K and V blocks of BN keys stream through XOR-swizzled shared memory in two cp.async
stages (the next block loads while this one is computed); S = Q K^T by ldmatrix + mma.sync m16n8k16
into float32; an online softmax in registers (row maximum and sum across the four lanes that share a
row, exp2f with scale * log2(e) folded in, the sum reduced once at the end); P rounded to the input
dtype in registers is the A operand of P V as it stands (the m16n8k16 accumulator layout of two
8-key tiles is the A layout of one 16-key step), V read by ldmatrix.trans. Causal CTAs stop after
their diagonal block, mask only where a block crosses it, and run longest first. Any sequence length:
rows beyond S load as zeros (cp.async src-size 0), keys beyond S score -inf, and O is written back
through shared memory in 16-byte rows, those beyond S skipped. Templated on dtype, head_dim (64, 128)
and the causal flag; build() takes knobs `warps` and `block_n`."""
import math

import numpy as np
from cuda.core import LaunchConfig, launch

from backends.nvrtc import CXX_TYPE, allow_shared_memory, compile_cubin, device_arch

SOURCE = r"""
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace attn {

__device__ inline void mma(float* d, const unsigned* a, const unsigned* b, __half) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ inline void mma(float* d, const unsigned* a, const unsigned* b, __nv_bfloat16) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ inline unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
__device__ inline void ldmatrix_x4(unsigned* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ inline void ldmatrix_x4_trans(unsigned* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ inline float neg_inf() { return __int_as_float(0xff800000u); }

// Two floats as one register of the 16-bit type: `lo` in the low half (the lower column of an A operand)
__device__ inline unsigned pack2(float lo, float hi, __half) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&h);
}
__device__ inline unsigned pack2(float lo, float hi, __nv_bfloat16) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&h);
}
__device__ inline void store2(__half* p, float a, float b) { *reinterpret_cast<__half2*>(p) = __floats2half2_rn(a, b); }
__device__ inline void store2(__nv_bfloat16* p, float a, float b) {
    *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
}

// Tiles of D-element rows in shared memory: 16-byte chunk c of row r at chunk c ^ (r % 8), so the 8
// rows one ldmatrix matrix reads (same c, consecutive r) fall in 8 different bank groups.
template <int D>
__device__ inline int swz(int r, int c) { return r * D + ((c ^ (r & 7)) << 3); }

// ROWS rows of D elements from src (rows row0.. of an (S, D) matrix) into a swizzled tile; rows at or
// beyond S are zero-filled (src-size 0; the address given is then the matrix's first row). Thread
// x copies chunk x % CHUNKS of rows x / CHUNKS + i STEP: one base address each side, plus constants.
template <typename T, int D, int ROWS, int THREADS>
__device__ inline void load_tile(T* dst, const T* src, int row0, int S) {
    constexpr int CHUNKS = D / 8, STEP = THREADS / CHUNKS;
    static_assert(THREADS % CHUNKS == 0 && STEP % 8 == 0 && ROWS % STEP == 0, "one swizzle phase per thread");
    const int r = threadIdx.x / CHUNKS, c = threadIdx.x % CHUNKS;
    const T* from = src + (long long)(row0 + r) * D + c * 8;
    const unsigned to = smem_addr(dst + swz<D>(r, c));
#pragma unroll
    for (int i = 0; i < ROWS / STEP; ++i) {
        const bool inside = row0 + r + i * STEP < S;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                     :: "r"(to + i * STEP * D * (int)sizeof(T)), "l"(inside ? from + i * STEP * D : src),
                        "r"(inside ? 16 : 0));
    }
}

// Q, K, V, O: (batch x head, S, D) contiguous. Grid (ceil(S / BM), batch x head), WARPS x 32 threads;
// dynamic shared memory (BM + 4 BN) D elements: Q (then O), two stages of K, two of V.
template <typename T, int D, bool CAUSAL, int WARPS, int BN>
__global__ void __launch_bounds__(WARPS * 32)
attention_fwd(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V, T* __restrict__ O,
              int S, float scale_log2) {
    constexpr int BM = 16 * WARPS, THREADS = 32 * WARPS, CHUNKS = D / 8;
    static_assert(D % 64 == 0, "the swizzle needs rows of a multiple of 8 chunks");
    static_assert(BN % 16 == 0, "keys go 16 at a time through the second product");
    extern __shared__ __align__(128) unsigned char smem[];
    T* sQ = reinterpret_cast<T*>(smem);                  // BM x D: Q, then this CTA's O
    T* sK = sQ + BM * D;                                 // 2 stages x BN x D
    T* sV = sK + 2 * BN * D;                             // 2 stages x BN x D
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int m0 = (CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x) * BM;   // causal: longest CTAs first
    const long long head = (long long)blockIdx.y * S * D;
    Q += head; K += head; V += head; O += head;

    const int keys = CAUSAL ? min(S, m0 + BM) : S;       // keys [0, keys) reach some row of this block
    const int n_blocks = (keys + BN - 1) / BN;            // >= 1: m0 < S

    load_tile<T, D, BM, THREADS>(sQ, Q, m0, S);
    load_tile<T, D, BN, THREADS>(sK, K, 0, S);
    load_tile<T, D, BN, THREADS>(sV, V, 0, S);
    asm volatile("cp.async.commit_group;");
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();

    // A fragments of this warp's 16 rows of Q, one per 16 columns: rows lane % 16, chunk 2 kk + lane / 16
    // (matrices: rows 0-7 / 8-15 x columns 0-7, then the same x columns 8-15 = registers a0..a3)
    unsigned qf[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) ldmatrix_x4(qf[kk], sQ + swz<D>(warp * 16 + (lane & 15), 2 * kk + (lane >> 4)));

    float o[D / 8][4];                                   // O accumulator: 16 rows x D, 8 columns a tile
#pragma unroll
    for (int d = 0; d < D / 8; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
    // rows g and g + 8 of the warp's 16: the running maximum of raw scores, and this lane's part of the sum
    float row_max[2] = {neg_inf(), neg_inf()}, row_sum[2] = {0.0f, 0.0f};
    const int row0 = m0 + warp * 16 + g;

    for (int nb = 0; nb < n_blocks; ++nb) {
        const int stage = nb & 1, n0 = nb * BN;
        if (nb > 0) {
            asm volatile("cp.async.wait_group 0;" ::: "memory");   // block nb landed (this thread's copies)
            __syncthreads();                                       // ... everyone's; stage ^ 1 is read
        }
        if (nb + 1 < n_blocks) {
            load_tile<T, D, BN, THREADS>(sK + (stage ^ 1) * BN * D, K, n0 + BN, S);
            load_tile<T, D, BN, THREADS>(sV + (stage ^ 1) * BN * D, V, n0 + BN, S);
        }
        asm volatile("cp.async.commit_group;");
        const T* ks = sK + stage * BN * D;
        const T* vs = sV + stage * BN * D;

        // S = Q K^T: 16 rows x BN keys, tile j = keys 8j..8j+7. K is row-major (key, dim), which is the
        // "col" B operand: ldmatrix (no transpose) of keys 16j + lane % 8 (+ 8 for lanes 16-31), chunk
        // 2 kk (+ 1 for lanes 8-15, 24-31): registers 0, 1 are tile 2j's b0, b1; 2, 3 tile 2j + 1's.
        float s[BN / 8][4];
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
            for (int j = 0; j < BN / 16; ++j) {
                unsigned kf[4];
                ldmatrix_x4(kf, ks + swz<D>(16 * j + (lane & 7) + ((lane >> 4) << 3), 2 * kk + ((lane >> 3) & 1)));
                mma(s[2 * j], qf[kk], kf, T());
                mma(s[2 * j + 1], qf[kk], kf + 2, T());
            }

        // s[j][e]: row row0 + 8 (e / 2), key n0 + 8 j + 2 t + e % 2. Keys beyond S, and causal keys past
        // the row, score -inf; only blocks holding such keys look.
        if (n0 + BN > S || (CAUSAL && n0 + BN - 1 > m0 + warp * 16)) {
#pragma unroll
            for (int j = 0; j < BN / 8; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int key = n0 + 8 * j + 2 * t + (e & 1), row = row0 + 8 * (e >> 1);
                    if (key >= S || (CAUSAL && key > row)) s[j][e] = neg_inf();
                }
        }

        // online softmax: the four lanes of a quad (same g) hold a row between them
        float mx[2] = {row_max[0], row_max[1]};
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            mx[0] = fmaxf(mx[0], fmaxf(s[j][0], s[j][1]));
            mx[1] = fmaxf(mx[1], fmaxf(s[j][2], s[j][3]));
        }
        float shift[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
            mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
            shift[h] = mx[h] == neg_inf() ? 0.0f : mx[h] * scale_log2;        // a row masked whole: p = 0
            const float alpha = exp2f(row_max[h] * scale_log2 - shift[h]);   // first block: exp2(-inf) = 0
            row_max[h] = mx[h];
            row_sum[h] *= alpha;
#pragma unroll
            for (int d = 0; d < D / 8; ++d) { o[d][2 * h] *= alpha; o[d][2 * h + 1] *= alpha; }
        }
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                s[j][e] = exp2f(fmaf(s[j][e], scale_log2, -shift[e >> 1]));
                row_sum[e >> 1] += s[j][e];
            }

        // O += P V, 16 keys a step. P's A fragment for keys 16 kk..: a0 = (row g, keys 2t, 2t+1) and
        // a1 = (row g+8, same keys) are tile 2kk's c0 c1 and c2 c3; a2, a3 the same of tile 2kk + 1.
        // V is row-major (key, dim): ldmatrix.trans of keys 16 kk + lane % 16, chunk 2 d + lane / 16
        // gives b0, b1 of dims 16d..16d+7 in registers 0, 1 and of dims 16d+8.. in registers 2, 3.
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
            const unsigned pf[4] = {pack2(s[2 * kk][0], s[2 * kk][1], T()), pack2(s[2 * kk][2], s[2 * kk][3], T()),
                                    pack2(s[2 * kk + 1][0], s[2 * kk + 1][1], T()),
                                    pack2(s[2 * kk + 1][2], s[2 * kk + 1][3], T())};
#pragma unroll
            for (int d = 0; d < D / 16; ++d) {
                unsigned vf[4];
                ldmatrix_x4_trans(vf, vs + swz<D>(16 * kk + (lane & 15), 2 * d + (lane >> 4)));
                mma(o[2 * d], pf, vf, T());
                mma(o[2 * d + 1], pf, vf + 2, T());
            }
        }
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");   // (the last group is empty)

    // O / l, through this warp's own 16 rows of sQ (only this warp read them), out in 16-byte chunks
    T* so = sQ + warp * 16 * D;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 1);
        row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 2);
        const float inv = 1.0f / row_sum[h];              // about 1 at least: the row's maximum key
#pragma unroll
        for (int d = 0; d < D / 8; ++d)
            store2(so + swz<D>(g + 8 * h, d) + 2 * t, o[d][2 * h] * inv, o[d][2 * h + 1] * inv);
    }
    __syncwarp();
#pragma unroll
    for (int k = 0; k < 16 * CHUNKS / 32; ++k) {
        const int i = 32 * k + lane;
        const int r = i / CHUNKS, c = i % CHUNKS, row = m0 + warp * 16 + r;
        if (row < S) {
            const uint4 chunk = *reinterpret_cast<const uint4*>(so + swz<D>(r, c));
            *reinterpret_cast<uint4*>(O + (long long)row * D + c * 8) = chunk;
        }
    }
}
}  // namespace attn
"""

LOG2E = 1.4426950408889634
WARPS, BLOCK_N = 4, 64        # 64 query rows (16 a warp) x 64 keys a block; knobs `warps`, `block_n`
HEAD_DIMS = (64, 128)


def supports(case, variant=""):
    if case.shape["D"] not in HEAD_DIMS:
        return f"the kernel is instantiated for head_dim {' and '.join(map(str, HEAD_DIMS))}"
    return None


def kernel_name(case, warps=WARPS, block_n=BLOCK_N):
    causal = str(bool(case.shape["causal"])).lower()
    return f"attn::attention_fwd<{CXX_TYPE[case.dtype]}, {case.shape['D']}, {causal}, {warps}, {block_n}>"


def smem_bytes(d, warps=WARPS, block_n=BLOCK_N, itemsize=2):
    return (16 * warps + 4 * block_n) * d * itemsize


def build(case, inputs, outputs, stream, variant="", warps=WARPS, block_n=BLOCK_N):
    q, k, v, o = inputs["q"], inputs["k"], inputs["v"], outputs["o"]
    b, h, s, d = q.shape
    name = kernel_name(case, warps, block_n)
    kernel = compile_cubin(SOURCE, name, device_arch()).get_kernel(name)
    smem = smem_bytes(d, warps, block_n, q.dtype.itemsize)
    allow_shared_memory(kernel, smem)
    config = LaunchConfig(grid=(-(-s // (16 * warps)), b * h), block=32 * warps, shmem_size=smem)
    args = (q.data.ptr, k.data.ptr, v.data.ptr, o.data.ptr, np.int32(s), np.float32(LOG2E / math.sqrt(d)))

    def run():
        launch(stream, config, kernel, *args)

    return run
