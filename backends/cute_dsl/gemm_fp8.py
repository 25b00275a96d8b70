"""C = dequant(A) @ dequant(B)^T on Hopper (sm_90a) in CuTe DSL: the lab's persistent, warp-specialized
TMA + warpgroup-MMA GEMM (gemm.py) on e4m3 tiles, with the "2x accumulator" of CUTLASS's Hopper
blockwise FP8 kernels: per 128 of K (one scale block) the wgmmas sum into a fresh float32 partial sum,
which is scaled and added into a second float32 accumulator (the promotion FP8 tensor cores need,
problems/gemm_fp8.py).

Works as follows:
1. The producer warp loads A's (tile_m x 128) and B's (128 x 128) e4m3 tiles of each K step by TMA
   into a ring of stages, as gemm.py does.
2. Each consumer warpgroup (a 64-row slab of the 128 x 128 tile) reads its rows' A scales and the
   tile's one B scale for the step from global memory, issues the step's four m64n128k32 wgmmas into
   its partial sum, waits for them, frees the stage, and adds partial sum x scales into the
   accumulator. A tensorwise case takes the same path through stride-0 views of its one scale each.
3. The accumulator, rounded to bfloat16, leaves through shared memory by TMA stores (clipped at the
   edges), while the producer already loads the next tile's operands.
Variant `overlap` (as DeepGEMM's consumers and Gluon's `overlap` do): a block's partial sum is scaled
while the next block's wgmmas run, two partial sums alternating in registers; each pair of blocks ends
with its wgmmas done (one in flight across the loop's back edge makes ptxas serialize every wgmma).

Constraints: K a multiple of 128 (the problem's); N a multiple of 8 (C's rows 16-byte aligned for TMA);
M > 1 (as gemm.py). Tile N is 128, one B scale block, so each tile has one B scale a step."""
import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
import cutlass.utils.hopper_helpers as sm90
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.memory import SmemAllocator, get_smem_capacity_in_bytes
from cutlass.tensor_utils import LayoutEnum

from backends.cute_dsl import as_cute, compile_once, device_arch, launcher
from backends.cute_dsl.gemm import ORDER, WG, HopperGemm, load_op

BLOCK = 128                     # a scale block of K, and of B's rows: the tile's N and K
TILE_MN = (128, BLOCK)          # two consumer warpgroups of 64 rows
EPI_STAGES = 4
CONSUMER_REGISTERS, PRODUCER_REGISTERS = 232, 40   # accumulator, partial sum, scales: 3 x 64 fp32 a thread


