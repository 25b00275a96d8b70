"""Attention forward in Triton, FlashAttention-2's way as Triton's fused-attention tutorial teaches it:
a program per (block of queries, batch x head); K and V stream through in blocks; scores by tl.dot into
float32, scaled by scale * log2(e) for exp2; an online softmax (running maximum and sum); P cast to
the input dtype for the second tl.dot. As the tutorial splits its loop, whole key blocks before the
diagonal (causal) or the sequence's end take no mask and the rest (the diagonal blocks, the last partial
block) are masked on load and in the scores; a causal program stops after its diagonal. Any sequence
length: query rows past its end are masked on load and store."""
import math

import triton
import triton.language as tl

from backends.base import compiling
from backends.triton import interpreted

LOG2E = 1.4426950408889634


@triton.jit
def attend(acc, l_i, m_i, q, k_ptr, v_ptr, base, rows, lo, hi, seq, qk_scale, CAUSAL: tl.constexpr,
           MASKED: tl.constexpr, HEAD_DIM: tl.constexpr, BN: tl.constexpr):
    """Key blocks [lo, hi) into the running (acc, l_i, m_i); MASKED: blocks past the sequence's end or
    crossing the diagonal, whose keys are masked on load and in the scores."""
    dims = tl.arange(0, HEAD_DIM)
    for start_n in range(lo, hi, BN):
        keys = start_n + tl.arange(0, BN)
        offsets = base + keys[:, None] * HEAD_DIM + dims[None, :]
        if MASKED:  # noqa: SIM108  (a constexpr branch: each block kind compiles its own loads)
            k = tl.load(k_ptr + offsets, mask=keys[:, None] < seq, other=0.0)
        else:
            k = tl.load(k_ptr + offsets)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        if MASKED:
            valid = keys[None, :] < seq
            if CAUSAL:
                valid = valid & (keys[None, :] <= rows[:, None])
            s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        if MASKED:  # noqa: SIM108
            v = tl.load(v_ptr + offsets, mask=keys[:, None] < seq, other=0.0)
        else:
            v = tl.load(v_ptr + offsets)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


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
    # whole blocks before the diagonal (causal) or the sequence's end take no mask; the rest do
    end = tl.minimum(seq, (start_m + 1) * BM) if CAUSAL else seq
    whole = (seq // BN) * BN
    if CAUSAL:
        whole = tl.minimum(whole, start_m * BM)
    acc, l_i, m_i = attend(acc, l_i, m_i, q, k_ptr, v_ptr, base, rows, 0, whole, seq, qk_scale, CAUSAL, False,
                           HEAD_DIM, BN)
    acc, l_i, m_i = attend(acc, l_i, m_i, q, k_ptr, v_ptr, base, rows, whole, end, seq, qk_scale, CAUSAL, True,
                           HEAD_DIM, BN)
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
