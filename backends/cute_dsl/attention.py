"""Attention forward on Hopper (sm_90a) in CuTe DSL, FlashAttention-3's way: TMA loads, warpgroup MMAs
(wgmma) with fp32 accumulators, warp specialization, and the score tile never leaving registers.

One CTA takes BLOCK_M = 128 query rows of one (batch, head) and is 3 warpgroups:
- warpgroup 0, the producer: gives its registers back (setmaxnreg) and its warp 0 issues every TMA
  load, Q once (two 64-row slabs) and then K and V tiles of BLOCK_N keys into two rings of `stages`
  shared-memory slots each (PipelineTmaAsync: "full" barriers completed by the TMA's bytes, "empty"
  barriers arrived by the consumers). Keys are walked from the last tile down, so the only tile that
  needs a mask (the last, partial one; under `causal`, the diagonal one: with BLOCK_M == BLOCK_N these
  are one tile) comes first and every later tile runs unmasked.
- warpgroups 1 and 2, the consumers: each owns one 64-row slab of the query tile (m64nNk16 wgmma).
  S = Q K^T is an SS wgmma (both operands in shared memory) into 64 x BLOCK_N fp32 registers; the
  online softmax (running row maximum and sum, exp2 with scale * log2(e) folded into one FFMA) turns S
  into P in place; P is cast to the input dtype and, as registers, is the A operand of an RS wgmma
  O += P V (V read MN-major from shared memory: the lab's V rows are its K dimension).
  Two overlaps hide the softmax behind the tensor cores: within a warpgroup, the scores of tile j+1
  are issued together with the P V of tile j, and the softmax of j+1 runs while that P V finishes;
  between the two warpgroups, a pair of named barriers makes them take turns issuing their MMAs
  (ping-pong), so one's softmax runs under the other's MMAs.
- The epilogue: O / rowsum, cast, each consumer warpgroup writes its slab to shared memory (stmatrix)
  and one of its warps stores it with a TMA store.

Any sequence length: the sequence extent is a run-time value (a static extent of 1 would drop the
mode from the TMA copies); TMA zero-fills rows past S on loads (Q rows past S are computed and never
stored, K/V rows past S are masked to -inf in the scores) and clips them on stores. Causal launches
the query tiles longest-first.
Constraints: Q, K, V, O contiguous (B, H, S, D), one 16-bit type (bf16 or fp16); head_dim 64 or 128
(HEAD_DIMS: a consumer thread holds 64 x D fp32 of O, 64 x BLOCK_N fp32 of S and P in 240 registers, and
shared memory holds Q, O and the two rings; D = 256 would need narrower key tiles); Hopper only (wgmma,
setmaxnreg, the sm_90a target). Knob: `stages` (K/V ring depth, STAGES by head_dim).
"""
import math

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90
from cutlass import Float32, Int32, const_expr
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.memory import SmemAllocator
from cutlass.tensor_utils import LayoutEnum

from backends.cute_dsl import compile_once, device_arch, launcher

LOG2E = 1.4426950408889634
FLT_MAX = 3.4028234663852886e38
WG = 128                     # threads per warpgroup
SLAB = 64                    # query rows per consumer warpgroup (the wgmma M)
CONSUMER_WGS = 2
BLOCK_M = SLAB * CONSUMER_WGS  # query rows per CTA
BLOCK_N = 128                # keys per K/V tile; == BLOCK_M, so at most one tile per CTA is masked
HEAD_DIMS = (64, 128)
STAGES = {64: 4, 128: 2}     # K/V ring depth: Q + O + 2 x stages x (BLOCK_N x D) 16-bit tiles fit in 227 KiB
PRODUCER_REGS, CONSUMER_REGS = 24, 240   # 128 x 24 + 256 x 240 <= 64K registers
# named barriers (0 is the CTA-wide one): warpgroup 1's and 2's turn to issue MMAs, then the
# epilogue barrier of each consumer warpgroup
TURN_BAR, EPI_BAR = 1, 1 + CONSUMER_WGS


