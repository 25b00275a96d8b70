"""Attention forward in CUDA C++ (NVRTC), FlashAttention-2's way with mma.sync: a CTA per (block of BM
query rows, batch x head), each of its WARPS warps owning BM / WARPS = 32 rows as two 16-row tiles, so
each K and V fragment read from shared memory feeds both (per 64 keys of head_dim 128 a warp reads 40
KB of Q, K and V for 1 MFLOP, where 16-row warps read 32 KB for half of it). Q stays in shared memory
and is re-read per 16 columns (no room for it in registers beside O and S); K and V blocks of BN keys
stream through XOR-swizzled shared memory in two cp.async stages (the next block loads while this one
is computed); S = Q K^T by ldmatrix + mma.sync m16n8k16 into float32; an online softmax in registers
(row maximum and sum across the four lanes that share a row, ex2.approx with scale * log2(e) folded
in, the sum reduced once at the end) whose reference maximum moves only when a row's maximum passes it
by more than 2^8, so O is rescaled only in those blocks (FlashAttention-4's lazy rescaling); P rounded
to the input dtype in registers is the A operand of P V as it stands (the m16n8k16 accumulator layout
of two 8-key tiles is the A layout of one 16-key step), V read by ldmatrix.trans. Causal CTAs stop
after their diagonal block, mask only where a block crosses it (a warp skips a block past its rows),
and run longest first. Any sequence length: rows beyond S load as zeros (cp.async src-size 0, tiles
inside S copied without checks), keys beyond S score -inf, and O is written back through shared
memory in 16-byte rows, those beyond S skipped. Templated on dtype, head_dim (64, 128), the causal
flag and the tiles; build() takes knobs `warps`, `block_m`, `block_n`, `q_regs`."""
import math

import numpy as np
from cuda.core import LaunchConfig, launch

from backends.nvrtc import CXX_TYPE, allow_shared_memory, compile_cubin, device_arch
from backends.nvrtc._ptx import MMA_SYNC

