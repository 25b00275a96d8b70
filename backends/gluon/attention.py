"""O = softmax(Q K^T / sqrt(D)) V in Gluon on Hopper, FlashAttention's forward as its Hopper kernels
write it (Gluon's own attention tutorial is Blackwell-only): Q's tile once by TMA, K and V tiles by TMA
into a ring of BUFFERS mbarrier-guarded stages, S = Q K^T by an asynchronous wgmma from shared memory,
the online softmax in registers, and O += P V by a wgmma whose A operand is P in registers.

Works as follows:
1. A program takes BM queries of one (batch, head): two warpgroups, 64 query rows each. Q, K, V and O
   are viewed as (B * H * S, D); a tile that runs past its head's S reads the next head's rows (masked
   out as keys, and such query rows are never stored), and TMA zero-fills past the last head.
2. It issues the loads of its first BUFFERS - 1 key tiles, then per key tile: waits for its stage,
   S = Q K^T (wgmma, K's tile transposed in shared memory), masks keys past S (and, causal, past the
   query), scales by log2(e) / sqrt(D), and updates the running maximum and sum (exp2).
3. O is rescaled, P rounded to the inputs' dtype in the wgmma's A-operand register layout, and
   O += P V issued; once it has read its stage, that stage is refilled with the tile BUFFERS - 1 ahead.
4. O / l is stored row-masked (rows < S of this head) from registers.

Constraints: 16-bit inputs, D in HEAD_DIMS; causal tiles stop at the diagonal."""
import math

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from backends.base import compiling
from backends.gluon._pipeline import load_stage

BM, BN = 128, 128            # queries a program, keys a step
BUFFERS = 2                  # K and V stages: 2 x (32 + 32) KiB beside Q's 32 KiB at D = 128
WARPS = 8                    # two warpgroups of 64 query rows
HEAD_DIMS = (64, 128)
LOG2E = 1.4426950408889634