def rows_cols(layout):
    """A wgmma accumulator's per-thread layout ((2, 2, V), M, N) viewed as (rows, cols) =
    ((2, M), (2, V, N)): its values hold columns c, c+1 (+8 per V) of rows r, r+8 (see tv_layout_C)."""
    (a, b, v), m, n = layout.shape
    (sa, sb, sv), sm, sn = layout.stride
    return cute.make_layout(((b, m), (a, v, n)), stride=((sb, sm), (sa, sv, sn)))


def as_operand_a(layout):
    """The accumulator layout ((2, 2, V), 1, 1) of a 64 x N score tile read as the A operand of a
    register-sourced wgmma with K = N: ((2, 2, 2), 1, V / 2), one mode-2 step per 16 columns (the
    16-bit A fragment of m64nNk16 holds the same (row, column) per value as the fp32 C fragment)."""
    (a, b, v), m, _ = layout.shape
    (sa, sb, sv), sm, _ = layout.stride
    return cute.make_layout(((a, b, 2), m, v // 2), stride=((sa, sb, sv), sm, 2 * sv))


def pairwise_sum(values):
    """A tree of adds (log2(n) deep) rather than the chain of n a left-to-right sum compiles to."""
    while len(values) > 1:
        values = [a + b for a, b in zip(values[::2], values[1::2])] + values[len(values) - len(values) % 2:]
    return values[0]


class HopperAttention:
    def __init__(self, head_dim, causal, *, stages=None):
        if head_dim not in HEAD_DIMS:
            raise ValueError(f"head_dim {head_dim}: one of {HEAD_DIMS}")
        self.head_dim, self.causal = head_dim, bool(causal)
        self.stages = stages or STAGES[head_dim]
        self.scale_log2 = LOG2E / math.sqrt(head_dim)   # softmax in base 2: exp(x s) = 2^(x s log2 e)
        self.threads = WG * (1 + CONSUMER_WGS)

    @staticmethod
    def seq_major(t):
        """(B, H, S, D) as (S, D, (H, B)): Q, K (the K-major operands of S = Q K^T) and O."""
        return cute.make_tensor(t.iterator, cute.make_layout(
            (t.shape[2], t.shape[3], (t.shape[1], t.shape[0])),
            stride=(t.stride[2], t.stride[3], (t.stride[1], t.stride[0]))))

    @staticmethod
    def dim_major(t):
        """(B, H, S, D) as (D, S, (H, B)): V as the B operand of O = P V, its N (= D) contiguous."""
        return cute.make_tensor(t.iterator, cute.make_layout(
            (t.shape[3], t.shape[2], (t.shape[1], t.shape[0])),
            stride=(t.stride[3], t.stride[2], (t.stride[1], t.stride[0]))))

    @cute.jit
    def __call__(self, q: cute.Tensor, k: cute.Tensor, v: cute.Tensor, o: cute.Tensor, stream: cuda.CUstream):
        self.dtype = q.element_type
        if const_expr(self.dtype.width != 16 or k.element_type != self.dtype or v.element_type != self.dtype
                      or o.element_type != self.dtype):
            raise TypeError("Q, K, V and O must share one 16-bit type")
        d = self.head_dim
        mQ, mK, mO, mV = self.seq_major(q), self.seq_major(k), self.seq_major(o), self.dim_major(v)
        q_major, k_major, v_major = (LayoutEnum.from_tensor(t) for t in (mQ, mK, mV))
        # one warpgroup's MMAs: S (64 x BLOCK_N) = Q K^T, O (64 x D) += P V with P from registers
        qk_mma = sm90.make_trivial_tiled_mma(self.dtype, self.dtype, q_major.sm90_mma_major_mode(),
                                             k_major.sm90_mma_major_mode(), Float32, (1, 1, 1),
                                             tiler_mn=(SLAB, BLOCK_N))
        pv_mma = sm90.make_trivial_tiled_mma(self.dtype, self.dtype, cute.nvgpu.OperandMajorMode.K,
                                             v_major.sm90_mma_major_mode(), Float32, (1, 1, 1),
                                             tiler_mn=(SLAB, d), a_source=warpgroup.OperandSource.RMEM)
        # swizzled smem layouts that TMA writes and wgmma reads; Q and O: one slab per consumer
        q_smem = sm90.make_smem_layout_a(q_major, (SLAB, BLOCK_N, d), self.dtype, CONSUMER_WGS)
        k_smem = sm90.make_smem_layout_b(k_major, (SLAB, BLOCK_N, d), self.dtype, self.stages)
        v_smem = sm90.make_smem_layout_b(v_major, (SLAB, d, BLOCK_N), self.dtype, self.stages)
        o_smem = sm90.make_smem_layout_epi(self.dtype, LayoutEnum.from_tensor(mO), (SLAB, d), CONSUMER_WGS)
        load = cpasync.CopyBulkTensorTileG2SOp()
        tma_q, tQ = cpasync.make_tiled_tma_atom(load, mQ, cute.slice_(q_smem, (None, None, 0)), (SLAB, d))
        tma_k, tK = cpasync.make_tiled_tma_atom(load, mK, cute.slice_(k_smem, (None, None, 0)), (BLOCK_N, d))
        tma_v, tV = cpasync.make_tiled_tma_atom(load, mV, cute.slice_(v_smem, (None, None, 0)), (d, BLOCK_N))
        tma_o, tO = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), mO,
                                                cute.slice_(o_smem, (None, None, 0)), (SLAB, d))
        self.q_bytes = CONSUMER_WGS * SLAB * d * self.dtype.width // 8
        self.kv_bytes = BLOCK_N * d * self.dtype.width // 8
        m_tiles = (mQ.shape[0] + BLOCK_M - 1) // BLOCK_M
        self.kernel(qk_mma, pv_mma, tma_q, tQ, tma_k, tK, tma_v, tV, tma_o, tO,
                    q_smem, k_smem, v_smem, o_smem).launch(
            grid=[m_tiles, q.shape[1], q.shape[0]], block=[self.threads, 1, 1], stream=stream,
            min_blocks_per_mp=1)    # a register cap at entry, which setmaxnreg needs

    @cute.kernel
    def kernel(self, qk_mma: cute.TiledMma, pv_mma: cute.TiledMma, tma_q: cute.CopyAtom, mQ: cute.Tensor,
               tma_k: cute.CopyAtom, mK: cute.Tensor, tma_v: cute.CopyAtom, mV: cute.Tensor,
               tma_o: cute.CopyAtom, mO: cute.Tensor, q_smem: cute.ComposedLayout, k_smem: cute.ComposedLayout,
               v_smem: cute.ComposedLayout, o_smem: cute.ComposedLayout):
        tidx, _, _ = cute.arch.thread_idx()
        m_idx, head, batch = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        wg = cute.arch.make_warp_uniform(tidx // WG)
        if warp == 0:
            for atom in (tma_q, tma_k, tma_v, tma_o):
                cpasync.prefetch_descriptor(atom)

        d = self.head_dim
        seqlen = mQ.shape[0]
        m_block = m_idx
        if const_expr(self.causal):
            m_block = (seqlen + BLOCK_M - 1) // BLOCK_M - 1 - m_idx   # the longest rows start first
        n_tiles = (seqlen + BLOCK_N - 1) // BLOCK_N
        if const_expr(self.causal):
            n_tiles = cutlass.min(n_tiles, ((m_block + 1) * BLOCK_M + BLOCK_N - 1) // BLOCK_N)

        # Q: one stage, both slabs on one barrier; K and V: rings whose slots every consumer warp frees
        # (the arrive count is computed from the consumer thread count)
        def ring(stages, tx):
            return pipeline.PipelineTmaAsync.create(
                num_stages=stages, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
                consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, CONSUMER_WGS * WG),
                tx_count=tx, enable_multicast_signaling=True, defer_sync=True)
        q_pipe, k_pipe, v_pipe = ring(1, self.q_bytes), ring(self.stages, self.kv_bytes), ring(self.stages, self.kv_bytes)
        pipeline.pipeline_init_arrive(is_relaxed=True)

        smem = SmemAllocator()
        sQ = smem.allocate_tensor(self.dtype, q_smem.outer, 1024, q_smem.inner)   # (SLAB, D, slab)
        sK = smem.allocate_tensor(self.dtype, k_smem.outer, 1024, k_smem.inner)   # (BLOCK_N, D, stage)
        sV = smem.allocate_tensor(self.dtype, v_smem.outer, 1024, v_smem.inner)   # (D, BLOCK_N, stage)
        sO = smem.allocate_tensor(self.dtype, o_smem.outer, 1024, o_smem.inner)   # (SLAB, D, slab)
        # this (batch, head)'s tiles: Q/O slabs, K tiles, V tiles (as D x keys)
        bh = (head, batch)
        gQ = cute.local_tile(mQ[(None, None, bh)], (SLAB, d), (None, 0))       # (SLAB, D, slabs)
        gK = cute.local_tile(mK[(None, None, bh)], (BLOCK_N, d), (None, 0))    # (BLOCK_N, D, tiles)
        gV = cute.local_tile(mV[(None, None, bh)], (d, BLOCK_N), (0, None))    # (D, BLOCK_N, tiles)
        gO = cute.local_tile(mO[(None, None, bh)], (SLAB, d), (None, 0))       # (SLAB, D, slabs)
        pipeline.pipeline_init_wait()

        if wg == 0:
            cute.arch.setmaxregister_decrease(PRODUCER_REGS)
            if warp == 0:
                self.produce(tma_q, gQ, sQ, tma_k, gK, sK, tma_v, gV, sV, q_pipe, k_pipe, v_pipe, m_block, n_tiles)
        else:
            cute.arch.setmaxregister_increase(CONSUMER_REGS)
            self.consume(qk_mma, pv_mma, sQ, sK, sV, sO, tma_o, gO, q_pipe, k_pipe, v_pipe,
                         tidx % WG, wg - 1, m_block, n_tiles, seqlen)

    @cute.jit
    def produce(self, tma_q: cute.CopyAtom, gQ: cute.Tensor, sQ: cute.Tensor, tma_k: cute.CopyAtom,
                gK: cute.Tensor, sK: cute.Tensor, tma_v: cute.CopyAtom, gV: cute.Tensor, sV: cute.Tensor,
                q_pipe, k_pipe, v_pipe, m_block: Int32, n_tiles: Int32):
        """The loads in the consumers' order: K[last], Q, then (K[j-1], V[j]) down to V[0]."""
        def parts(atom, s, g):
            return cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                         cute.group_modes(g, 0, 2))
        tQsQ, tQgQ = parts(tma_q, sQ, gQ)
        tKsK, tKgK = parts(tma_k, sK, gK)
        tVsV, tVgV = parts(tma_v, sV, gV)
        kv = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
        q_slot = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
        last = n_tiles - 1
        k_pipe.producer_acquire(kv)     # waits for a free slot, then arms "full" with the tile's bytes
        cute.copy(tma_k, tKgK[(None, last)], tKsK[(None, kv.index)], tma_bar_ptr=k_pipe.producer_get_barrier(kv))
        q_pipe.producer_acquire(q_slot)
        for s in cutlass.range_constexpr(CONSUMER_WGS):
            cute.copy(tma_q, tQgQ[(None, m_block * CONSUMER_WGS + s)], tQsQ[(None, s)],
                      tma_bar_ptr=q_pipe.producer_get_barrier(q_slot))
        for j in cutlass.range(last, unroll=1):
            v_slot = kv.clone()
            kv.advance()
            k_pipe.producer_acquire(kv)
            cute.copy(tma_k, tKgK[(None, last - 1 - j)], tKsK[(None, kv.index)],
                      tma_bar_ptr=k_pipe.producer_get_barrier(kv))
            v_pipe.producer_acquire(v_slot)
            cute.copy(tma_v, tVgV[(None, last - j)], tVsV[(None, v_slot.index)],
                      tma_bar_ptr=v_pipe.producer_get_barrier(v_slot))
        v_pipe.producer_acquire(kv)
        cute.copy(tma_v, tVgV[(None, 0)], tVsV[(None, kv.index)], tma_bar_ptr=v_pipe.producer_get_barrier(kv))

    @cute.jit
    def consume(self, qk_mma: cute.TiledMma, pv_mma: cute.TiledMma, sQ: cute.Tensor, sK: cute.Tensor,
                sV: cute.Tensor, sO: cute.Tensor, tma_o: cute.CopyAtom, gO: cute.Tensor, q_pipe, k_pipe, v_pipe,
                wtid: Int32, slab: Int32, m_block: Int32, n_tiles: Int32, seqlen: Int32):
        d = self.head_dim
        thr_qk, thr_pv = qk_mma.get_slice(wtid), pv_mma.get_slice(wtid)
        tSrQ = qk_mma.make_fragment_A(thr_qk.partition_A(sQ))     # smem descriptors (.., k-blocks, slab)
        tSrK = qk_mma.make_fragment_B(thr_qk.partition_B(sK))     # (.., k-blocks, stage)
        tOrV = pv_mma.make_fragment_B(thr_pv.partition_B(sV))     # (.., key blocks, stage)
        acc_s = thr_qk.make_fragment_C(thr_qk.partition_shape_C((SLAB, BLOCK_N)))
        acc_o = thr_pv.make_fragment_C(thr_pv.partition_shape_C((SLAB, d)))
        p = cute.make_rmem_tensor(acc_s.layout, self.dtype)        # P in the input dtype ...
        tOrP = cute.make_tensor(p.iterator, as_operand_a(acc_s.layout))   # ... as the A operand of P V
        coords = thr_qk.partition_C(cute.make_identity_tensor((SLAB, BLOCK_N)))   # (row, key) in the tile
        rows = cute.size(rows_cols(acc_s.layout), mode=[0])
        row_max = cute.make_rmem_tensor(rows, Float32)
        row_sum = cute.make_rmem_tensor(rows, Float32)            # this thread's partial sums
        scale = cute.make_rmem_tensor(rows, Float32)
        row_max.fill(-Float32.inf)
        row_sum.fill(0.0)
        acc_o.fill(0.0)
        qk_mma.set(warpgroup.Field.ACCUMULATE, True)
        pv_mma.set(warpgroup.Field.ACCUMULATE, True)

        q_slot = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
        kv = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        q_pipe.consumer_wait(q_slot)
        tSrQ_slab = tSrQ[(None, None, None, slab)]
        if slab == 0:   # warpgroup 1 takes the first turn
            cute.arch.barrier_arrive(barrier_id=TURN_BAR, number_of_threads=CONSUMER_WGS * WG)

        # the last key tile, masked: S, softmax, P
        last = n_tiles - 1
        k_pipe.consumer_wait(kv)
        self.scores(qk_mma, acc_s, tSrQ_slab, tSrK[(None, None, None, kv.index)])
        warpgroup.wait_group(0)
        k_pipe.consumer_release(kv)
        self.mask(acc_s, coords, m_block * BLOCK_M + slab * SLAB, last * BLOCK_N, seqlen)
        self.softmax(acc_s, row_max, row_sum, scale, True)
        p.store(acc_s.load().to(self.dtype))

        # the other tiles, unmasked: S of tile j-1 is issued with P V of tile j
        for j in cutlass.range(last, unroll=1):
            v_slot = kv.clone()
            kv.advance()
            k_pipe.consumer_wait(kv)
            cute.arch.barrier(barrier_id=TURN_BAR + slab, number_of_threads=CONSUMER_WGS * WG)   # our turn
            self.scores(qk_mma, acc_s, tSrQ_slab, tSrK[(None, None, None, kv.index)])
            v_pipe.consumer_wait(v_slot)
            self.accumulate(pv_mma, acc_o, tOrP, tOrV[(None, None, None, v_slot.index)])
            cute.arch.barrier_arrive(barrier_id=TURN_BAR + 1 - slab, number_of_threads=CONSUMER_WGS * WG)
            warpgroup.wait_group(1)                # S is in
            k_pipe.consumer_release(kv)
            self.softmax(acc_s, row_max, row_sum, scale, False)
            warpgroup.wait_group(0)                # P V is in: P's registers and the V slot are free
            v_pipe.consumer_release(v_slot)
            p.store(acc_s.load().to(self.dtype))
            o_mn = cute.make_tensor(acc_o.iterator, rows_cols(acc_o.layout))
            for r in cutlass.range_constexpr(rows):
                for c in cutlass.range_constexpr(cute.size(o_mn, mode=[1])):
                    o_mn[r, c] = o_mn[r, c] * scale[r]

        v_pipe.consumer_wait(kv)
        self.accumulate(pv_mma, acc_o, tOrP, tOrV[(None, None, None, kv.index)])
        warpgroup.wait_group(0)
        v_pipe.consumer_release(kv)
        self.epilogue(pv_mma, acc_o, row_sum, sO, tma_o, gO, wtid, slab, m_block)

    @cute.jit
    def scores(self, qk_mma: cute.TiledMma, acc: cute.Tensor, tSrQ: cute.Tensor, tSrK: cute.Tensor):
        """Issues S = Q K^T (D / 16 wgmmas, the first one overwriting acc) as one group."""
        warpgroup.fence()
        for kb in cutlass.range_constexpr(cute.size(tSrQ, mode=[2])):
            qk_mma.set(warpgroup.Field.ACCUMULATE, kb != 0)
            cute.gemm(qk_mma, acc, tSrQ[(None, None, kb)], tSrK[(None, None, kb)], acc)
        warpgroup.commit_group()

    @cute.jit
    def accumulate(self, pv_mma: cute.TiledMma, acc: cute.Tensor, tOrP: cute.Tensor, tOrV: cute.Tensor):
        """Issues O += P V (BLOCK_N / 16 wgmmas, P from registers) as one group."""
        warpgroup.fence()
        for kb in cutlass.range_constexpr(cute.size(tOrP, mode=[2])):
            cute.gemm(pv_mma, acc, tOrP[(None, None, kb)], tOrV[(None, None, kb)], acc)
        warpgroup.commit_group()

    @cute.jit
    def mask(self, acc: cute.Tensor, coords: cute.Tensor, row0: Int32, col0: Int32, seqlen: Int32):
        """-inf for keys past the sequence and, under causal, keys after the query row."""
        for i in cutlass.range_constexpr(cute.size(acc)):
            r, c = coords[i]
            limit = seqlen
            if const_expr(self.causal):
                limit = cutlass.min(seqlen, row0 + r + 1)
            acc[i] = acc[i] if col0 + c < limit else -Float32.inf

    @cute.jit
    def softmax(self, acc: cute.Tensor, row_max: cute.Tensor, row_sum: cute.Tensor, scale: cute.Tensor,
                first: cutlass.Constexpr):
        """Online softmax of one score tile, in place (S -> unnormalized P), for this thread's rows: the
        new row maximum (over the 4 lanes that share a row), scale = 2^((old - new) scale_log2) for O
        and the sum, and the partial row sums."""
        s = cute.make_tensor(acc.iterator, rows_cols(acc.layout))
        for r in cutlass.range_constexpr(cute.size(s, mode=[0])):
            prev = row_max[r]
            top = s[r, None].load().reduce(cute.ReductionOp.MAX, prev, 0)
            top = cute.arch.warp_reduction_max(top, threads_in_group=4)
            row_max[r] = top
            # a row with no key yet (none here: every row sees a key in its first tile) keeps P at 0,
            # not NaN; a select, not a branch (a branch here made the compiler compute P twice)
            bias = cute.arch.fmax(top, -FLT_MAX) * self.scale_log2
            for c in cutlass.range_constexpr(cute.size(s, mode=[1])):
                s[r, c] = cute.math.exp2(s[r, c] * self.scale_log2 - bias, fastmath=True)
            total = pairwise_sum([s[r, c] for c in range(cute.size(s, mode=[1]))])
            if const_expr(first):
                row_sum[r] = total
            else:
                factor = cute.math.exp2(prev * self.scale_log2 - bias, fastmath=True)
                scale[r] = factor
                row_sum[r] = row_sum[r] * factor + total

    @cute.jit
    def epilogue(self, pv_mma: cute.TiledMma, acc_o: cute.Tensor, row_sum: cute.Tensor, sO: cute.Tensor,
                 tma_o: cute.CopyAtom, gO: cute.Tensor, wtid: Int32, slab: Int32, m_block: Int32):
        """O / rowsum in the output dtype: registers -> (stmatrix) this slab's smem -> TMA store, which
        drops the rows past the sequence."""
        o_mn = cute.make_tensor(acc_o.iterator, rows_cols(acc_o.layout))
        for r in cutlass.range_constexpr(cute.size(o_mn, mode=[0])):
            total = cute.arch.warp_reduction_sum(row_sum[r], threads_in_group=4)
            inv = Float32(1.0) / total if total > 0.0 else Float32(0.0)
            for c in cutlass.range_constexpr(cute.size(o_mn, mode=[1])):
                o_mn[r, c] = o_mn[r, c] * inv
        out = cute.make_rmem_tensor(acc_o.layout, self.dtype)
        out.store(acc_o.load().to(self.dtype))
        r2s_atom = sm90.get_smem_store_op(LayoutEnum.ROW_MAJOR, self.dtype, Float32)
        r2s = cute.make_tiled_copy_C(r2s_atom, pv_mma)
        thr_r2s = r2s.get_slice(wtid)
        cute.copy(r2s, r2s.retile(out), thr_r2s.partition_D(sO)[(None, None, None, slab)])
        cute.arch.fence_proxy("async.shared", space="cta")      # generic-proxy writes -> TMA reads
        cute.arch.barrier(barrier_id=EPI_BAR + slab, number_of_threads=WG)
        if wtid < 32:
            tOsO, tOgO = cpasync.tma_partition(tma_o, 0, cute.make_layout(1), cute.group_modes(sO, 0, 2),
                                               cute.group_modes(gO, 0, 2))
            cute.copy(tma_o, tOsO[(None, slab)], tOgO[(None, m_block * CONSUMER_WGS + slab)])
            cute.arch.cp_async_bulk_commit_group()
            cute.arch.cp_async_bulk_wait_group(0, read=True)  # smem must outlive the store's reads