class HopperFp8Gemm(HopperGemm):
    def __init__(self, overlap=False, **knobs):
        super().__init__(TILE_MN, (1, 1), tile_k=BLOCK, epi_stages=EPI_STAGES, **{**ORDER, **knobs})
        self.overlap = overlap

    def _configure(self, a, b, c):
        self.ab_dtype, self.c_dtype = a.element_type, c.element_type
        if a.element_type.width != 8 or b.element_type != a.element_type or c.element_type.width != 16:
            raise TypeError("A and B must be 8-bit (e4m3), C 16-bit")
        a_major, b_major = LayoutEnum.from_tensor(a), LayoutEnum.from_tensor(b)
        self.c_major = LayoutEnum.from_tensor(c)
        tm, tn = self.tile_mn
        self.tile_mnk = (tm, tn, self.tile_k)
        self.tiled_mma = sm90.make_trivial_tiled_mma(
            self.ab_dtype, self.ab_dtype, a_major.sm90_mma_major_mode(), b_major.sm90_mma_major_mode(),
            self.acc_dtype, (self.mma_wgs, 1, 1), tiler_mn=(64, tn))
        self.epi_tile = sm90.compute_tile_shape_or_override(self.tile_mnk, self.c_dtype, is_cooperative=True)
        epi_bytes = cute.size(self.epi_tile) * self.c_dtype.width // 8 * self.epi_stages
        self.stage_bytes = (tm + tn) * self.tile_k * self.ab_dtype.width // 8
        self.stages = (get_smem_capacity_in_bytes("sm_90") - epi_bytes - 1024) // self.stage_bytes
        return (sm90.make_smem_layout_a(a_major, self.tile_mnk, self.ab_dtype, self.stages),
                sm90.make_smem_layout_b(b_major, self.tile_mnk, self.ab_dtype, self.stages),
                sm90.make_smem_layout_epi(self.c_dtype, self.c_major, self.epi_tile, self.epi_stages))

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, a_scale: cute.Tensor,
                 b_scale: cute.Tensor, stream: cuda.CUstream):
        a_smem, b_smem, c_smem = self._configure(a, b, c)
        tm, tn, tk = self.tile_mnk
        tma_a, tA = cpasync.make_tiled_tma_atom(load_op(1), a, cute.slice_(a_smem, (None, None, 0)), (tm, tk))
        tma_b, tB = cpasync.make_tiled_tma_atom(load_op(1), b, cute.slice_(b_smem, (None, None, 0)), (tn, tk))
        tma_c, tC = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c,
                                                cute.slice_(c_smem, (None, None, 0)), self.epi_tile)
        ntiles = cute.ceil_div(c.shape, (tm, tn, 1))
        sched = self.scheduler(ntiles)
        grid = utils.StaticPersistentTileScheduler.get_grid_shape(sched, self.max_active_clusters)
        self.kernel(self.tiled_mma, tma_a, tA, tma_b, tB, tma_c, tC, a_scale, b_scale, a_smem, b_smem, c_smem,
                    sched).launch(grid=grid, block=[self.threads, 1, 1], cluster=(1, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, tma_a: cute.CopyAtom, mA: cute.Tensor,
               tma_b: cute.CopyAtom, mB: cute.Tensor, tma_c: cute.CopyAtom, mC: cute.Tensor,
               a_scale: cute.Tensor, b_scale: cute.Tensor, a_smem: cute.ComposedLayout,
               b_smem: cute.ComposedLayout, c_smem: cute.ComposedLayout,
               sched_params: utils.PersistentTileSchedulerParams):
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        wg = cute.arch.make_warp_uniform(tidx // WG)
        if warp == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            cpasync.prefetch_descriptor(tma_c)
        ab_pipe = pipeline.PipelineTmaAsync.create(
            num_stages=self.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.mma_wgs * WG),
            tx_count=self.stage_bytes, cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
            enable_multicast_signaling=True, defer_sync=True)    # one release a warp: the count it waits for
        pipeline.pipeline_init_arrive(cluster_shape_mn=(1, 1), is_relaxed=True)

        smem = SmemAllocator()
        sA = smem.allocate_tensor(self.ab_dtype, a_smem.outer, 1024, a_smem.inner)
        sB = smem.allocate_tensor(self.ab_dtype, b_smem.outer, 1024, b_smem.inner)
        sC = smem.allocate_tensor(self.c_dtype, c_smem.outer, 1024, c_smem.inner)

        tm, tn, tk = self.tile_mnk
        gA = cute.local_tile(mA, (tm, tk), (None, None, None))  # (tm, tk, tiles_m, tiles_k, L)
        gB = cute.local_tile(mB, (tn, tk), (None, None, None))  # (tn, tk, tiles_n, tiles_k, L)
        gC = cute.local_tile(mC, (tm, tn), (None, None, None))  # (tm, tn, tiles_m, tiles_n, L)
        k_tiles = cute.size(gA, mode=[3])
        tAsA, tAgA = cpasync.tma_partition(tma_a, 0, cute.make_layout(1),
                                           cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        tBsB, tBgB = cpasync.tma_partition(tma_b, 0, cute.make_layout(1),
                                           cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))
        pipeline.pipeline_init_wait(cluster_shape_mn=(1, 1))

        if wg == 0:   # producer: one warp drives TMA
            cute.arch.setmaxregister_decrease(PRODUCER_REGISTERS)
            if warp == 0:
                sched = utils.StaticPersistentTileScheduler.create(
                    sched_params, cute.arch.block_idx(), cute.arch.grid_dim())
                work = sched.initial_work_tile_info()
                producer = ab_pipe.make_producer()
                while work.is_valid_tile:
                    m, n, batch = work.tile_idx
                    for k in cutlass.range(k_tiles, unroll=1):
                        slot = producer.acquire_and_advance()
                        cute.copy(tma_a, tAgA[(None, m, k, batch)], tAsA[(None, slot.index)], tma_bar_ptr=slot.barrier)
                        cute.copy(tma_b, tBgB[(None, n, k, batch)], tBsB[(None, slot.index)], tma_bar_ptr=slot.barrier)
                    sched.advance_to_next_work()
                    work = sched.get_current_work()
                producer.tail()
        else:
            cute.arch.setmaxregister_increase(CONSUMER_REGISTERS)
            ctid = tidx - WG
            thr_mma = tiled_mma.get_slice((wg - 1) * WG)
            tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
            tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
            frag = thr_mma.partition_C(gC).shape[:3]
            acc = cute.make_rmem_tensor(frag, self.acc_dtype)       # the float32 sum over scale blocks
            # one block's sum in the MMA's precision, and A's row scale x B's block scale for it; two of
            # each where one block's sum is scaled while the next block's wgmmas run (overlap)
            parts = [cute.make_rmem_tensor(frag, self.acc_dtype) for _ in range(1 + self.overlap)]
            scales = [cute.make_rmem_tensor(frag, self.acc_dtype) for _ in range(1 + self.overlap)]
            # each accumulator element's (row, col): this thread's own slice (the MMA's is its warpgroup's)
            rows = tiled_mma.get_slice(ctid).partition_C(cute.make_identity_tensor((tm, tn)))
            last_row = a_scale.shape[0] - 1

            r2s_atom = sm90.get_smem_store_op(self.c_major, self.c_dtype, self.acc_dtype)
            r2s = cute.make_tiled_copy_S(r2s_atom, cute.make_tiled_copy_C_atom(r2s_atom, tiled_mma))
            thr_r2s = r2s.get_slice(ctid)
            tRS_sC = thr_r2s.partition_D(sC)
            tRS_acc = r2s.retile(acc)
            sub_shape = cute.shape(thr_r2s.partition_S(sC))[:3]
            sub_acc = cute.make_rmem_tensor(sub_shape, self.acc_dtype)
            sub_out = cute.make_rmem_tensor(sub_shape, self.c_dtype)
            sub_size = cute.size(sub_acc)
            store_pipe = pipeline.PipelineTmaStore.create(
                num_stages=self.epi_stages,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.mma_wgs * WG))
            epi_bar = pipeline.NamedBarrier(barrier_id=1, num_threads=self.mma_wgs * WG)

            sched = utils.StaticPersistentTileScheduler.create(
                sched_params, cute.arch.block_idx(), cute.arch.grid_dim())
            work = sched.initial_work_tile_info()
            read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            free = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            while work.is_valid_tile:
                m, n, batch = work.tile_idx
                acc.fill(0.0)
                scaled = (a_scale, b_scale, rows, m * tm, last_row, n)     # what a block's scales are read by
                if cutlass.const_expr(self.overlap):
                    # block k's sum is scaled while block k + 1's wgmmas run: two partial sums alternate,
                    # none in flight across the loop's back edge (ptxas would serialize every wgmma)
                    ab_pipe.consumer_wait(read)
                    tiled_mma = self.block(tiled_mma, parts[0], scales[0], tCrA, tCrB, read.index, scaled, 0)
                    read.advance()
                    warpgroup.wait_group(0)
                    ab_pipe.consumer_release(free)
                    free.advance()
                    for j in cutlass.range((k_tiles - 1) // 2, unroll=1):
                        for half in cutlass.range_constexpr(2):
                            ab_pipe.consumer_wait(read)
                            tiled_mma = self.block(tiled_mma, parts[1 - half], scales[1 - half], tCrA, tCrB,
                                                   read.index, scaled, 2 * j + 1 + half)
                            read.advance()
                            acc.store(parts[half].load() * scales[half].load() + acc.load())
                            warpgroup.wait_group(0)
                            ab_pipe.consumer_release(free)
                            free.advance()
                    if cutlass.const_expr(k_tiles % 2 == 0):
                        ab_pipe.consumer_wait(read)
                        tiled_mma = self.block(tiled_mma, parts[1], scales[1], tCrA, tCrB, read.index, scaled,
                                               k_tiles - 1)
                        read.advance()
                        acc.store(parts[0].load() * scales[0].load() + acc.load())
                        warpgroup.wait_group(0)
                        ab_pipe.consumer_release(free)
                        free.advance()
                    last = 1 if k_tiles % 2 == 0 else 0
                    acc.store(parts[last].load() * scales[last].load() + acc.load())
                else:
                    for k in cutlass.range(k_tiles, unroll=1):
                        ab_pipe.consumer_wait(read)
                        tiled_mma = self.block(tiled_mma, parts[0], scales[0], tCrA, tCrB, read.index, scaled, k)
                        read.advance()
                        warpgroup.wait_group(0)
                        ab_pipe.consumer_release(free)
                        free.advance()
                        acc.store(parts[0].load() * scales[0].load() + acc.load())   # the promotion to float32

                gC_epi = cute.zipped_divide(gC[(None, None, m, n, batch)], self.epi_tile)
                bSG_sC, bSG_gC = cpasync.tma_partition(tma_c, 0, cute.make_layout(1),
                                                       cute.group_modes(sC, 0, 2), gC_epi)
                epi_m, epi_n = cute.shape(gC_epi, mode=[1])
                base = sched.num_tiles_executed * (epi_m * epi_n)
                for e in cutlass.range_constexpr(epi_m * epi_n):
                    for v in cutlass.range_constexpr(sub_size):
                        sub_acc[v] = tRS_acc[e * sub_size + v]
                    sub_out.store(sub_acc.load().to(self.c_dtype))
                    buf = (base + e) % self.epi_stages
                    cute.copy(r2s, sub_out, tRS_sC[(None, None, None, buf)])
                    cute.arch.fence_proxy("async.shared", space="cta")
                    epi_bar.arrive_and_wait()
                    if warp == 4:
                        cute.copy(tma_c, bSG_sC[(None, buf)], bSG_gC[(None, (e // epi_n, e % epi_n))])
                        store_pipe.producer_commit()
                        store_pipe.producer_acquire()
                    epi_bar.arrive_and_wait()
                sched.advance_to_next_work()
                work = sched.get_current_work()
            store_pipe.producer_tail()


    @cute.jit
    def block(self, tiled_mma: cute.TiledMma, part: cute.Tensor, scale: cute.Tensor, tCrA: cute.Tensor,
              tCrB: cute.Tensor, stage, scaled, k):
        """Issues block k's wgmmas (the first one overwriting `part`) as one group, its scales read around
        them: A's rows' before (their loads fly meanwhile), times B's block after."""
        a_scale, b_scale, rows, row0, last_row, n = scaled
        b_step = b_scale[(n, k)]
        for v in cutlass.range_constexpr(cute.size(scale)):
            scale[v] = a_scale[(cutlass.min(row0 + rows[v][0], last_row), k)]   # a row past M: sum 0, not stored
        warpgroup.fence()
        for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            tiled_mma.set(warpgroup.Field.ACCUMULATE, kb != 0)
            cute.gemm(tiled_mma, part, tCrA[(None, None, kb, stage)], tCrB[(None, None, kb, stage)], part)
        warpgroup.commit_group()
        scale.store(scale.load() * b_step)
        return tiled_mma          # its accumulate flag changed: rebound by the caller, where the tracer sees it

def supports(case, variant=""):
    if device_arch() not in ("", "sm_90a"):
        return f"the warpgroup-MMA + TMA FP8 GEMM is Hopper-only (sm_90a), this GPU is {device_arch()}"
    if case.shape["N"] % 8:
        return "C's TMA store needs 16-byte aligned rows: N must be a multiple of 8 for bfloat16"
    if case.shape["M"] == 1:
        return "M = 1: the static layouts drop the M mode and A's and C's TMA copies lose a rank (a GEMV)"
    return None


def operand_views(inputs, outputs):
    """The kernel's operands as views of the lab's tensors: A (M, K, 1) and B (N, K, 1) e4m3 K-major, C
    (M, N, 1) N-major; the scales as (M, K / 128) and (ceil(N / 128), K / 128), a tensorwise case's one
    scale each broadcast by stride-0 views."""
    import torch
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    (m, k), n = a.shape, b.shape[0]
    scales = (m, k // BLOCK), (-(-n // BLOCK), k // BLOCK)
    a_scale, b_scale = (s.expand(shape) for s, shape in zip((inputs["a_scale"], inputs["b_scale"]), scales,
                                                                 strict=True))
    return (a.view(torch.uint8).as_strided((m, k, 1), (k, 1, m * k)),
            b.view(torch.uint8).as_strided((n, k, 1), (k, 1, n * k)),
            c.as_strided((m, n, 1), (n, 1, m * n)), a_scale, b_scale)


def compile_case(case, inputs, outputs, variant, options="", **knobs):
    views = operand_views(inputs, outputs)
    tensors = [as_cute(t, variant) for t in views]
    for t in tensors[:2]:
        t.element_type = cutlass.Float8E4M3FN     # torch's e4m3 bits as the DSL's e4m3
    return compile_once(HopperFp8Gemm(overlap=variant == "overlap", **knobs), tensors, variant, options), tensors


def build(case, inputs, outputs, stream, variant="", **knobs):
    compiled, tensors = compile_case(case, inputs, outputs, variant, **knobs)
    return launcher(compiled, tensors, operand_views(inputs, outputs), stream, variant)
