"""Attention forward in cuTile, in the idiom of its AttentionFMHA sample: a block per (query tile, head,
batch) loads its (TILE_M x D) tile of Q once and streams K and V through in TILE_N-key tiles; K is
loaded as K^T (the tile's axes swapped by `order`), so S = ct.mma(Q, K^T) into float32; an online
softmax in base 2 (the running row maximum taken on the unscaled scores, then scale * log2(e) folded
into one multiply-subtract before ct.exp2); P cast to the input dtype for ct.mma(P, V); the sum
divided out once at the end. Loads carry the sample's prefetch hints (K 2, V 4); the kernel's hint
is two consumer warpgroups (see PLAN) where the sample asks for two blocks an SM.

Features and constraints:
- any sequence length: partial tiles read zeros (PaddingMode.ZERO, so no padded V row is NaN) and
  stores are clipped; keys at or past the sequence's end score -inf;
- causal (a case constant): a query tile stops after its diagonal key tile, and the key tiles that
  cross the diagonal or the sequence's end are the only ones masked (the loop is split, as
  FlashAttention-2 splits it: whole tiles first, without a mask); the heaviest query tiles of a
  head start first (the query-tile index reversed), so the short ones fill the tail;
- key 0 is valid for every query row and its tile comes first, so a row's running maximum is finite
  from then on (never -inf - -inf);
- head_dim D is a compile-time tile extent (64 and 128 here); Q, K, V, O contiguous (B, H, S, D) of
  one 16-bit dtype; float32 scores, sums and accumulator.

Knobs (tile, hints, latency) are build() keywords so tools/knob_sweep.py can try them; PLAN holds the
defaults, chosen from the sm_90 SASS (no spills), not yet timed on the H100."""
import math

import cuda.tile as ct

LOG2E = 1.4426950408889634           # exp(x) = exp2(x * log2(e))
ConstInt, ConstBool = ct.Constant[int], ct.Constant[bool]
ZERO = ct.PaddingMode.ZERO

# head_dim -> (TILE_M, TILE_N), the kernel's hints, and the (K, V) loads' prefetch hints (0: the compiler's).
# num_worker_warps=8: 384-thread blocks, a producer and two consumer warpgroups of 64 query rows each
# (FlashAttention-3's Hopper shape; 16 HGMMA a loop body at D = 128, not 32); in the sm_90 SASS 168
# registers a thread and no spills at D = 64 or 128, where the sample's hint (occupancy=2: 256 threads
# at 128 registers) spills at D = 128 (385 STL in this kernel, 243 in the sample's own).
PLAN = {64: ((128, 128), {"num_worker_warps": 8}, (2, 4)),
        128: ((128, 128), {"num_worker_warps": 8}, (2, 4))}


def load(x, index, shape, order, latency):
    """A zero-padded tile; `latency` the prefetch hint, 0 leaving it to the compiler."""
    if latency:
        return ct.load(x, index=index, shape=shape, order=order, padding_mode=ZERO, latency=latency)
    return ct.load(x, index=index, shape=shape, order=order, padding_mode=ZERO)


def attend(acc, l_i, m_i, q_tile, k, v, batch, head, rows, lo, hi, seq, qk_scale, tm: ConstInt,
           tn: ConstInt, d: ConstInt, causal: ConstBool, masked: ConstBool, k_latency: ConstInt,
           v_latency: ConstInt):
    """Key tiles [lo, hi) into the running (acc, l_i, m_i). masked: tiles that cross the diagonal
    (causal) or the sequence's end, whose keys past either score -inf."""
    for j in range(lo, hi):
        kt = load(k, (batch, head, 0, j), (1, 1, d, tn), (0, 1, 3, 2), k_latency).reshape((d, tn))   # K^T
        s = ct.mma(q_tile, kt, ct.full((tm, tn), 0.0, dtype=ct.float32))
        if masked:
            keys = j * tn + ct.arange(tn, dtype=ct.int32)[None, :]
            valid = keys < seq
            if causal:
                valid = valid & (keys <= rows)
            s = ct.where(valid, s, -math.inf)
        m_new = max(m_i, ct.max(s, axis=-1, keepdims=True) * qk_scale)     # scale > 0: max first, then scale
        p = ct.exp2(s * qk_scale - m_new, flush_to_zero=True)
        alpha = ct.exp2(m_i - m_new, flush_to_zero=True)
        l_i = l_i * alpha + ct.sum(p, axis=-1, keepdims=True)
        vt = load(v, (batch, head, j, 0), (1, 1, tn, d), "C", v_latency).reshape((tn, d))
        acc = ct.mma(p.astype(v.dtype), vt, acc * alpha)
        m_i = m_new
    return acc, l_i, m_i


