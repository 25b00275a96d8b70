"""Attention forward in Triton, FlashAttention-2's way as Triton's fused-attention tutorial teaches it
on Hopper: a program per (block of queries, batch x head); Q, K, V and O through tensor descriptors
made on the device (TMA over each head's (S, D) rows: a tile past the sequence's end reads zeros and
stores nothing); scores by tl.dot into float32, scaled by scale * log2(e) for exp2; an online softmax
(running maximum and sum); P cast to the input dtype for the second tl.dot. As the tutorial splits its loop, whole key
blocks before the diagonal (causal) or the sequence's end take no mask and the rest (the diagonal
blocks, the last partial block) are masked in the scores; a causal program stops after its diagonal.
The block shapes, stages and warps are autotuned over the tutorial's space, pruned as it prunes, and
so is whether the loop is warp-specialised (producer warps issue the loads), which the tutorial's
benchmark tries both ways on Hopper in the non-causal case. Warp specialisation is offered on Hopper,
not causal, when no key block is partial (Triton 3.6's warp-specialisation pass fails on the kernel
with a second, masked loop), and only at 2 stages or 8 warps: at 4 warps and 3 or 4 stages Triton
3.6's warp-specialised loop leaves most of O unwritten on the H100 (experiments/triton_attention_configs)."""
import math

import torch
import triton
import triton.language as tl

from backends.base import compiling, timing_kernels
from backends.triton import interpreted

LOG2E = 1.4426950408889634
MAX_BLOCK_N = 128            # the widest key block a config takes
TUNED_SEQ = 1024             # sequences from this length up are autotuned (every bench case)


def configs():
    """The tutorial's autotuning space: query blocks of 64 or 128, key blocks of 32 to 128, 2 to 4
    stages, 4 or 8 warps (8 only for 128 x 128 tiles, the tutorial's rule on Hopper), each loop plain
    or warp-specialised (at 2 stages or 8 warps only: the docstring says why)."""
    if interpreted():                    # the interpreter runs one small config, no tuning
        return [triton.Config({"BM": 32, "BN": 32, "WARP_SPECIALIZE": False}, num_warps=4, num_stages=1)]
    return [triton.Config({"BM": bm, "BN": bn, "WARP_SPECIALIZE": ws}, num_warps=w, num_stages=s)
            for ws in (False, True) for bm in (64, 128) for bn in (32, 64, 128) for s in (2, 3, 4) for w in (4, 8)
            if (w == 4 or bm * bn >= 128 * 128) and (not ws or s == 2 or w == 8)]


def warp_specialisable(seq: int, causal: bool) -> bool:
    """Hopper, not causal, whole key blocks only."""
    return (not interpreted() and triton.runtime.driver.active.get_current_target().arch == 90
            and not causal and seq % MAX_BLOCK_N == 0)


def prune(configs, named_args, **kwargs):
    """As the tutorial prunes: no query block longer than the sequence, and, causal, no key block wider
    than the query block (the diagonal band is one query block); warp-specialised loops only where
    they may be. Below TUNED_SEQ keys the first config left of each loop kind: a kernel of
    microseconds, whose timings would choose nothing."""
    seq, causal = named_args["seq"], kwargs["CAUSAL"]
    ws = warp_specialisable(seq, causal)
    kept = [c for c in configs if c.kwargs["BM"] <= max(seq, 64) and (c.kwargs["BM"] >= c.kwargs["BN"] or not causal)
            and (ws or not c.kwargs["WARP_SPECIALIZE"])]
    if seq >= TUNED_SEQ:
        return kept
    return [next(c for c in kept if c.kwargs["WARP_SPECIALIZE"] == w) for w in (False, True)[:1 + ws]]