SOURCE = r"""
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace attn {

""" + MMA_SYNC + r"""__device__ inline float neg_inf() { return __int_as_float(0xff800000u); }
constexpr float RESCALE = 8.0f;     // log2 of how far P may pass 1 before a row's maximum moves
// 2^x by the special-function unit alone (MUFU.EX2; FlashAttention's exp2f under fast math): exp2(-inf)
// = 0, and results under 2^-126 flush to 0, each far less than P's own rounding to 16 bits loses
__device__ inline float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

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
// rows one ldmatrix matrix reads (same c, consecutive r) fall in 8 different bank groups. Since XOR is
// linear, swz(r, c ^ x) = swz(r, c) ^ 8 x for x < D / 8, and swz(r + 8 y, c) = swz(r, c) + 8 y D: each
// lane's ldmatrix offsets are one swizzled offset, XORed with the column step and plus the row step.
template <int D>
__device__ inline int swz(int r, int c) { return r * D + ((c ^ (r & 7)) << 3); }

__device__ inline void cp_async16(unsigned to, const void* from, int bytes) {   // bytes < 16: zero-filled
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(to), "l"(from), "r"(bytes));
}

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
    if (row0 + ROWS <= S) {                               // the whole tile inside: no row checks
#pragma unroll
        for (int i = 0; i < ROWS / STEP; ++i) cp_async16(to + i * STEP * D * (int)sizeof(T), from + i * STEP * D, 16);
    } else {
#pragma unroll
        for (int i = 0; i < ROWS / STEP; ++i) {
            const bool inside = row0 + r + i * STEP < S;
            cp_async16(to + i * STEP * D * (int)sizeof(T), inside ? from + i * STEP * D : src, inside ? 16 : 0);
        }
    }
}

// Q, K, V, O: (batch x head, S, D) contiguous. Grid (ceil(S / BM), batch x head), WARPS x 32 threads,
// warp w owning query rows w WR.. w WR + WR - 1 of the block as MT tiles of 16, so each K and V fragment
// read from shared memory feeds MT mma.sync. QREG: Q's A fragments kept in registers all along, else
// re-read from shared memory per 16 columns (FlashAttention-2's way where registers run short).
// Dynamic shared memory (BM + 4 BN) D elements: Q (then O), two stages of K, two of V.
template <typename T, int D, bool CAUSAL, int WARPS, int BM, int BN, bool QREG>
__global__ void __launch_bounds__(WARPS * 32)
attention_fwd(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V, T* __restrict__ O,
              int S, float scale_log2) {
    constexpr int THREADS = 32 * WARPS, CHUNKS = D / 8, WR = BM / WARPS, MT = WR / 16;
    static_assert(D % 64 == 0, "the swizzle needs rows of a multiple of 8 chunks");
    static_assert(BN % 16 == 0, "keys go 16 at a time through the second product");
    static_assert(BM % (16 * WARPS) == 0, "whole 16-row tiles a warp");
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

    // A fragments of Q's columns 16 kk.., tile mi: rows lane % 16 of the tile, chunk 2 kk + lane / 16
    // (matrices: rows 0-7 / 8-15 x columns 0-7, then the same x columns 8-15 = registers a0..a3)
    // (lane offsets: swz(r, 2 kk + c) = swz(r, c) ^ 16 kk, and tile mi is 16 mi D further; the same for K, V)
    const int q_lane = swz<D>(warp * WR + (lane & 15), lane >> 4);
    unsigned qf[QREG ? D / 16 : 1][MT][4];
    auto load_q = [&](int kk) {
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) ldmatrix_x4(qf[QREG ? kk : 0][mi], sQ + (q_lane ^ 16 * kk) + 16 * mi * D);
    };
    if constexpr (QREG) {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) load_q(kk);
    }

    float o[MT][D / 8][4];                               // O accumulator: tile mi's 16 rows x D, 8 columns a tile
#pragma unroll
    for (int mi = 0; mi < MT; ++mi)
#pragma unroll
        for (int d = 0; d < D / 8; ++d) o[mi][d][0] = o[mi][d][1] = o[mi][d][2] = o[mi][d][3] = 0.0f;
    // rows g and g + 8 of each tile: the running maximum of raw scores, and this lane's part of the sum
    float row_max[MT][2], row_sum[MT][2];
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) row_max[mi][0] = row_max[mi][1] = neg_inf(), row_sum[mi][0] = row_sum[mi][1] = 0.0f;
    const int row0 = m0 + warp * WR + g;
    const int k_lane = swz<D>((lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1);
    const int v_lane = swz<D>(lane & 15, lane >> 4);

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
        // causal: a block whose first key is past this warp's last row is masked whole for it (the CTA's
        // last block, where BN < BM): the warp skips it, its copies and barriers kept
        if (CAUSAL && n0 > m0 + warp * WR + WR - 1) continue;
        const T* ks = sK + stage * BN * D;
        const T* vs = sV + stage * BN * D;

        // S = Q K^T: tile mi's 16 rows x BN keys, tile j = keys 8j..8j+7. K is row-major (key, dim), which
        // is the "col" B operand: ldmatrix (no transpose) of keys 16j + lane % 8 (+ 8 for lanes 16-31),
        // chunk 2 kk (+ 1 for lanes 8-15, 24-31): registers 0, 1 are tile 2j's b0, b1; 2, 3 tile 2j + 1's.
        float s[MT][BN / 8][4];
#pragma unroll
        for (int mi = 0; mi < MT; ++mi)
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) s[mi][j][0] = s[mi][j][1] = s[mi][j][2] = s[mi][j][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            if constexpr (!QREG) load_q(kk);
#pragma unroll
            for (int j = 0; j < BN / 16; ++j) {
                unsigned kf[4];
                ldmatrix_x4(kf, ks + (k_lane ^ 16 * kk) + 16 * j * D);
#pragma unroll
                for (int mi = 0; mi < MT; ++mi) {
                    mma(s[mi][2 * j], qf[QREG ? kk : 0][mi], kf, T());
                    mma(s[mi][2 * j + 1], qf[QREG ? kk : 0][mi], kf + 2, T());
                }
            }
        }

        // s[mi][j][e]: row row0 + 16 mi + 8 (e / 2), key n0 + 8 j + 2 t + e % 2. Keys beyond S, and causal
        // keys past the row, score -inf; only blocks holding such keys look.
        if (n0 + BN > S || (CAUSAL && n0 + BN - 1 > m0 + warp * WR)) {
#pragma unroll
            for (int mi = 0; mi < MT; ++mi)
#pragma unroll
                for (int j = 0; j < BN / 8; ++j)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int key = n0 + 8 * j + 2 * t + (e & 1), row = row0 + 16 * mi + 8 * (e >> 1);
                        if (key >= S || (CAUSAL && key > row)) s[mi][j][e] = neg_inf();
                    }
        }

        // online softmax: the four lanes of a quad (same g) hold a row between them. Each row's reference
        // maximum moves only when the block's maximum passes it by more than 2^RESCALE (FlashAttention-4's
        // lazy rescaling): P then stays under 2^RESCALE, and O and the sum are rescaled only in the blocks
        // where some row of the warp needs it (a warp-uniform branch; always the first block)
        float mx[MT][2];
        bool grow = false;
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) {
            mx[mi][0] = row_max[mi][0], mx[mi][1] = row_max[mi][1];
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
                mx[mi][0] = fmaxf(mx[mi][0], fmaxf(s[mi][j][0], s[mi][j][1]));
                mx[mi][1] = fmaxf(mx[mi][1], fmaxf(s[mi][j][2], s[mi][j][3]));
            }
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                mx[mi][h] = fmaxf(mx[mi][h], __shfl_xor_sync(0xffffffffu, mx[mi][h], 1));
                mx[mi][h] = fmaxf(mx[mi][h], __shfl_xor_sync(0xffffffffu, mx[mi][h], 2));
                grow |= mx[mi][h] * scale_log2 > row_max[mi][h] * scale_log2 + RESCALE;   // first block: > -inf
            }
        }
        if (__any_sync(0xffffffffu, grow)) {
#pragma unroll
            for (int mi = 0; mi < MT; ++mi)
#pragma unroll
                for (int h = 0; h < 2; ++h) {          // mx >= row_max: alpha <= 1 (first block: exp2(-inf) = 0)
                    const float shift = mx[mi][h] == neg_inf() ? 0.0f : mx[mi][h] * scale_log2;   // masked whole
                    const float alpha = exp2_approx(row_max[mi][h] * scale_log2 - shift);
                    row_max[mi][h] = mx[mi][h];
                    row_sum[mi][h] *= alpha;
#pragma unroll
                    for (int d = 0; d < D / 8; ++d) { o[mi][d][2 * h] *= alpha; o[mi][d][2 * h + 1] *= alpha; }
                }
        }
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) {
            float shift[2], sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};   // this block's part of the sums, e = 0..3 apart
#pragma unroll
            for (int h = 0; h < 2; ++h) shift[h] = row_max[mi][h] == neg_inf() ? 0.0f : row_max[mi][h] * scale_log2;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) {          // a row masked whole so far: exp2(-inf - 0) = 0
                    s[mi][j][e] = exp2_approx(fmaf(s[mi][j][e], scale_log2, -shift[e >> 1]));
                    sum[e] += s[mi][j][e];
                }
#pragma unroll
            for (int h = 0; h < 2; ++h) row_sum[mi][h] += sum[2 * h] + sum[2 * h + 1];
        }

        // O += P V, 16 keys a step. P rounded to T is the A operand as it stands: a0 = (row g, keys 2t,
        // 2t+1) and a1 = (row g+8, same keys) are tile 2kk's c0 c1 and c2 c3; a2, a3 the same of tile
        // 2kk + 1 (the m16n8k16 accumulator layout of two 8-key tiles is the A layout of one 16-key step).
        // V is row-major (key, dim): ldmatrix.trans of keys 16 kk + lane % 16, chunk 2 d + lane / 16 gives
        // b0, b1 of dims 16d..16d+7 in registers 0, 1 and of dims 16d+8.. in registers 2, 3.
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
            unsigned pf[MT][4];
#pragma unroll
            for (int mi = 0; mi < MT; ++mi) {
                pf[mi][0] = pack2(s[mi][2 * kk][0], s[mi][2 * kk][1], T());
                pf[mi][1] = pack2(s[mi][2 * kk][2], s[mi][2 * kk][3], T());
                pf[mi][2] = pack2(s[mi][2 * kk + 1][0], s[mi][2 * kk + 1][1], T());
                pf[mi][3] = pack2(s[mi][2 * kk + 1][2], s[mi][2 * kk + 1][3], T());
            }
#pragma unroll
            for (int d = 0; d < D / 16; ++d) {
                unsigned vf[4];
                ldmatrix_x4_trans(vf, vs + (v_lane ^ 16 * d) + 16 * kk * D);
#pragma unroll
                for (int mi = 0; mi < MT; ++mi) {
                    mma(o[mi][2 * d], pf[mi], vf, T());
                    mma(o[mi][2 * d + 1], pf[mi], vf + 2, T());
                }
            }
        }
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");   // (the last group is empty)

    // O / l, through this warp's own WR rows of sQ (only this warp read them), out in 16-byte chunks
    T* so = sQ + warp * WR * D;
#pragma unroll
    for (int mi = 0; mi < MT; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float sum = row_sum[mi][h];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const float inv = __fdividef(1.0f, sum);       // sum >= 1: the row's maximum key
#pragma unroll
            for (int d = 0; d < D / 8; ++d)
                store2(so + swz<D>(16 * mi + g + 8 * h, d) + 2 * t, o[mi][d][2 * h] * inv, o[mi][d][2 * h + 1] * inv);
        }
    __syncwarp();
#pragma unroll
    for (int k = 0; k < WR * CHUNKS / 32; ++k) {
        const int i = 32 * k + lane;
        const int r = i / CHUNKS, c = i % CHUNKS, row = m0 + warp * WR + r;
        if (row < S) {
            const uint4 chunk = *reinterpret_cast<const uint4*>(so + swz<D>(r, c));
            *reinterpret_cast<uint4*>(O + (long long)row * D + c * 8) = chunk;
        }
    }
}
}  // namespace attn
"""