@gluon.jit
def attention(q_desc, k_desc, v_desc, o_ptr, S, qk_scale, CAUSAL: gl.constexpr, BUFFERS: gl.constexpr,
              num_warps: gl.constexpr):
    BM: gl.constexpr = q_desc.block_type.shape[0]
    D: gl.constexpr = q_desc.block_type.shape[1]
    BN: gl.constexpr = k_desc.block_type.shape[0]
    dtype: gl.constexpr = q_desc.dtype
    start_m = gl.program_id(0) * BM
    head_row = gl.program_id(1) * S                    # this (batch, head)'s first row in (B * H * S, D)

    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                       instr_shape=[16, BN, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                       instr_shape=[16, D, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)

    q_smem = gl.allocate_shared_memory(dtype, [BM, D], q_desc.layout)
    k_bufs = gl.allocate_shared_memory(dtype, [BUFFERS, BN, D], k_desc.layout)
    v_bufs = gl.allocate_shared_memory(dtype, [BUFFERS, BN, D], v_desc.layout)
    q_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    ready = gl.allocate_shared_memory(gl.int64, [BUFFERS, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_ready, count=1)
    for stage in gl.static_range(BUFFERS):
        mbarrier.init(ready.index(stage), count=1)

    mbarrier.expect(q_ready, q_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(q_desc, [head_row + start_m, 0], q_ready, q_smem)
    end = gl.minimum(S, start_m + BM) if CAUSAL else S
    steps = gl.cdiv(end, BN)
    for first in gl.static_range(BUFFERS - 1):
        load_stage(k_desc, (head_row + first * BN, 0), v_desc, (head_row + first * BN, 0), ready.index(first),
                   k_bufs.index(first), v_bufs.index(first), pred=first < steps)

    rows = start_m + gl.arange(0, BM, layout=row_layout)
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, s_layout))
    m_i = gl.full([BM], -float("inf"), gl.float32, layout=row_layout)
    l_i = gl.zeros([BM], gl.float32, layout=row_layout)
    o = gl.zeros([BM, D], gl.float32, layout=o_layout)
    mbarrier.wait(q_ready, 0)
    for i in range(steps):
        s = i % BUFFERS
        mbarrier.wait(ready.index(s), i // BUFFERS & 1)
        qk = warpgroup_mma(q_smem, k_bufs.index(s).permute((1, 0)), gl.zeros([BM, BN], gl.float32, layout=s_layout),
                           use_acc=False, is_async=True)
        qk = warpgroup_mma_wait(num_outstanding=0, deps=(qk, ))
        keys = i * BN + cols
        keep = keys[None, :] < S
        if CAUSAL:
            keep = keep & (keys[None, :] <= rows[:, None])
        qk = gl.where(keep, qk * qk_scale, -float("inf"))
        m_new = gl.maximum(m_i, gl.max(qk, 1))
        p = gl.exp2(qk - m_new[:, None])
        alpha = gl.exp2(m_i - m_new)
        l_i = l_i * alpha + gl.sum(p, 1)
        m_i = m_new
        o = o * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
        p16 = gl.convert_layout(p.to(dtype), p_layout)
        o = warpgroup_mma(p16, v_bufs.index(s), o, is_async=True)
        o = warpgroup_mma_wait(num_outstanding=0, deps=(o, ))
        ahead = i + BUFFERS - 1
        t = ahead % BUFFERS
        load_stage(k_desc, (head_row + ahead * BN, 0), v_desc, (head_row + ahead * BN, 0), ready.index(t),
                   k_bufs.index(t), v_bufs.index(t), pred=ahead < steps)
    mbarrier.invalidate(q_ready)
    for stage in gl.static_range(BUFFERS):
        mbarrier.invalidate(ready.index(stage))

    o = o / gl.convert_layout(l_i, gl.SliceLayout(1, o_layout))[:, None]
    out_rows = start_m + gl.arange(0, BM, layout=gl.SliceLayout(1, o_layout))
    dims = gl.arange(0, D, layout=gl.SliceLayout(0, o_layout))
    offsets = (head_row + out_rows).to(gl.int64)[:, None] * D + dims[None, :]
    gl.store(o_ptr + offsets, o.to(dtype), mask=(out_rows < S)[:, None])


def supports(case, variant=""):
    if case.dtype not in ("bfloat16", "float16"):
        return "16-bit inputs only (wgmma's fp32 inputs would be TF32)"
    if case.shape["D"] not in HEAD_DIMS:
        return f"head dims {HEAD_DIMS} (a whole wgmma N and one TMA box each)"
    return None


def descriptors(q, k, v):
    gl_dtype = {torch.bfloat16: gl.bfloat16, torch.float16: gl.float16}[q.dtype]
    d = q.shape[-1]
    return [TensorDescriptor.from_tensor(x.reshape(-1, d), block, gl.NVMMASharedLayout.get_default_for(block, gl_dtype))
            for x, block in ((q, [BM, d]), (k, [BN, d]), (v, [BN, d]))]


def launch_args(case):
    b, h, s, d, causal = (case.shape[x] for x in ("B", "H", "S", "D", "causal"))
    return (triton.cdiv(s, BM), b * h), LOG2E / math.sqrt(d), bool(causal)


def build(case, inputs, outputs, stream, variant=""):
    q, k, v, o = inputs["q"], inputs["k"], inputs["v"], outputs["o"]
    grid, qk_scale, causal = launch_args(case)
    descs, s = descriptors(q, k, v), case.shape["S"]
    with compiling():
        attention.warmup(*descs, o, s, qk_scale, causal, BUFFERS, num_warps=WARPS, grid=grid)

    def run():
        attention[grid](*descs, o, s, qk_scale, causal, BUFFERS, num_warps=WARPS)

    return run


def export(case, variant, target):
    """The case's kernel compiled for `target` (sm_90a) without a GPU: its cubin."""
    from backends.gluon import cubin
    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}[case.dtype]
    shape = tuple(case.shape[x] for x in ("B", "H", "S", "D"))
    q, k, v, o = (torch.empty(shape, dtype=dtype) for _ in range(4))
    _, qk_scale, causal = launch_args(case)
    args = {**dict(zip(("q_desc", "k_desc", "v_desc"), descriptors(q, k, v), strict=True)), "o_ptr": o,
            "S": case.shape["S"], "qk_scale": qk_scale}
    return cubin(attention, args, {"CAUSAL": causal, "BUFFERS": BUFFERS, "num_warps": WARPS}, WARPS, target)