@triton.jit
def descriptor(ptr, seq, HEAD_DIM: tl.constexpr, ROWS: tl.constexpr):
    """One head's (S, D) rows in boxes of ROWS rows: TMA reads zeros past S and stores nothing there."""
    return tl.make_tensor_descriptor(ptr, shape=[seq, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[ROWS, HEAD_DIM])


@triton.jit
def attend(acc, l_i, m_i, q, k_desc, v_desc, rows, lo, hi, seq, qk_scale, CAUSAL: tl.constexpr,
           MASKED: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, HEAD_DIM: tl.constexpr, BN: tl.constexpr):
    """Key blocks [lo, hi) into the running (acc, l_i, m_i); MASKED: blocks past the sequence's end or
    crossing the diagonal, whose keys are masked in the scores."""
    for start_n in tl.range(lo, hi, BN, warp_specialize=WARP_SPECIALIZE):
        k = k_desc.load([start_n, 0])
        s = tl.dot(q, tl.trans(k)) * qk_scale
        if MASKED:
            keys = start_n + tl.arange(0, BN)
            valid = keys[None, :] < seq
            if CAUSAL:
                valid = valid & (keys[None, :] <= rows[:, None])
            s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = v_desc.load([start_n, 0])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.autotune(configs=configs(), key=["seq", "HEAD_DIM", "CAUSAL"], prune_configs_by={"early_config_prune": prune})
@triton.jit
def attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, seq, qk_scale, CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr,
                  WARP_SPECIALIZE: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    start_m = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64) * seq * HEAD_DIM
    q_desc = descriptor(q_ptr + head, seq, HEAD_DIM, BM)
    k_desc = descriptor(k_ptr + head, seq, HEAD_DIM, BN)
    v_desc = descriptor(v_ptr + head, seq, HEAD_DIM, BN)
    o_desc = descriptor(o_ptr + head, seq, HEAD_DIM, BM)
    rows = start_m * BM + tl.arange(0, BM)
    q = q_desc.load([start_m * BM, 0])
    m_i = tl.full([BM], float("-inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, HEAD_DIM], tl.float32)
    # whole blocks before the diagonal (causal) or the sequence's end take no mask; the rest do
    end = tl.minimum(seq, (start_m + 1) * BM) if CAUSAL else seq
    whole = (seq // BN) * BN
    if CAUSAL:
        whole = tl.minimum(whole, start_m * BM)
    acc, l_i, m_i = attend(acc, l_i, m_i, q, k_desc, v_desc, rows, 0, whole, seq, qk_scale, CAUSAL, False,
                           WARP_SPECIALIZE, HEAD_DIM, BN)
    if not WARP_SPECIALIZE:      # (warp-specialised: a sequence of whole blocks, no masked tail)
        acc, l_i, m_i = attend(acc, l_i, m_i, q, k_desc, v_desc, rows, whole, end, seq, qk_scale, CAUSAL, True,
                               False, HEAD_DIM, BN)
    o = acc / l_i[:, None]
    o_desc.store([start_m * BM, 0], o.to(o_desc.dtype))


def build(case, inputs, outputs, stream, variant=""):
    q, k, v, o = inputs["q"], inputs["k"], inputs["v"], outputs["o"]
    b, h, seq, d = q.shape
    causal = bool(case.shape["causal"])

    def grid(meta):
        return (triton.cdiv(seq, meta["BM"]), b * h)

    def args(out):
        return (q, k, v, out, seq, LOG2E / math.sqrt(d))

    meta = {"CAUSAL": causal, "HEAD_DIM": d}
    scratch = torch.empty_like(o)
    # the kernel makes its TMA descriptors on the device, in global scratch memory Triton asks for here
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=q.device))
    if not interpreted():
        with compiling():      # every config compiled on the CPU, nothing launched
            attention_fwd.warmup(*args(scratch), **meta, grid=grid)
    with timing_kernels():     # the autotuner times the configs: the GPU alone
        attention_fwd[grid](*args(scratch), **meta)
    launch = args(o)

    def run():
        attention_fwd[grid](*launch, **meta)

    return run
