"""Attention forward in Pallas. Default variant, Triton lowering, as Pallas's GPU attention op
(ops/gpu/attention.py) is written: a program per (block of queries, batch x head), a fori_loop over
blocks of keys with an online softmax in base 2 (the scale 1/sqrt(D) times log2(e) folded into the
scores, exp2; running maximum and sum in float32), P cast to V's dtype for the second jnp.dot, and the
op's tiles (128 x 128; 8 warps at head dim 128, 4 below; 2 stages). Masks only where a block needs one:
the key blocks wholly before a program's first query (causal), or wholly inside the sequence, run
unmasked in one loop; the rest (the diagonal band, the partial last block) in a second, masked loop,
which the causal program ends at its diagonal. Partial query blocks are masked on load and store.

mosaic_gpu (Hopper: TMA, wgmma, warp specialisation), in the structure of Pallas's FlashAttention-3
example (ops/gpu/attention_mgpu.py), written for the lab's problem:
- a block of MGPU_COMPUTE_WGS x MGPU_BLOCK_Q = 128 query rows of one (batch x head) per CUDA block, in
  three warpgroups: two compute warpgroups of 64 rows (one wgmma M tile) each, and a memory warpgroup
  (its registers given to the others by set_max_registers) that streams K and V tiles of MGPU_BLOCK_KV
  keys by TMA into a ring of MGPU_STAGES swizzled SMEM slots: a `loaded` barrier per slot (TMA
  transaction bytes) and a `free` barrier per slot that both compute warpgroups arrive on;
- per key tile: S = Q K^T by wgmma (Q from SMEM, K^T a transposed view of the K slot) into a float32
  accumulator; the scale 1/sqrt(D) times log2(e) applied in float32 (the running maximum kept in
  those log2 units, p = exp2(s * c - m)), online softmax (rescale by exp2(m_old - m_new)); P cast to
  the inputs' dtype (bf16 or fp16: every SMEM buffer takes the inputs' dtype) and O += P V by wgmma
  with P from registers; the two compute warpgroups take turns on the tensor cores (a barrier of two
  arrivals between them: one's softmax overlaps the other's matmuls);
- causal: a warpgroup's loop ends at its diagonal tile; tiles wholly below its first row skip the
  mask, the diagonal ones mask key > query; a block's memory warpgroup loads up to the last diagonal
  tile of its block, and the warpgroup that ends earlier still waits for, releases and takes its
  turns on the tiles it skips, so that the ring and the turns stay in step; query blocks are taken
  heaviest first;
- every barrier phase is awaited once by each warpgroup that waits on that barrier (the memory
  warpgroup drains the last releases), as Pallas's GPU interpreter checks;
- partial tiles: TMA zero-fills rows past S on load (K, V and Q) and drops them on store (O); the last
  key tile masks keys >= S (under a causal mask, key <= query < S masks them already).
Constraints: D a multiple of 64 (one 128-byte swizzle row) and S a multiple of 8: Mosaic GPU tiles
the (S, D) GMEM view in (8, 64) tiles for its swizzled TMA and takes no partial 8-row tile (supports).
The grid is (B*H, query blocks), query blocks fastest: the blocks of one head run together and share
its K and V in L2. In Pallas's GPU interpreter (JAX >= 0.11) P V is a jnp.dot: the interpreter has no
run_state (an accumulator set from a value) and no wgmma operand in registers."""
import functools
import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from problems.base import DTYPES
from backends.jax_pallas import compiled_call, interpret_param, interpreted

MGPU_BLOCK_Q = 64           # query rows of a compute warpgroup: one wgmma M tile
MGPU_COMPUTE_WGS = 2        # compute warpgroups of a CUDA block (+ one memory warpgroup)
MGPU_BLOCK_KV = 128         # keys of a K/V tile
MGPU_STAGES = 2             # K/V tiles in flight (SMEM at D 128: 2 x 64 KiB + 32 KiB for Q/O)
COMPUTE_REGISTERS = 232     # per thread, set_max_registers: the compute warpgroups take ...
MEMORY_REGISTERS = 40       # ... what the memory warpgroup, which only issues TMA, gives up
SWIZZLE = 128               # bytes: a swizzle row is 64 fp16/bf16, so D must be a multiple of 64
TMA_ROWS = 8                # Mosaic GPU's tiling transform: (8 rows, SWIZZLE bytes)
LOG2E = math.log2(math.e)