def supports(case, variant=""):
    if device_arch() not in ("", "sm_90a"):
        return f"the warpgroup-MMA + TMA attention is Hopper-only (sm_90a), this GPU is {device_arch()}"
    if case.shape["D"] not in HEAD_DIMS:
        return f"head_dim {case.shape['D']}: the kernel's register tiles are sized for {HEAD_DIMS}"
    return None


def as_cute_seq_dynamic(t, variant):
    """A (B, H, S, D) torch tensor as a CuTe tensor, 16-byte aligned, S (and the strides it scales) a
    run-time value, B, H and D compiled in."""
    from cutlass.cute.runtime import from_dlpack
    return (from_dlpack(t, assumed_align=16, enable_tvm_ffi=variant == "tvm_ffi")
            .mark_compact_shape_dynamic(mode=2, stride_order=(0, 1, 2, 3), divisibility=1))


def compile_case(case, inputs, outputs, variant, options="", **knobs):
    """`knobs`: HopperAttention's (stages)."""
    arrays = (inputs["q"], inputs["k"], inputs["v"], outputs["o"])
    tensors = [as_cute_seq_dynamic(t, variant) for t in arrays]
    kernel = HopperAttention(case.shape["D"], case.shape["causal"], **knobs)
    return compile_once(kernel, tensors, variant, options), tensors


def build(case, inputs, outputs, stream, variant="", **knobs):
    compiled, tensors = compile_case(case, inputs, outputs, variant, **knobs)
    return launcher(compiled, tensors, (inputs["q"], inputs["k"], inputs["v"], outputs["o"]), stream, variant)
