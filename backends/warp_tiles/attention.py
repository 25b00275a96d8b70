"""Attention forward in Warp tiles: FlashAttention-2's loop written with Warp's tile primitives (Warp
has no attention example; its tile MLP example chains tile_matmul, tile_broadcast and tile_map the
same way, in one kernel).
- A block per (BM queries, batch, head) loads Q's (BM x D) tile once into shared memory, then walks
  the keys in (BN x D) tiles of K and V (tile_load reads zeros past the sequence's end).
- S = Q K^T * scale: tile_matmul(Q, tile_transpose(K), S, alpha=scale, beta=0) into a float32 tile.
- The mask: a tile_map over S and two broadcast index tiles (each score's query row and key column
  in the block) sets keys past the sequence's end, and in a causal case keys after the query, to -inf.
- The online softmax in row-wise tile ops: the block's row maxima by tile_reduce(wp.max, axis=1), the
  running maximum m and sum l as (BM,) tiles, P = exp(S - m) by a tile_map against m broadcast along
  the rows (tile_reshape to (BM, 1), tile_broadcast to (BM, BN)), l = l * exp(m_old - m) + tile_sum(P, axis=1).
- P cast to the input dtype (as tensor-core kernels feed it) times V by tile_matmul into a float32
  (BM x D) tile; the running output acc = acc * exp(m_old - m) + P V by a tile_map; at the end O = acc / l,
  cast and stored (tile_store drops the rows past the sequence's end).
- A causal block stops after the key block that holds its last query (the diagonal).
Any sequence length and head dim (one tile spans D). Every key block goes through the mask (one
elementwise pass over S; no separate unmasked loop). Every query row, padded ones too, sees key 0, so
the running maximum is finite after the first block and no exp(-inf - -inf) arises.

Warp's idiom, not a tuned kernel: tile_matmul takes its operands and writes its result in shared
memory, and the row reductions and broadcasts go through it too; the float32 tiles S, S masked and P
and the (BM x D) product take most of it (138 KB at 64 x 64 tiles and head dim 128: one block a
multiprocessor; 64 x 32 tiles, under 100 KB, two: twice as fast on the H100, tools/warp_tiles_sweep.py
attention, reports/evidence/attention/h100/sweeps/warp.json)."""
import functools
import math
from typing import NamedTuple

import warp as wp

from backends.base import compiling
from backends.warp_tiles import warp_dtype


class Plan(NamedTuple):
    bm: int                # queries a block owns
    bn: int                # keys a step of the loop takes
    block_dim: int


# per head dim: at 128 the sweep's best on the H100 (64 x 32: 3.5% of cuDNN against 1.7 at 64 x 64); at 64
# FlashAttention-2's 64 x 64 blocks, two a multiprocessor already (98 KB a block), not swept
BEST = {64: Plan(64, 64, 128), 128: Plan(64, 32, 128)}
DEFAULT = Plan(64, 64, 128)