def supports(case, variant=""):
    """Mosaic GPU tiles the (S, D) view of each head in (8, 64) tiles for its swizzled TMA copies and
    takes no partial tile (launch_context.TileTransform: no rounding up), so S % 8 != 0 (the test
    cases S = 1, 17, 127) is not applicable; S = 1000 (a partial 128-key tile of whole 8-row tiles) is."""
    if variant != "mosaic_gpu":
        return None
    swizzle_elems = SWIZZLE // DTYPES[case.dtype].itemsize
    if case.shape["D"] % swizzle_elems:
        return f"Mosaic GPU: swizzled TMA tiles need D % {swizzle_elems} == 0"
    if case.shape["S"] % TMA_ROWS:
        return f"Mosaic GPU: swizzled TMA tiles take whole {TMA_ROWS}-row tiles only (S % {TMA_ROWS} != 0)"
    return None


def config(head_dim):
    """(BM, BN, num_warps, num_stages): ops/gpu/attention.py's BlockSizes.get_default() and mha()'s
    num_warps and num_stages."""
    if interpreted():
        return 16, 16, 4, 1
    return (128, 128, 8, 2) if head_dim > 64 else (128, 128, 4, 2)


def attention_triton(q_ref, k_ref, v_ref, o_ref, *, bm, bn, causal):
    from jax.experimental.pallas import triton as plgpu
    seq, head_dim = q_ref.shape[1], q_ref.shape[2]
    head, start = pl.program_id(1), pl.program_id(0) * bm
    rows = start + jnp.arange(bm)
    q = plgpu.load(q_ref.at[head, pl.ds(start, bm), :], mask=(rows < seq)[:, None], other=0.0)
    scale = LOG2E / math.sqrt(head_dim)          # scores in base-2 units: exp(x) = exp2(x * log2(e))

    def step(j, carry, masked):
        m_i, l_i, acc = carry
        keys = j * bn + jnp.arange(bn)
        inside = (keys < seq)[:, None] if masked else None
        k = plgpu.load(k_ref.at[head, pl.ds(j * bn, bn), :], mask=inside, other=0.0 if masked else None)
        s = jnp.dot(q, k.T, preferred_element_type=jnp.float32) * scale
        if masked:
            keep = (keys < seq)[None, :]
            if causal:
                keep = keep & (keys[None, :] <= rows[:, None])
            s = jnp.where(keep, s, -jnp.inf)
        m_new = jnp.maximum(m_i, s.max(axis=1))
        alpha = jnp.exp2(m_i - m_new)
        p = jnp.exp2(s - m_new[:, None])
        v = plgpu.load(v_ref.at[head, pl.ds(j * bn, bn), :], mask=inside, other=0.0 if masked else None)
        acc = acc * alpha[:, None] + jnp.dot(p.astype(v.dtype), v, preferred_element_type=jnp.float32)
        return m_new, l_i * alpha + p.sum(axis=1), acc

    # key blocks [0, whole) need no mask: inside the sequence, and (causal) before the first query
    whole = jnp.minimum(seq, start) // bn if causal else seq // bn
    end = pl.cdiv(jnp.minimum(seq, start + bm), bn) if causal else pl.cdiv(seq, bn)
    init = (jnp.full((bm,), -jnp.inf, jnp.float32), jnp.zeros((bm,), jnp.float32),
            jnp.zeros((bm, head_dim), jnp.float32))
    carry = lax.fori_loop(0, whole, functools.partial(step, masked=False), init)
    _, l_i, acc = lax.fori_loop(whole, end, functools.partial(step, masked=True), carry)
    plgpu.store(o_ref.at[head, pl.ds(start, bm), :], (acc / l_i[:, None]).astype(o_ref.dtype),
                mask=(rows < seq)[:, None])


