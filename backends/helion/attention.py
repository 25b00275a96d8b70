"""Attention forward in Helion, after its attention example (examples/attention.py): a tile of query
rows per program, an inner loop over tiles of keys with an online softmax in exp2, P cast to V's dtype
for the second product into a float32 accumulator.

Where the lab's kernel parts from the example: one (batch, head) a program (block size 1 on that
dimension, indexed by its begin, as Helion's jagged HSTU example indexes its heads), so both products
are 2-D `hl.dot`s (the example's batched ones are reshapes that Triton 3.6's layout pass refuses for
pipelined 64-key tiles); the scores are scaled in float32 after the first product (the example scales
Q in its 16-bit dtype, a rounding of every score that the check's bound leaves no room for); keys past
the sequence are masked to -inf (Helion masks its reductions over a partial tile but not the product:
a padded key's score is 0, and in a row whose scores are all far below zero its exp2 overflows and
meets V's zero padding as inf * 0); causal, the keys are two loops, as Triton's fused-attention
tutorial splits them: the tiles before the query tile's diagonal band with no mask, then the band
itself (to tile_m.end, as the HSTU example bounds its loop) masking keys after each query, instead of
visiting and masking every tile of keys as the example does. (Not causal: one loop, masked past S.)"""
import math

import helion
import helion.language as hl
import torch

from backends.helion import effort, interpreted, prepared

LOG2E = 1.4426950408889634
STAGES = 3              # key tiles in flight on a GPU
CAUSAL_STAGES = 4       # in the causal kernel's two loops at head dim 128


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, causal: hl.constexpr) -> None:
    seq, head_dim = q.size(-2), hl.specialize(q.size(-1))
    q_view, k_view, v_view, o_view = (t.reshape([-1, seq, head_dim]) for t in (q, k, v, o))
    qk_scale = LOG2E / math.sqrt(head_dim)          # scores in log2 units: exp2 below
    for tile_bh, tile_m in hl.tile([q_view.size(0), seq], block_size=[1, None]):
        bh = tile_bh.begin                          # one (batch, head) a program: 2-D tiles below
        m_i = hl.full([tile_m], float("-inf"), dtype=torch.float32)
        l_i = hl.zeros([tile_m], dtype=torch.float32)
        acc = hl.zeros([tile_m, head_dim], dtype=torch.float32)
        q_tile = q_view[bh, tile_m, :]
        # the online-softmax step is written out in both key loops: Helion 1.5.0 fails to lower a helper
        # function called from them (InductorLoweringError on aten.slice of the running maximum)
        if causal:                                  # the keys before this tile's diagonal band
            for tile_n in hl.tile(tile_m.begin):
                s = hl.dot(q_tile, k_view[bh, tile_n, :].T, out_dtype=torch.float32) * qk_scale
                m_new = torch.maximum(m_i, torch.amax(s, -1))
                p = torch.exp2(s - m_new[:, None])
                alpha = torch.exp2(m_i - m_new)
                l_i = l_i * alpha + torch.sum(p, -1)
                v_tile = v_view[bh, tile_n, :]
                acc = hl.dot(p.to(v_tile.dtype), v_tile, acc=acc * alpha[:, None])
                m_i = m_new
        for tile_n in hl.tile(tile_m.begin if causal else 0, tile_m.end if causal else seq):    # masked
            s = hl.dot(q_tile, k_view[bh, tile_n, :].T, out_dtype=torch.float32) * qk_scale
            keys = tile_n.index[None, :]
            seen = keys <= tile_m.index[:, None] if causal else keys < seq
            s = torch.where(seen, s, float("-inf"))
            m_new = torch.maximum(m_i, torch.amax(s, -1))
            p = torch.exp2(s - m_new[:, None])
            alpha = torch.exp2(m_i - m_new)
            l_i = l_i * alpha + torch.sum(p, -1)
            v_tile = v_view[bh, tile_n, :]
            acc = hl.dot(p.to(v_tile.dtype), v_tile, acc=acc * alpha[:, None])
            m_i = m_new
        o_view[bh, tile_m, :] = (acc / l_i[:, None]).to(o.dtype)


def fixed(head_dim, causal):
    """block_sizes: query rows a program, then keys a step in each key loop (causal: two loops; the
    (batch, head) dimension is 1 a program); the query tile must be a whole number of key tiles, so
    that the causal loop before the diagonal sees no partial tile. On a GPU 128 queries and 64 keys
    in 3 stages; at head dim 128 8 warps and TMA loads (Helion's tensor descriptors: 65-66% of cuDNN
    on the H200 against 61% with 4 warps, and 47% in 2 stages; the same config is the best on the H100,
    59%; tools/knob_sweep.py helion attention, reports/evidence/attention); causal, 4 stages (H100 60.5%
    against 58.1 in 3, H200 64.9 against 65.3); at 64 the Hopper shape of the lab's Triton attention (4
    warps, pointer loads). In the interpreter a few small tiles, so that the test cases' sequences end
    inside a tile."""
    queries, keys = (64, 32) if interpreted() else (128, 64)
    block_sizes = [queries] + [keys] * (2 if causal else 1)
    if interpreted():
        return helion.Config(block_sizes=block_sizes, num_warps=4, num_stages=1)
    if head_dim >= 128:
        return helion.Config(block_sizes=block_sizes, num_warps=8, num_stages=CAUSAL_STAGES if causal else STAGES,
                             indexing="tensor_descriptor")
    return helion.Config(block_sizes=block_sizes, num_warps=4, num_stages=STAGES)


def supports(case, variant=""):
    if interpreted() and case.dtype == "bfloat16":
        return "Triton interpreter: it mishandles bf16 tl.dot (multiplies the bits as integers)"
    return None


def build(case, inputs, outputs, stream, variant="", config=None):
    kernel = helion.kernel(attention, autotune_effort=effort(), static_shapes=True)
    q, k, v, o = inputs["q"], inputs["k"], inputs["v"], outputs["o"]
    causal = bool(case.shape["causal"])
    return prepared(kernel, (q, k, v, o, causal), (q, k, v, torch.empty_like(o), causal),
                    config or fixed(q.shape[-1], causal), variant)