@functools.cache
def attention_kernel(dtype, head_dim: int, causal: bool, plan: Plan):
    BM, BN, D = plan.bm, plan.bn, head_dim
    SCALE = wp.float32(1.0 / math.sqrt(D))
    CAUSAL = causal

    @wp.func
    def masked(s: wp.float32, row: int, col: int, q0: int, k0: int, seq: int):
        """s, or -inf where key k0 + col is past the sequence's end or (causal) after query q0 + row."""
        end = seq
        if wp.static(CAUSAL):
            end = wp.min(seq, q0 + row + 1)
        return wp.where(k0 + col < end, s, -wp.inf)

    @wp.func
    def exp_minus(x: wp.float32, m: wp.float32):
        return wp.exp(x - m)

    @wp.func
    def rescale_add(acc: wp.float32, factor: wp.float32, x: wp.float32):
        return acc * factor + x

    @wp.kernel(module="unique", module_options={"enable_backward": False})
    def attention(q: wp.array4d[dtype], k: wp.array4d[dtype], v: wp.array4d[dtype], o: wp.array4d[dtype]):
        # Warp 1.19 leaves a @wp.func that is only passed to tile_map out of the kernel's cache hash (an
        # edit to it would load the stale binary); bound to locals here, they are hashed
        mask_op, exp_op, rescale_op = masked, exp_minus, rescale_add
        i, b, h = wp.tid()
        seq = q.shape[2]
        q0 = i * BM
        qh, kh, vh, oh = q[b, h], k[b, h], v[b, h], o[b, h]          # this head's (S, D) arrays
        qt = wp.tile_load(qh, shape=(BM, D), offset=(q0, 0), storage="shared")
        # (BM, BN) views of each score's query row and key column inside the block
        rows = wp.tile_broadcast(wp.tile_reshape(wp.tile_arange(BM, dtype=int, storage="shared"), shape=(BM, 1)),
                                 shape=(BM, BN))
        cols = wp.tile_broadcast(wp.tile_arange(BN, dtype=int, storage="shared"), shape=(BM, BN))
        m = wp.tile_full(shape=BM, value=-wp.inf, dtype=wp.float32)       # running row maximum
        total = wp.tile_zeros(shape=BM, dtype=wp.float32)                 # running row sum of exp(s - m)
        acc = wp.tile_zeros(shape=(BM, D), dtype=wp.float32)              # running P V (registers)
        s = wp.tile_empty(shape=(BM, BN), dtype=wp.float32, storage="shared")
        pv = wp.tile_empty(shape=(BM, D), dtype=wp.float32, storage="shared")
        end = seq
        if wp.static(CAUSAL):
            end = wp.min(seq, q0 + BM)            # the key block holding the block's last query is the last
        for k0 in range(0, end, BN):
            kt = wp.tile_load(kh, shape=(BN, D), offset=(k0, 0), storage="shared")
            wp.tile_matmul(qt, wp.tile_transpose(kt), s, alpha=SCALE, beta=wp.float32(0.0))
            sm = wp.tile_map(mask_op, s, rows, cols, q0, k0, seq)
            m_new = wp.tile_map(wp.max, m, wp.tile_reduce(wp.max, sm, axis=1))
            corr = wp.tile_map(exp_op, m, m_new)       # exp(m_old - m_new): 0 at the first block
            p = wp.tile_map(exp_op, sm, wp.tile_broadcast(wp.tile_reshape(m_new, shape=(BM, 1)), shape=(BM, BN)))
            total = wp.tile_map(rescale_op, total, corr, wp.tile_sum(p, axis=1))
            vt = wp.tile_load(vh, shape=(BN, D), offset=(k0, 0), storage="shared")
            wp.tile_matmul(wp.tile_astype(p, dtype), vt, pv, beta=wp.float32(0.0))
            acc = wp.tile_map(rescale_op, acc, wp.tile_broadcast(wp.tile_reshape(corr, shape=(BM, 1)), shape=(BM, D)),
                              pv)
            m = m_new
        out = wp.tile_map(wp.div, acc, wp.tile_broadcast(wp.tile_reshape(total, shape=(BM, 1)), shape=(BM, D)))
        wp.tile_store(oh, wp.tile_astype(out, dtype), offset=(q0, 0))

    return attention


def plan_of(case):
    return BEST.get(case.shape["D"], DEFAULT)


def kernels(case, plan=None):
    """The (kernel, block_dim) pairs build() launches, for compiling ahead."""
    p = plan or plan_of(case)
    return [(attention_kernel(warp_dtype(case.dtype), case.shape["D"], bool(case.shape["causal"]), p), p.block_dim)]


def build(case, inputs, outputs, stream, variant="", plan=None):
    q, k, v, o = inputs["q"], inputs["k"], inputs["v"], outputs["o"]
    b, h, seq, _ = q.shape
    p = plan or plan_of(case)
    [(kernel, _)] = kernels(case, p)
    with compiling():          # compile now (CPU work), not in launch_tiled holding the GPU nor at the first call
        wp.load_module(kernel.module, device=q.device, block_dim=p.block_dim)
    launch = wp.launch_tiled(kernel, dim=(-(-seq // p.bm), b, h), inputs=[q, k, v, o], block_dim=p.block_dim,
                             device=q.device, record_cmd=True)

    def run():
        launch.launch(stream=stream)

    return run