LOG2E = 1.4426950408889634
HEAD_DIMS = (64, 128)
# per head_dim, FlashAttention-2's forward tiles for sm80/sm90 (run_mha_fwd_hdim64 / _hdim128): 4 warps
# of 32 query rows (128 a CTA); 128 keys a block for head_dim 64, 64 for 128 (S for 128 keys beside O's
# 128 accumulator registers would not fit in 255); Q re-read from shared memory. Each instance takes
# 253-255 registers without spills and 80 / 96 KB of shared memory: two CTAs an SM.
CONFIG = {64: {"warps": 4, "block_m": 128, "block_n": 128, "q_regs": False},
          128: {"warps": 4, "block_m": 128, "block_n": 64, "q_regs": False}}


def supports(case, variant=""):
    if case.shape["D"] not in HEAD_DIMS:
        return f"the kernel is instantiated for head_dim {' and '.join(map(str, HEAD_DIMS))}"
    return None


def knobs(d, **given):
    return {**CONFIG[d], **{k: v for k, v in given.items() if v is not None}}


def kernel_name(case, warps=None, block_m=None, block_n=None, q_regs=None):
    k = knobs(case.shape["D"], warps=warps, block_m=block_m, block_n=block_n, q_regs=q_regs)
    causal = str(bool(case.shape["causal"])).lower()
    return (f"attn::attention_fwd<{CXX_TYPE[case.dtype]}, {case.shape['D']}, {causal}, {k['warps']}, "
            f"{k['block_m']}, {k['block_n']}, {str(bool(k['q_regs'])).lower()}>")


def smem_bytes(d, block_m, block_n, itemsize=2):
    return (block_m + 4 * block_n) * d * itemsize


def build(case, inputs, outputs, stream, variant="", warps=None, block_m=None, block_n=None, q_regs=None):
    q, k, v, o = inputs["q"], inputs["k"], inputs["v"], outputs["o"]
    b, h, s, d = q.shape
    kn = knobs(d, warps=warps, block_m=block_m, block_n=block_n, q_regs=q_regs)
    name = kernel_name(case, **kn)
    kernel = compile_cubin(SOURCE, name, device_arch()).get_kernel(name)
    smem = smem_bytes(d, kn["block_m"], kn["block_n"], q.dtype.itemsize)
    allow_shared_memory(kernel, smem)
    config = LaunchConfig(grid=(-(-s // kn["block_m"]), b * h), block=32 * kn["warps"], shmem_size=smem)
    args = (q.data.ptr, k.data.ptr, v.data.ptr, o.data.ptr, np.int32(s), np.float32(LOG2E / math.sqrt(d)))

    def run():
        launch(stream, config, kernel, *args)

    return run
