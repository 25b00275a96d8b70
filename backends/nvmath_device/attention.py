"""Attention forward with nvmath-python's device Matmul (cuBLASDx) in a numba-cuda kernel: both
products on the tensor cores through MM.execute, the online softmax between them written in numba.

A block of `plan.block` threads takes `plan.bm` query rows of one (batch, head) and walks its keys in
tiles of `plan.bn`, FlashAttention's blocking:
- Q's tile is copied into shared memory once (cuBLASDx's suggested layouts throughout); each key
  tile's K and V by async copies into one of two buffers, the next tile's while this one is computed
  (the double buffering of nvmath's K-loop GEMM example);
- S = Q K^T (MM_S: bm x bn x D, K read as K^T in column-major order) into a register fragment; each
  thread scales its elements to base 2 and masks keys past the sequence or above the diagonal, and
  writes them by their coordinates (the accumulator's map_fragment_index) into a float32 tile in
  shared memory;
- a warp a row then takes the row's maximum and its exponentials (warp shuffles), writes P in the
  inputs' dtype to shared memory (row by row, then copied into MM_O's layout: a Matmul's operands are
  all in its suggested layouts or none) and keeps the running maximum, sum and rescaling factor;
- each thread rescales its fragment of O (MM_O: bm x D x bn) by its rows' factors, then O += P V.
The device Matmul takes its A operand from shared memory only, so P makes the round trip through shared
memory that FlashAttention-2 and -3 avoid by keeping P in registers. cuBLASDx's copies do no bounds
checks: a sequence that is not a whole number of tiles runs on zero-padded copies of Q, K and V
(refreshed by each run). Causal blocks stop at the diagonal.

Constraints: float16 (nvmath-python 1.0's device Matmul takes no bfloat16: the backend's supports);
D a multiple of 16."""
import functools
import math
from typing import NamedTuple

import numpy as np
from numba import cuda
from nvmath.device import Matmul
from nvmath.device.common import clear, copy, copy_wait, make_tensor
from nvmath.device.cublasdx import MAX_ALIGNMENT

from backends.base import compiling
from backends.nvmath_device._tiles import compiled_with_smem, copier, padded

LOG2E = 1.4426950408889634
WARP = 32
FULL_MASK = 0xFFFFFFFF


class Plan(NamedTuple):
    bm: int = 64        # query rows a block
    bn: int = 64        # keys a tile
    block: int = 128    # threads a block


PLAN = Plan()


@functools.cache
def matmuls(dtype, d, plan):
    """MM_S: S = Q K^T (K's rows are K^T's columns), MM_O: O += P V, float32 accumulators."""
    T = np.dtype(dtype).type
    common = {"precision": (T, T, np.float32), "data_type": "real", "execution": "Block",
              "block_size": plan.block, "alignment": MAX_ALIGNMENT, "static_block_dim": True}
    mm_s = Matmul(size=(plan.bm, plan.bn, d), arrangement=("row_major", "col_major", "row_major"), **common)
    mm_o = Matmul(size=(plan.bm, d, plan.bn), arrangement=("row_major", "row_major", "row_major"), **common)
    return mm_s, mm_o


@cuda.jit(device=True, inline=True)
def warp_max(x):
    for offset in (16, 8, 4, 2, 1):
        x = max(x, cuda.shfl_xor_sync(FULL_MASK, x, offset))
    return x


@cuda.jit(device=True, inline=True)
def warp_sum(x):
    for offset in (16, 8, 4, 2, 1):
        x += cuda.shfl_xor_sync(FULL_MASK, x, offset)
    return x


