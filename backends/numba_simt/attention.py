"""Attention forward in numba-cuda SIMT, FlashAttention's blocking on plain CUDA cores (no tensor cores):
O = softmax(Q K^T / sqrt(D)) V, causal or not, every product a float32 fused multiply-add.

A block of THREADS threads takes BM query rows of one (batch, head) and walks its keys in tiles of BN:
- Q's tile is staged once in shared memory as float32, pre-multiplied by scale * log2(e), so scores
  come out in base 2 and the softmax takes math.exp2 with no extra multiply;
- each key tile: K staged in shared memory, scores S = Q K^T for the tile with each thread holding a
  TM x TN block of S in registers (rows ty + 8 i, keys tx + 16 j: each step of 4 dims loads TM + TN
  float4 from shared memory for TM * TN * 4 FMAs, as a register-blocked SIMT GEMM), masked to -inf past
  the sequence's end or above the diagonal (only in the tiles that reach them); the online softmax
  (running row maximum m, rescaling by exp2(m_old - m_new), per-thread partial row sums l); P written to
  shared memory; V staged over K (one buffer for both); O += P V with each thread holding TM rows x TD
  dims of O in registers (TD = D / 16: dims g * 64 + tx * 4 + e);
- a row's maximum is combined across its 16 threads through shared memory (no warp shuffles, so the CUDA
  simulator runs the same code), its sum l only once at the end;
- global memory is read 16 bytes a load (_common's packed access: pairs of 8-byte words, 4 bf16/fp16
  elements a word) into registers one phase ahead: V's words while the scores are computed, the next
  K's during P V; shared memory 16 bytes a load or store too (_common.load4 / store4);
- causal blocks stop at the diagonal and run heaviest first (query blocks in reverse order).

Shared memory (dynamic, one float32 buffer): Q and K/V tiles of rows padded to D + 4, P padded to
BN + 8, row partials padded to 20: 89 KiB for D = 128 (two blocks an SM), 57 KiB for D = 64, over the
48 KiB a launch gets by default (build() opts in, _common.allow_dynamic_shared).

Constraints (supports()): D of 64 or 128 (registers hold TM x D / 16 accumulators); 16-bit inputs (the
problem's); any S (partial tiles masked, rows past S neither read garbage nor are written).
Under the CUDA simulator (Python threads) only the small test cases run: CUDA_SIMULATED_WORK."""
import math

import numba
import numpy as np
from numba import cuda

from backends.base import cuda_simulator
from backends.numba_simt._common import (PACK, allow_dynamic_shared, compile_for, load2, load4, store1, store4, u64,
                                         words_of)

LOG2E = 1.4426950408889634
THREADS = 128                   # 4 warps; a thread is (ty, tx): 8 row groups x 16 column groups
ROW_GROUPS, COL_GROUPS = 8, 16
BM = 64                         # query rows a block
BN = 64                         # keys a tile
TM = BM // ROW_GROUPS           # 8 query rows a thread (rows ty + 8 i)
TN = BN // COL_GROUPS           # 4 keys a thread in the scores (keys tx + 16 j)
DIMS_PER_GROUP = 4 * COL_GROUPS  # 64: a thread's dims are g * 64 + tx * 4 + (0..3)
HEAD_DIMS = (64, 128)
ROW_PAD = 4                     # floats after each Q / K / V row: rows start 4 banks apart, 16-byte aligned
P_PAD = 8                       # after each P row: a warp's 4 rows x 8 keys of P hit 32 banks
RED_STRIDE = COL_GROUPS + 4     # a row's 16 partials (maxima, then sums), padded
CUDA_SIMULATED_WORK = 1 << 22   # B H S^2 D: the simulator runs each thread in Python
SHARED_ALIGN = None if cuda_simulator() else 16     # bytes: float4 loads and stores (the simulator takes none)
MAX_GRID_Y = 65535              # the grid's y (batch x head) limit
# registers a thread, per D: D = 64 fits 168 with no spill (3 blocks an SM: 3 x 128 x 168 <= 64K, and
# 3 x 57 KiB of shared memory); D = 128 takes what it needs (255: 2 blocks an SM, as its 89 KiB allow)
MAX_REGISTERS = {64: 168, 128: None}


