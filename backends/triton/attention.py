"""Attention forward in Triton, FlashAttention-2's way as Triton's fused-attention tutorial teaches it:
a program per (block of queries, batch x head); K and V stream through in blocks; scores by tl.dot into
float32, scaled by scale * log2(e) for exp2; an online softmax (running maximum and sum); P cast to
the input dtype for the second tl.dot; a causal program stops after its diagonal block and masks in it.
Partial blocks (any sequence length) are masked on load and store."""
import math

import triton
import triton.language as tl

from backends.base import compiling
from backends.triton import interpreted

LOG2E = 1.4426950408889634


@triton.jit
def attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, seq, qk_scale, CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr):
    start_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * seq * HEAD_DIM
    rows = start_m * BM + tl.arange(0, BM)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + rows[:, None] * HEAD_DIM + dims[None, :], mask=rows[:, None] < seq, other=0.0)
    m_i = tl.full([BM], float("-inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, HEAD_DIM], tl.float32)
    end = tl.minimum(seq, (start_m + 1) * BM) if CAUSAL else seq
    for start_n in range(0, end, BN):
        keys = start_n + tl.arange(0, BN)
        k = tl.load(k_ptr + base + keys[:, None] * HEAD_DIM + dims[None, :], mask=keys[:, None] < seq, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        valid = keys[None, :] < seq
        if CAUSAL:
            valid = valid & (keys[None, :] <= rows[:, None])
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + base + keys[:, None] * HEAD_DIM + dims[None, :], mask=keys[:, None] < seq, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + base + rows[:, None] * HEAD_DIM + dims[None, :], o.to(o_ptr.dtype.element_ty),
             mask=rows[:, None] < seq)


def config(head_dim):
    """(BM, BN, warps, stages): the interpreter runs small blocks; on a GPU the tutorial's Hopper shapes."""
    if interpreted():
        return 16, 16, 4, 1
    return (128, 64, 8, 3) if head_dim >= 128 else (128, 64, 4, 3)


def build(case, inputs, outputs, stream, variant=""):
    q, k, v, o = inputs["q"], inputs["k"], inputs["v"], outputs["o"]
    b, h, seq, d = q.shape
    bm, bn, warps, stages = config(d)
    grid = (triton.cdiv(seq, bm), b * h)
    args = (q, k, v, o, seq, LOG2E / math.sqrt(d))
    meta = {"CAUSAL": bool(case.shape["causal"]), "HEAD_DIM": d, "BM": bm, "BN": bn, "num_warps": warps,
            "num_stages": stages}
    if not interpreted():
        with compiling():          # Triton's compile on the CPU, nothing launched
            attention_fwd.warmup(*args, **meta, grid=grid)

    def run():
        attention_fwd[grid](*args, **meta)

    return run