@functools.cache
def kernel_for(dtype, d, causal, plan):
    """The kernel and its bytes of dynamic shared memory."""
    MM_S, MM_O = matmuls(dtype, d, plan)
    T = np.dtype(dtype).type
    bm, bn, threads = plan.bm, plan.bn, plan.block
    warps = threads // WARP
    lay_q, lay_k, lay_v = MM_S.suggest_layout_smem_a(), MM_S.suggest_layout_smem_b(), MM_O.suggest_layout_smem_b()
    lay_p, lay_p_rows, ld_p = MM_O.suggest_layout_smem_a(), MM_O.get_layout_smem_a(), MM_O.leading_dimension.a
    lay_s, lay_o = MM_S.suggest_layout_rmem_c(), MM_O.suggest_layout_rmem_c()
    s_size, o_size = lay_s.size, lay_o.size
    # shared memory in elements of the inputs' dtype: Q, K twice, V twice, P as the softmax writes it
    # (rows) and as MM_O reads it; then float32: S, m, l, alpha
    k0 = lay_q.cosize
    k1 = k0 + lay_k.cosize
    v0 = k1 + lay_k.cosize
    v1 = v0 + lay_v.cosize
    r0 = v1 + lay_v.cosize
    p0 = r0 + lay_p_rows.cosize
    f0 = -(-(p0 + lay_p.cosize) * T(0).itemsize // 16) * 4          # first float32, 16-byte aligned
    m0 = f0 + bm * bn
    l0, a0 = m0 + bm, m0 + 2 * bm
    smem_bytes = (a0 + bm) * 4

    @cuda.jit
    def attention(q, k, v, o, seq, scale):
        bh, q_first = cuda.blockIdx.y, cuda.blockIdx.x * bm
        tid = cuda.threadIdx.x
        lane, warp = tid % WARP, tid // WARP
        smem = cuda.shared.array(shape=(0,), dtype=T, alignment=16)
        smem_f = cuda.shared.array(shape=(0,), dtype=np.float32, alignment=16)    # the same bytes
        s_q = make_tensor(smem[0:k0], lay_q)
        s_k, s_k_next = make_tensor(smem[k0:k1], lay_k), make_tensor(smem[k1:v0], lay_k)
        s_v, s_v_next = make_tensor(smem[v0:v1], lay_v), make_tensor(smem[v1:r0], lay_v)
        p_tile = smem[r0:p0]
        p_rows, s_p = make_tensor(p_tile, lay_p_rows), make_tensor(smem[p0:p0 + lay_p.cosize], lay_p)
        s_tile, m_row, l_row, alpha_row = smem_f[f0:m0], smem_f[m0:l0], smem_f[l0:a0], smem_f[a0:a0 + bm]
        for r in range(tid, bm, threads):
            m_row[r] = -math.inf
            l_row[r] = 0.0
        copy(make_tensor(q[bh, q_first:q_first + bm, :], MM_S.get_layout_gmem_a(d)), s_q, alignment=16)
        copy(make_tensor(k[bh, 0:bn, :], MM_S.get_layout_gmem_b(d)), s_k, alignment=16)
        copy(make_tensor(v[bh, 0:bn, :], MM_O.get_layout_gmem_b(d)), s_v, alignment=16)
        acc_s, acc_o = MM_S.suggest_accumulator(), MM_O.suggest_accumulator()
        s_regs = cuda.local.array(shape=(lay_s.cosize,), dtype=np.float32)
        o_regs = cuda.local.array(shape=(lay_o.cosize,), dtype=np.float32)
        s_frag, o_frag = make_tensor(s_regs, lay_s), make_tensor(o_regs, lay_o)
        clear(o_frag)
        keys_end = min(seq, q_first + bm) if causal else seq
        tiles = (keys_end + bn - 1) // bn
        for j in range(tiles):
            copy_wait()                              # this tile's K and V are in (and the block synced)
            if j + 1 < tiles:
                n = (j + 1) * bn
                copy(make_tensor(k[bh, n:n + bn, :], MM_S.get_layout_gmem_b(d)), s_k_next, alignment=16)
                copy(make_tensor(v[bh, n:n + bn, :], MM_O.get_layout_gmem_b(d)), s_v_next, alignment=16)
            clear(s_frag)
            MM_S.execute(s_q, s_k, s_frag)
            if acc_s.is_thread_active():
                for i in range(s_size):
                    r, c = acc_s.map_fragment_index(i)
                    key = j * bn + c
                    hidden = key >= seq or (causal and key > q_first + r)
                    s_tile[r * bn + c] = -math.inf if hidden else s_regs[i] * scale
            cuda.syncthreads()
            for r in range(warp, bm, warps):         # the online softmax, a warp a row
                m_old = m_row[r]
                m_new = m_old
                for c in range(lane, bn, WARP):
                    m_new = max(m_new, s_tile[r * bn + c])
                m_new = warp_max(m_new)              # finite: every row sees key 0 in its first tile
                total = np.float32(0)
                for c in range(lane, bn, WARP):
                    p = math.exp2(s_tile[r * bn + c] - m_new)
                    p_tile[r * ld_p + c] = T(p)
                    total += p
                total = warp_sum(total)
                if lane == 0:
                    alpha = math.exp2(m_old - m_new)
                    alpha_row[r] = alpha
                    l_row[r] = l_row[r] * alpha + total
                    m_row[r] = m_new
            cuda.syncthreads()
            copy(p_rows, s_p, alignment=16)          # into MM_O's layout (its operands: suggested or none)
            if acc_o.is_thread_active():
                for i in range(o_size):
                    o_regs[i] *= alpha_row[acc_o.map_fragment_index(i)[0]]
            copy_wait()
            MM_O.execute(s_p, s_v, o_frag)
            cuda.syncthreads()                       # every warp is done with this K, V and P
            s_k, s_k_next = s_k_next, s_k
            s_v, s_v_next = s_v_next, s_v
        if acc_o.is_thread_active():
            for i in range(o_size):
                r, c = acc_o.map_fragment_index(i)
                if q_first + r < seq:
                    o[bh, q_first + r, c] = T(o_regs[i] / l_row[r])

    return attention, smem_bytes


def build(case, inputs, outputs, stream, variant="", plan=PLAN):
    b, h, seq, d = inputs["q"].shape
    q, k, v = (inputs[name].reshape(b * h, seq, d) for name in "qkv")
    o = outputs["o"].reshape(b * h, seq, d)
    rows = math.lcm(plan.bm, plan.bn)            # whole tiles of queries and of keys
    q_p, k_p, v_p = (padded(x, (1, rows, d)) for x in (q, k, v))
    with compiling():          # nvmath's Matmuls: cuBLASDx's code generated on the CPU
        kernel, smem_bytes = kernel_for(case.dtype, d, bool(case.shape["causal"]), plan)
    args = (q_p, k_p, v_p, o, np.int64(seq), np.float32(LOG2E / math.sqrt(d)))
    compiled_with_smem(kernel, smem_bytes, *args)
    launch = kernel[(-(-seq // plan.bm), b * h), plan.block, stream, smem_bytes]
    pads = [copier(x, x_p, stream) for x, x_p in ((q, q_p), (k, k_p), (v, v_p))]

    def run():
        for pad in pads:
            pad()
        launch(*args)

    return run