@ct.kernel
def attention_fwd(q, k, v, o, qk_scale: float, d: ConstInt, tm: ConstInt, tn: ConstInt, causal: ConstBool,
                  k_latency: ConstInt, v_latency: ConstInt):
    """Grid (query tiles, H, B); qk_scale = log2(e) / sqrt(D)."""
    tile = ct.bid(0)
    if causal:
        tile = ct.num_blocks(0) - 1 - tile          # the longest rows first; the short ones fill the tail
    head, batch = ct.bid(1), ct.bid(2)
    seq = k.shape[2]
    rows = (tile * tm + ct.arange(tm, dtype=ct.int32))[:, None]
    q_tile = load(q, (batch, head, tile, 0), (1, 1, tm, d), "C", 0).reshape((tm, d))
    m_i = ct.full((tm, 1), -math.inf, dtype=ct.float32)
    l_i = ct.full((tm, 1), 0.0, dtype=ct.float32)
    acc = ct.full((tm, d), 0.0, dtype=ct.float32)
    # key tiles [0, whole) are inside the sequence (and, causal, below this tile's first row): no mask;
    # [whole, end) reach the sequence's end or (causal) this tile's last row
    whole = seq // tn
    if causal:
        whole = min(whole, (tile * tm) // tn)
        end = ct.cdiv(min(seq, (tile + 1) * tm), tn)
    else:
        end = ct.cdiv(seq, tn)
    acc, l_i, m_i = attend(acc, l_i, m_i, q_tile, k, v, batch, head, rows, 0, whole, seq, qk_scale, tm, tn, d,
                           causal, False, k_latency, v_latency)
    acc, l_i, m_i = attend(acc, l_i, m_i, q_tile, k, v, batch, head, rows, whole, end, seq, qk_scale, tm, tn, d,
                           causal, True, k_latency, v_latency)
    out = ct.truediv(acc, l_i, flush_to_zero=True, rounding_mode=ct.RoundingMode.APPROX)
    ct.store(o, index=(batch, head, tile, 0), tile=out.astype(o.dtype).reshape((1, 1, tm, d)))


def launch_plan(b, h, s, d, causal, tile=None, hints=None, latency=None):
    """(kernel, grid, arguments after the four arrays) for a (B, H, S, D) case: PLAN, or the knobs given."""
    default_tile, default_hints, default_latency = PLAN[d]
    tm, tn = tile or default_tile
    hints = default_hints if hints is None else hints
    k_latency, v_latency = default_latency if latency is None else latency
    kernel = attention_fwd.replace_hints(**hints) if hints else attention_fwd
    return kernel, (ct.cdiv(s, tm), h, b), (LOG2E / math.sqrt(d), d, tm, tn, bool(causal), k_latency, v_latency)


def supports(case, variant=""):
    d = case.shape["D"]
    return None if d in PLAN else f"head_dim {d}: PLAN has tiles for {', '.join(map(str, PLAN))} only"


def export(case, variant, target, **knobs):
    """The case's kernel compiled ahead of time for `target` (no GPU), as the JIT would specialise it."""
    from cuda.tile.compilation import ScalarConstraint

    from backends.cutile import array_param, cubin
    shape = tuple(case.shape[n] for n in ("B", "H", "S", "D"))
    kernel, _, (_, *consts) = launch_plan(*shape, case.shape["causal"], **knobs)
    return cubin(kernel, [*[array_param(case.dtype, shape)] * 4, ScalarConstraint(ct.float32), *consts], target)


def build(case, inputs, outputs, stream, variant="", **knobs):
    import torch

    from backends.cutile import compile_on_scratch
    q, k, v, o = inputs["q"], inputs["k"], inputs["v"], outputs["o"]
    kernel, grid, args = launch_plan(*q.shape, case.shape["causal"], **knobs)
    compile_on_scratch(stream, grid, kernel, (q, k, v, torch.empty_like(o), *args))

    def run():
        ct.launch(stream, grid, kernel, (q, k, v, o, *args))

    return run