def attention_mgpu(q_gmem, k_gmem, v_gmem, o_gmem, qo_smem2, k_smem, v_smem,
                   q_loaded, k_loaded, v_loaded, k_free, v_free, turn, *, causal, stages):
    """One CUDA block: 128 query rows of one (batch x head); warpgroups 0 and 1 compute, 2 loads."""
    from jax.experimental.pallas import mosaic_gpu as plgpu
    seq, head_dim = q_gmem.shape[1:]
    dtype, bq, bkv = q_gmem.dtype, MGPU_BLOCK_Q, MGPU_BLOCK_KV
    rows_per_block = MGPU_COMPUTE_WGS * bq
    bh, wg = lax.axis_index("bh"), lax.axis_index("wg")
    q_block = lax.axis_index("q")
    if causal:          # the heaviest blocks (most key tiles) first
        q_block = pl.cdiv(seq, rows_per_block) - 1 - q_block
    block_start = q_block * rows_per_block

    def i32(x):
        return jnp.asarray(x, jnp.int32)

    def tiles_to(end):      # key tiles that hold keys [0, end)
        return lax.div(end + (bkv - 1), i32(bkv))

    def slot_of(step):
        return lax.rem(step, i32(stages))

    # key tiles this block loads: all of them, or up to the diagonal of its last row
    block_steps = tiles_to(jnp.minimum(block_start + rows_per_block, seq)) if causal else pl.cdiv(seq, bkv)

    def take_turn():         # the two compute warpgroups alternate on the tensor cores
        plgpu.barrier_arrive(turn)
        plgpu.barrier_wait(turn)

    @pl.when(wg < MGPU_COMPUTE_WGS)
    def _compute():
        plgpu.set_max_registers(COMPUTE_REGISTERS, action="increase")
        qo_smem = qo_smem2.at[wg]
        q_start = block_start + wg * bq
        steps = tiles_to(jnp.minimum(q_start + bq, seq)) if causal else block_steps
        plgpu.copy_gmem_to_smem(q_gmem.at[bh, pl.ds(q_start, bq)], qo_smem, q_loaded.at[wg])
        plgpu.barrier_wait(q_loaded.at[wg])
        scale = LOG2E / math.sqrt(head_dim)     # applied in float32 to the scores
        rows_layout = plgpu.Layout.WGMMA.reduce(1)
        m_i = plgpu.layout_cast(jnp.full((bq,), -jnp.inf, jnp.float32), rows_layout)
        l_i = plgpu.layout_cast(jnp.full((bq,), 0.0, jnp.float32), rows_layout)
        acc = plgpu.layout_cast(jnp.full((bq, head_dim), 0.0, jnp.float32), plgpu.Layout.WGMMA)
        plgpu.barrier_wait(k_loaded.at[0])          # steps >= 1: every row sees key 0
        pl.when(wg == 1)(take_turn)

        def kv_step(step, carry, mask=None):
            acc, m_i, l_i = carry
            slot = slot_of(step)

            def scores(s_ref):
                plgpu.wgmma(s_ref, qo_smem, k_smem.at[slot].transpose((1, 0)))
                take_turn()
                return s_ref[...]

            s = pl.run_scoped(scores, plgpu.ACC((bq, bkv), jnp.float32))
            plgpu.barrier_arrive(k_free.at[slot])
            if mask is not None:
                keys = step * bkv + plgpu.broadcasted_iota(jnp.int32, s.shape, 1, layout=plgpu.Layout.WGMMA)
                if mask == "causal":
                    rows = q_start + plgpu.broadcasted_iota(jnp.int32, s.shape, 0, layout=plgpu.Layout.WGMMA)
                    keep = keys <= rows
                else:                                   # "bounds": the last, partial key tile
                    keep = keys < seq
                s = jnp.where(keep, s, -jnp.inf)
            m_new = jnp.maximum(m_i, s.max(axis=1) * scale)
            alpha = jnp.exp2(m_i - m_new)
            p = jnp.exp2(s * scale - lax.broadcast_in_dim(m_new, s.shape, [0]))
            acc = acc * lax.broadcast_in_dim(alpha, acc.shape, [0])
            l_i = l_i * alpha + p.sum(axis=1)
            p = p.astype(dtype)
            # keep the softmax before the hand-over (the example's ordering for D <= 128)
            acc, m_new, l_i, p = lax.optimization_barrier((acc, m_new, l_i, p))
            plgpu.barrier_arrive(turn)                  # softmax done
            plgpu.barrier_wait(v_loaded.at[slot])
            plgpu.barrier_wait(turn)                    # the tensor cores are ours

            def wait_next_k():      # the next K tile, while this P V runs
                nxt = step + 1
                pl.when(nxt < steps)(lambda: plgpu.barrier_wait(k_loaded.at[slot_of(nxt)]))

            def values(o_ref):      # O itself is the accumulator: wgmma adds P V to it
                plgpu.wgmma(o_ref, p, v_smem.at[slot])
                wait_next_k()

            if interpreted():       # Pallas's GPU interpreter has no run_state and no wgmma operand in registers
                acc = acc + jnp.dot(p, v_smem.at[slot][...], preferred_element_type=jnp.float32)
                wait_next_k()
            else:
                acc = pl.run_state(values)(plgpu.ACC.init(acc))
            plgpu.barrier_arrive(v_free.at[slot])
            return acc, m_new, l_i

        carry = (acc, m_i, l_i)
        if causal:
            unmasked = jnp.minimum(lax.div(q_start, i32(bkv)), steps)   # tiles wholly below row q_start
            carry = lax.fori_loop(0, unmasked, kv_step, carry)
            carry = lax.fori_loop(unmasked, steps, functools.partial(kv_step, mask="causal"), carry)

            @pl.loop(steps, block_steps)
            def _skipped(step):      # the other warpgroup's tiles: see each arrive, release it, keep the turns
                slot = slot_of(step)
                plgpu.barrier_wait(k_loaded.at[slot])
                plgpu.barrier_arrive(k_free.at[slot])
                take_turn()
                plgpu.barrier_wait(v_loaded.at[slot])
                plgpu.barrier_arrive(v_free.at[slot])
                take_turn()
        else:
            carry = lax.fori_loop(0, seq // bkv, kv_step, carry)
            if seq % bkv:        # a loop of one step: its index traced (JAX 0.11.2 refuses a constant here)
                carry = lax.fori_loop(seq // bkv, seq // bkv + 1, functools.partial(kv_step, mask="bounds"), carry)
        acc, m_i, l_i = carry
        pl.when(wg == 0)(take_turn)
        acc = acc / lax.broadcast_in_dim(l_i, acc.shape, [0])
        qo_smem[...] = acc.astype(dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(qo_smem, o_gmem.at[bh, pl.ds(q_start, bq)])    # rows >= S dropped
        plgpu.wait_smem_to_gmem(0)

    @pl.when(wg == MGPU_COMPUTE_WGS)
    def _memory():
        plgpu.set_max_registers(MEMORY_REGISTERS, action="decrease")

        @pl.loop(0, block_steps)
        def _load(step):    # a traced index: Pallas refuses a constant slice start past S, TMA does not
            slot, keys = slot_of(step), pl.ds(step * bkv, bkv)
            refill = step >= stages     # the slot's last tile must be released by both compute warpgroups
            pl.when(refill)(lambda: plgpu.barrier_wait(k_free.at[slot]))
            plgpu.copy_gmem_to_smem(k_gmem.at[bh, keys], k_smem.at[slot], k_loaded.at[slot])
            pl.when(refill)(lambda: plgpu.barrier_wait(v_free.at[slot]))
            plgpu.copy_gmem_to_smem(v_gmem.at[bh, keys], v_smem.at[slot], v_loaded.at[slot])

        @pl.loop(jnp.maximum(block_steps - stages, 0), block_steps)
        def _drain(step):   # the last tiles' releases: every phase of every barrier is awaited once
            plgpu.barrier_wait(k_free.at[slot_of(step)])
            plgpu.barrier_wait(v_free.at[slot_of(step)])


def attention_mosaic(q, k, v, *, causal, variant):
    from jax.experimental.pallas import mosaic_gpu as plgpu
    b, h, seq, head_dim = q.shape
    q3, k3, v3 = (x.reshape(b * h, seq, head_dim) for x in (q, k, v))
    stages = min(MGPU_STAGES, pl.cdiv(seq, MGPU_BLOCK_KV))
    elems = SWIZZLE // q.dtype.itemsize
    transforms = (plgpu.TilingTransform((TMA_ROWS, elems)), plgpu.SwizzleTransform(SWIZZLE))
    wgs = MGPU_COMPUTE_WGS
    scratch = [
        plgpu.SMEM((wgs, MGPU_BLOCK_Q, head_dim), q.dtype, transforms=transforms),     # Q, then O
        plgpu.SMEM((stages, MGPU_BLOCK_KV, head_dim), q.dtype, transforms=transforms),  # K ring
        plgpu.SMEM((stages, MGPU_BLOCK_KV, head_dim), q.dtype, transforms=transforms),  # V ring
        plgpu.Barrier(num_barriers=wgs),                          # Q loaded
        plgpu.Barrier(num_barriers=stages),                       # K slot loaded (TMA bytes)
        plgpu.Barrier(num_barriers=stages),                       # V slot loaded
        plgpu.Barrier(num_arrivals=wgs, num_barriers=stages),     # K slot free
        plgpu.Barrier(num_arrivals=wgs, num_barriers=stages),     # V slot free
        plgpu.Barrier(num_arrivals=wgs),                          # tensor-core turns
    ]
    o = plgpu.kernel(
        functools.partial(attention_mgpu, causal=causal, stages=stages),
        out_type=jax.ShapeDtypeStruct(q3.shape, q3.dtype),
        grid=(b * h, pl.cdiv(seq, wgs * MGPU_BLOCK_Q)), grid_names=("bh", "q"),
        num_threads=wgs + 1, thread_name="wg", scratch_types=scratch,
        compiler_params=plgpu.CompilerParams(approx_math=True),
        interpret=interpret_param(variant) or None)(q3, k3, v3)
    return o.reshape(q.shape)


def attention(q, k, v, *, causal, variant, tiles=None):
    if variant == "mosaic_gpu":
        return attention_mosaic(q, k, v, causal=causal, variant=variant)
    from jax.experimental.pallas import triton as plgpu
    b, h, seq, head_dim = q.shape
    bm, bn, warps, stages = tiles or config(head_dim)
    q3, k3, v3 = (x.reshape(b * h, seq, head_dim) for x in (q, k, v))
    o = pl.pallas_call(
        functools.partial(attention_triton, bm=bm, bn=bn, causal=causal),
        out_shape=jax.ShapeDtypeStruct(q3.shape, q3.dtype), grid=(pl.cdiv(seq, bm), b * h),
        compiler_params=plgpu.CompilerParams(num_warps=warps, num_stages=stages),
        interpret=interpret_param(variant))(q3, k3, v3)
    return o.reshape(q.shape)


def specs(case):
    from backends.jax_pallas import jax_dtype
    shape = tuple(case.shape[d] for d in ("B", "H", "S", "D"))
    fn = functools.partial(attention, causal=bool(case.shape["causal"]))
    return fn, [jax.ShapeDtypeStruct(shape, jax_dtype(case.dtype))] * 3


def build(case, inputs, outputs, stream, variant="", tiles=None):
    """`tiles`: (BM, BN, num_warps, num_stages) for the Triton lowering, config()'s unless given."""
    fn = functools.partial(attention, causal=bool(case.shape["causal"]), variant=variant, tiles=tiles)
    return compiled_call(fn, "o", inputs["q"], inputs["k"], inputs["v"])
