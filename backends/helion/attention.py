"""Attention forward in Helion, as its attention example (examples/attention.py) writes it: a tile of
(batch x head) rows and of query rows per program, an inner loop over tiles of keys with an online
softmax in exp2, P cast to V's dtype for the second product into a float32 accumulator.

Where the lab's kernel parts from the example: the scores are scaled in float32 after the first
product (the example scales Q in its 16-bit dtype, a rounding of every score that the check's bound
leaves no room for); keys past the sequence are masked to -inf (Helion masks its reductions over a
partial tile but not the product: a padded key's score is 0, and in a row whose scores are all far
below zero its exp2 overflows and meets V's zero padding as inf * 0); causal, a query tile's loop
ends at its last key (tile_m.end, as Helion's jagged HSTU example bounds its loop) instead of
visiting every tile of keys as the example does, and masks keys after each query."""
import math

import helion
import helion.language as hl
import torch

from backends.helion import effort, interpreted, prepared

LOG2E = 1.4426950408889634


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, causal: hl.constexpr) -> None:
    seq, head_dim = q.size(-2), hl.specialize(q.size(-1))
    q_view, k_view, v_view, o_view = (t.reshape([-1, seq, head_dim]) for t in (q, k, v, o))
    qk_scale = LOG2E / math.sqrt(head_dim)          # scores in log2 units: exp2 below
    for tile_b, tile_m in hl.tile([q_view.size(0), seq]):
        m_i = hl.full([tile_b, tile_m], float("-inf"), dtype=torch.float32)
        l_i = hl.zeros([tile_b, tile_m], dtype=torch.float32)
        acc = hl.zeros([tile_b, tile_m, head_dim], dtype=torch.float32)
        q_tile = q_view[tile_b, tile_m, :]
        for tile_n in hl.tile(tile_m.end if causal else seq):
            k_tile = k_view[tile_b, tile_n, :]
            s = hl.dot(q_tile, k_tile.transpose(1, 2), out_dtype=torch.float32) * qk_scale
            keys = tile_n.index[None, None, :]
            seen = keys <= tile_m.index[None, :, None] if causal else keys < seq
            s = torch.where(seen, s, float("-inf"))
            m_new = torch.maximum(m_i, torch.amax(s, -1))
            p = torch.exp2(s - m_new[:, :, None])
            alpha = torch.exp2(m_i - m_new)
            l_i = l_i * alpha + torch.sum(p, -1)
            v_tile = v_view[tile_b, tile_n, :]
            acc = hl.dot(p.to(v_tile.dtype), v_tile, acc=acc * alpha[:, :, None])
            m_i = m_new
        o_view[tile_b, tile_m, :] = (acc / l_i[:, :, None]).to(o.dtype)


def fixed(head_dim):
    """block_sizes: (batch x head) rows and query rows a program, keys a step. On a GPU 128 queries a
    program; for head_dim 64 the Hopper shapes of the lab's Triton attention (64 keys, 3 stages, 4 warps);
    for 128, tiles of 128 keys in 2 stages and 8 warps: with 64-key tiles pipelined, Triton 3.6 fails an
    assertion in its layout pass (LinearLayout::reshapeOuts) on the reshapes Helion wraps its batched
    products in. In the interpreter a query tile smaller than a key tile, so that a causal loop's last
    tile of keys is cut at tile_m.end."""
    if interpreted():
        return helion.Config(block_sizes=[1, 32, 64], num_warps=4, num_stages=1)
    if head_dim >= 128:
        return helion.Config(block_sizes=[1, 128, 128], num_warps=8, num_stages=2)
    return helion.Config(block_sizes=[1, 128, 64], num_warps=4, num_stages=3)


def supports(case, variant=""):
    if interpreted() and case.dtype == "bfloat16":
        return "Triton interpreter: it mishandles bf16 tl.dot (multiplies the bits as integers)"
    return None


def build(case, inputs, outputs, stream, variant=""):
    kernel = helion.kernel(attention, autotune_effort=effort(), static_shapes=True)
    q, k, v, o = inputs["q"], inputs["k"], inputs["v"], outputs["o"]
    causal = bool(case.shape["causal"])
    return prepared(kernel, (q, k, v, o, causal), (q, k, v, torch.empty_like(o), causal), fixed(q.shape[-1]),
                    variant)