def layout(d):
    """Offsets (floats) of Q, K/V, P and the row partials in the dynamic shared buffer, and its bytes."""
    qkv_stride = d + ROW_PAD
    p_stride = BN + P_PAD
    q_off = 0
    kv_off = q_off + BM * qkv_stride
    p_off = kv_off + BN * qkv_stride
    red_off = p_off + BM * p_stride
    floats = red_off + BM * RED_STRIDE
    return q_off, kv_off, p_off, red_off, qkv_stride, p_stride, 4 * floats


def attention_kernel(dtype, d, causal):
    """The kernel for one dtype, head dimension and mask: each a compile-time constant."""
    per, bits, unpack, pack = PACK[dtype]
    assert per == 4 and d % DIMS_PER_GROUP == 0
    q_off, kv_off, p_off, red_off, qkv_stride, p_stride, _ = layout(d)
    words_per_row = d // per                     # 8-byte words of a row of Q, K, V or O
    pairs_per_row = words_per_row // 2           # 16-byte loads of a row
    pairs_per_thread = BM * pairs_per_row // THREADS
    words_per_thread = 2 * pairs_per_thread
    assert BM == BN and BM * pairs_per_row % THREADS == 0
    td = d // COL_GROUPS                         # O dims a thread: 8 (D = 128) or 4 (D = 64)
    groups = td // 4
    neg_inf = -math.inf

    @cuda.jit(device=True, inline=True)
    def fetch(words, head, r0, seq, tid, buf):
        """This thread's words of rows r0 .. r0 + 63 into registers (zeros past the sequence's end): word
        pairs tid + THREADS k, 16 bytes a load, a warp's 512 consecutive bytes at a time."""
        for k in range(pairs_per_thread):
            pair = tid + THREADS * k
            row = r0 + pair // pairs_per_row
            if row < seq:
                buf[2 * k], buf[2 * k + 1] = load2(words, head + row * words_per_row + 2 * (pair % pairs_per_row))
            else:
                buf[2 * k] = buf[2 * k + 1] = u64(0)

    @cuda.jit(device=True, inline=True)
    def put(buf, sh, off, tid, scale):
        """The fetched words into a shared tile as float32 (times scale): a word, 4 floats, a 16-byte store."""
        for k in range(pairs_per_thread):
            pair = tid + THREADS * k
            at = off + (pair // pairs_per_row) * qkv_stride + (pair % pairs_per_row) * 2 * per
            for h in range(2):
                word = buf[2 * k + h]
                store4(sh, at + h * per, unpack(word) * scale, unpack(word >> u64(bits)) * scale,
                       unpack(word >> u64(2 * bits)) * scale, unpack(word >> u64(3 * bits)) * scale)

    options = {} if cuda_simulator() or MAX_REGISTERS[d] is None else {"max_registers": MAX_REGISTERS[d]}

    @cuda.jit(**options)
    def attention(qw, kw, vw, ow, seq, qk_scale):
        sh = cuda.shared.array(0, numba.float32, alignment=SHARED_ALIGN)
        tid = cuda.threadIdx.x
        warp, lane = tid // 32, tid % 32
        tx = (warp % 2) * 8 + lane % 8          # a warp: 4 row groups x 8 column groups
        ty = (warp // 2) * 4 + lane // 8
        q0 = (cuda.gridDim.x - 1 - cuda.blockIdx.x) * BM     # causal: the longest blocks first
        head = numba.int64(cuda.blockIdx.y) * seq * words_per_row
        # this thread's places in shared memory; rows i, keys j, dims g are constant offsets from them
        q_at = q_off + ty * qkv_stride                      # Q row ty (+ 8 i rows)
        k_at = kv_off + tx * qkv_stride                     # K row tx (+ 16 j rows)
        v_at = kv_off + tx * 4                              # V dims tx * 4 (+ 64 g), any row
        p_at = p_off + ty * p_stride                        # P row ty (+ 8 i rows)
        red_at = red_off + ty * RED_STRIDE                  # row ty's partials (+ 8 i rows)

        buf = cuda.local.array(words_per_thread, numba.uint64)
        s = cuda.local.array((TM, TN), numba.float32)
        acc = cuda.local.array((TM, td), numba.float32)
        m = cuda.local.array(TM, numba.float32)
        lsum = cuda.local.array(TM, numba.float32)
        kf = cuda.local.array((TN, 4), numba.float32)
        pf = cuda.local.array((TM, 4), numba.float32)
        vf = cuda.local.array(td, numba.float32)
        for i in range(TM):
            m[i] = neg_inf
            lsum[i] = 0.0
            for e in range(td):
                acc[i, e] = 0.0

        fetch(qw, head, q0, seq, tid, buf)
        put(buf, sh, q_off, tid, qk_scale)
        end = min(seq, q0 + BM) if causal else seq
        tiles = (end + BN - 1) // BN
        fetch(kw, head, 0, seq, tid, buf)
        for t in range(tiles):
            k0 = t * BN
            cuda.syncthreads()                  # the last tile's P V is done with K/V and P
            put(buf, sh, kv_off, tid, numba.float32(1.0))
            cuda.syncthreads()
            fetch(vw, head, k0, seq, tid, buf)  # V's words in flight during the scores

            # S = Q K^T for rows ty + 8 i, keys tx + 16 j: per 4 dims, TN + TM float4 loads, TM TN 4 FMAs
            for i in range(TM):
                for j in range(TN):
                    s[i, j] = 0.0
            for d0 in range(0, d, 4):
                for j in range(TN):
                    kf[j, 0], kf[j, 1], kf[j, 2], kf[j, 3] = load4(sh, k_at + j * COL_GROUPS * qkv_stride + d0)
                for i in range(TM):
                    q_0, q_1, q_2, q_3 = load4(sh, q_at + i * ROW_GROUPS * qkv_stride + d0)
                    for j in range(TN):
                        s[i, j] += q_0 * kf[j, 0]
                        s[i, j] += q_1 * kf[j, 1]
                        s[i, j] += q_2 * kf[j, 2]
                        s[i, j] += q_3 * kf[j, 3]
            if k0 + BN > seq or (causal and k0 + BN > q0 + 1):      # the tile reaches the end or diagonal
                for i in range(TM):
                    row = q0 + ty + ROW_GROUPS * i
                    for j in range(TN):
                        key = k0 + tx + COL_GROUPS * j
                        if key >= seq or (causal and key > row):
                            s[i, j] = neg_inf
            for i in range(TM):
                mx = s[i, 0]
                for j in range(1, TN):
                    mx = max(mx, s[i, j])
                store1(sh, red_at + i * ROW_GROUPS * RED_STRIDE + tx, mx)
            cuda.syncthreads()                  # K is free, the row partials visible

            # online softmax: the tile's row maximum from the 16 partials, P = exp2(S - m) into shared
            for i in range(TM):
                mt = m[i]
                for c in range(0, COL_GROUPS, 4):
                    x0, x1, x2, x3 = load4(sh, red_at + i * ROW_GROUPS * RED_STRIDE + c)
                    mt = max(max(mt, x0), max(x1, max(x2, x3)))
                m_use = numba.float32(0.0) if mt == neg_inf else mt      # a row with no key yet
                alpha = math.exp2(m[i] - m_use)
                m[i] = mt
                rs = numba.float32(0.0)
                for j in range(TN):
                    p = math.exp2(s[i, j] - m_use)
                    rs += p
                    store1(sh, p_at + i * ROW_GROUPS * p_stride + tx + COL_GROUPS * j, p)
                lsum[i] = lsum[i] * alpha + rs
                for e in range(td):
                    acc[i, e] *= alpha
            put(buf, sh, kv_off, tid, numba.float32(1.0))        # V over K
            cuda.syncthreads()
            if t + 1 < tiles:
                fetch(kw, head, k0 + BN, seq, tid, buf)       # the next K's words in flight during P V

            # O += P V for rows ty + 8 i, dims 64 g + 4 tx + e: per 4 keys, TM + 4 groups float4 loads
            for j0 in range(0, BN, 4):
                for i in range(TM):
                    pf[i, 0], pf[i, 1], pf[i, 2], pf[i, 3] = load4(sh, p_at + i * ROW_GROUPS * p_stride + j0)
                for jj in range(4):
                    for g in range(groups):
                        vf[4 * g], vf[4 * g + 1], vf[4 * g + 2], vf[4 * g + 3] = load4(
                            sh, v_at + (j0 + jj) * qkv_stride + g * DIMS_PER_GROUP)
                    for i in range(TM):
                        p = pf[i, jj]
                        for e in range(td):
                            acc[i, e] += p * vf[e]

        # l: the row's 16 partial sums (the last tile's maxima were read before the last barrier)
        for i in range(TM):
            store1(sh, red_at + i * ROW_GROUPS * RED_STRIDE + tx, lsum[i])
        cuda.syncthreads()
        for i in range(TM):
            row = q0 + ty + ROW_GROUPS * i
            if row < seq:
                total = numba.float32(0.0)
                for c in range(0, COL_GROUPS, 4):
                    x0, x1, x2, x3 = load4(sh, red_at + i * ROW_GROUPS * RED_STRIDE + c)
                    total += (x0 + x1) + (x2 + x3)
                inv = numba.float32(1.0) / total
                at = head + row * words_per_row + tx
                for g in range(groups):
                    word = u64(0)
                    for e in range(4):
                        word |= pack(acc[i, 4 * g + e] * inv) << u64(bits * e)
                    ow[at + g * (DIMS_PER_GROUP // per)] = word

    return attention


KERNELS = {}


def kernel_for(dtype, d, causal):
    key = (dtype, d, causal)
    if key not in KERNELS:
        KERNELS[key] = attention_kernel(dtype, d, causal)
    return KERNELS[key]


def supports(case, variant=""):
    b, h, s, d = (case.shape[k] for k in ("B", "H", "S", "D"))
    if d not in HEAD_DIMS:
        return f"head dim {d}: this kernel holds D / 16 of O's dims a thread for D in {HEAD_DIMS}"
    if case.dtype not in ("bfloat16", "float16"):
        return "16-bit inputs only (read as 4 elements a word)"
    if b * h > MAX_GRID_Y:
        return f"B H = {b * h}: a block column per (batch, head), at most {MAX_GRID_Y}"
    if cuda_simulator() and b * h * s * s * d > CUDA_SIMULATED_WORK:
        return "CUDA simulator: attention test cases up to B H S^2 D = 2^22 only"
    return None


def build(case, inputs, outputs, stream, variant=""):
    q, k, v, o = inputs["q"], inputs["k"], inputs["v"], outputs["o"]
    b, h, seq, d = q.shape
    per = PACK[case.dtype][0]
    qw, kw, vw, ow = (words_of(x.reshape(x.size), per) for x in (q, k, v, o))
    kernel = kernel_for(case.dtype, d, bool(case.shape["causal"]))
    args = (qw, kw, vw, ow, np.int64(seq), np.float32(LOG2E / math.sqrt(d)))
    compile_for(kernel, *args)
    shared = layout(d)[-1]
    allow_dynamic_shared(kernel, args, shared)
    grid = ((seq + BM - 1) // BM, b * h)

    def run():
        kernel[grid, THREADS, stream, shared](*args)

    return run
