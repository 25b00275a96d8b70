"""C = A @ B on Hopper (sm_90a) in CuTe DSL: a persistent, warp-specialized TMA + warpgroup-MMA GEMM
written with the wheel's own helpers (cutlass.utils.hopper_helpers for the MMA and the swizzled
shared-memory layouts, cutlass.pipeline for the TMA ring and the store queue, the static persistent
tile scheduler).

Operands are CuTe tensors A (M, K, L), B (N, K, L), C (M, N, L); each one's major mode is read from its
strides, so the lab's row-major B enters as an N-major view of B^T, and C is N-major. 16-bit inputs
(bf16/fp16), fp32 accumulators, 16-bit output.

One CTA = 1 producer warpgroup (its warp 0 issues every TMA load; the rest idle with few registers)
+ `mma_wgs` consumer warpgroups that each own a 64-row slab of the tile_m x tile_n output tile, run
the wgmma mainloop, then write their slab back through smem with TMA stores. A multistage smem ring
(PipelineTmaAsync: "full" barriers completed by TMA transaction bytes, "empty" barriers arrived by
the consumers) decouples the two. Persistence: grid = as many clusters as fit on the GPU, each
walking output tiles with the wheel's static scheduler, so the producer is already loading the next
tile's operands while the consumers run the epilogue of the current one (the epilogue has its own
smem, never aliased with the A/B ring). A 2x1 cluster pairs two CTAs along M that need the same B
tile: each loads half of it and multicasts to both. Ragged M/N/K need no code: TMA zero-fills
out-of-bounds loads (zeros add nothing to the dot products) and clips out-of-bounds stores.
Knobs: tile_mn, cluster_mn, tile_k, ab_stages (None = fill smem), epi_stages, swizzle/raster_along_m
(L2-friendly tile order), max_active_clusters (None = ask the GPU, else 132 SMs: H100 SXM).
The lab's operands enter as views, with no copy: A (M, K, 1), B^T (N, K, 1) read N-major, C (M, N, 1).
TMA needs 16-byte aligned rows: K and N a multiple of 8 (16-bit types); other shapes are not
applicable, as is float32 (warpgroup MMA has no IEEE float32 product; TF32 would fail the check)."""
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

# tools/knob_sweep.py on the H100 (reports/evidence/hopper-gemm/): 8192^3 bf16 103.7% of cuBLAS, fp16 102.4%,
# 4096^3 98.4% (1x1 cluster, default order: 98.7 / 94.6 / 97.4%)
TILE_MN, CLUSTER_MN, ORDER = (128, 256), (2, 1), {"swizzle": 8, "raster_along_m": True}
WG = 128  # threads per warpgroup


def unpadded_swizzle(across: int, swizzle: int) -> int:
    """The largest power of two up to `swizzle` dividing `across`, the count of tiles (of clusters) the
    scheduler rasters across. It pads that count to a multiple of its swizzle, and a padded tile past a
    mode of one tile (static, so its coordinate is folded away) loads and stores tile 0 again, racing the
    CTA that owns it."""
    while across % swizzle:
        swizzle //= 2
    return swizzle


def load_op(multicast):
    """TMA load op for an operand shared by `multicast` CTAs of the cluster."""
    return cpasync.CopyBulkTensorTileG2SMulticastOp() if multicast > 1 else cpasync.CopyBulkTensorTileG2SOp()


class HopperGemm:
    def __init__(self, tile_mn=(128, 256), cluster_mn=(1, 1), *, tile_k=64, ab_stages=None,
                 epi_stages=4, swizzle=1, raster_along_m=True, max_active_clusters=None,
                 acc_dtype=cutlass.Float32):
        if tile_mn[0] not in (64, 128) or tile_mn[1] not in (64, 128, 192, 256):
            raise ValueError(f"tile {tile_mn}: M is 64 or 128 (1 or 2 consumer warpgroups), N <= 256")
        if not set(cluster_mn) <= {1, 2}:
            raise ValueError(f"cluster {cluster_mn}: 1 or 2 CTAs along each of M and N")
        self.tile_mn, self.cluster_mn, self.tile_k = tuple(tile_mn), tuple(cluster_mn), tile_k
        self.ab_stages, self.epi_stages, self.acc_dtype = ab_stages, epi_stages, acc_dtype
        self.swizzle, self.raster_along_m = swizzle, raster_along_m
        self.mma_wgs = tile_mn[0] // 64          # m64nNk16 wgmma: one 64-row slab per warpgroup
        self.threads = WG * (1 + self.mma_wgs)
        cluster_size = cluster_mn[0] * cluster_mn[1]
        if max_active_clusters is None:
            try:   # occupancy query of the current GPU (cluster shapes may not tile every GPC fully)
                max_active_clusters = utils.HardwareInfo().get_max_active_clusters(cluster_size)
            except Exception:  # no GPU here (ahead-of-time compile): assume an H100 SXM
                max_active_clusters = 132 // cluster_size
        self.max_active_clusters = max_active_clusters

    def _configure(self, a, b, c):
        """Static (host-side, plain Python) choices that depend on the operands' types and majors."""
        self.ab_dtype, self.c_dtype = a.element_type, c.element_type
        if b.element_type != self.ab_dtype or self.ab_dtype.width != 16 or self.c_dtype.width != 16:
            raise TypeError("A and B must share a 16-bit type, and C must be 16-bit")
        a_major, b_major = LayoutEnum.from_tensor(a), LayoutEnum.from_tensor(b)
        self.c_major = LayoutEnum.from_tensor(c)
        tm, tn = self.tile_mn
        self.tile_mnk = (tm, tn, self.tile_k)
        # warpgroups stacked along M, each issuing 64 x tn x 16 wgmmas that read A and B from smem
        self.tiled_mma = sm90.make_trivial_tiled_mma(
            self.ab_dtype, self.ab_dtype, a_major.sm90_mma_major_mode(), b_major.sm90_mma_major_mode(),
            self.acc_dtype, (self.mma_wgs, 1, 1), tiler_mn=(64, tn))
        # epilogue subtile: tm x 32 when warpgroups cooperate on a tile (small smem, deep store queue)
        self.epi_tile = sm90.compute_tile_shape_or_override(
            self.tile_mnk, self.c_dtype, is_cooperative=self.mma_wgs > 1)
        epi_bytes = cute.size(self.epi_tile) * self.c_dtype.width // 8 * self.epi_stages
        self.stage_bytes = (tm + tn) * self.tile_k * self.ab_dtype.width // 8
        # A/B stages fill what the epilogue buffers and the barriers leave of the 227 KiB
        self.stages = self.ab_stages or (
            get_smem_capacity_in_bytes("sm_90") - epi_bytes - 1024) // self.stage_bytes
        # swizzled (bank-conflict-free) smem layouts, the same ones TMA writes and wgmma reads
        return (sm90.make_smem_layout_a(a_major, self.tile_mnk, self.ab_dtype, self.stages),
                sm90.make_smem_layout_b(b_major, self.tile_mnk, self.ab_dtype, self.stages),
                sm90.make_smem_layout_epi(self.c_dtype, self.c_major, self.epi_tile, self.epi_stages))

    def scheduler(self, ntiles):
        """The persistent tile scheduler's parameters, its swizzle one that pads no tile (unpadded_swizzle)."""
        cm, cn = self.cluster_mn
        across = -(-ntiles[1] // cn) if self.raster_along_m else -(-ntiles[0] // cm)
        return utils.PersistentTileSchedulerParams(ntiles, (cm, cn, 1), unpadded_swizzle(across, self.swizzle),
                                                   self.raster_along_m)

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream: cuda.CUstream):
        a_smem, b_smem, c_smem = self._configure(a, b, c)
        tm, tn, tk = self.tile_mnk
        # A is shared by the CTAs of a cluster row (cluster_n of them), B by a cluster column
        cm, cn = self.cluster_mn
        tma_a, tA = cpasync.make_tiled_tma_atom(load_op(cn), a, cute.slice_(a_smem, (None, None, 0)),
                                                (tm, tk), num_multicast=cn)
        tma_b, tB = cpasync.make_tiled_tma_atom(load_op(cm), b, cute.slice_(b_smem, (None, None, 0)),
                                                (tn, tk), num_multicast=cm)
        tma_c, tC = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c,
                                                cute.slice_(c_smem, (None, None, 0)), self.epi_tile)
        # output tiles (rounded up: partial edge tiles are still whole tiles to the kernel)
        ntiles = cute.ceil_div(c.shape, (tm, tn, 1))
        sched = self.scheduler(ntiles)
        grid = utils.StaticPersistentTileScheduler.get_grid_shape(sched, self.max_active_clusters)
        self.kernel(self.tiled_mma, tma_a, tA, tma_b, tB, tma_c, tC, a_smem, b_smem, c_smem, sched).launch(
            grid=grid, block=[self.threads, 1, 1], cluster=(cm, cn, 1), stream=stream)

    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, tma_a: cute.CopyAtom, mA: cute.Tensor,
               tma_b: cute.CopyAtom, mB: cute.Tensor, tma_c: cute.CopyAtom, mC: cute.Tensor,
               a_smem: cute.ComposedLayout, b_smem: cute.ComposedLayout, c_smem: cute.ComposedLayout,
               sched_params: utils.PersistentTileSchedulerParams):
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        wg = cute.arch.make_warp_uniform(tidx // WG)
        if warp == 0:  # pull the TMA descriptors into cache before first use
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            cpasync.prefetch_descriptor(tma_c)

        # where this CTA sits in its cluster, and whom its multicast loads also feed
        cm, cn = self.cluster_mn
        cluster = cute.make_layout((cm, cn, 1))
        crd = cluster.get_flat_coord(cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster()))
        a_mask = b_mask = None
        if cutlass.const_expr(cn > 1):
            a_mask = cute.make_layout_image_mask(cluster, crd, mode=1)
        if cutlass.const_expr(cm > 1):
            b_mask = cute.make_layout_image_mask(cluster, crd, mode=0)

        # A/B ring. The "empty" arrive count is computed by the wheel from the consumer thread count
        # and the multicast peers (a stage is free only once every CTA it was multicast to is done).
        ab_pipe = pipeline.PipelineTmaAsync.create(
            num_stages=self.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.mma_wgs * WG),
            tx_count=self.stage_bytes, cta_layout_vmnk=cute.make_layout((1, cm, cn, 1)),
            enable_multicast_signaling=True, defer_sync=True)
        # barrier init must be visible cluster-wide before any peer multicasts into us
        pipeline.pipeline_init_arrive(cluster_shape_mn=self.cluster_mn, is_relaxed=True)

        smem = SmemAllocator()
        sA = smem.allocate_tensor(self.ab_dtype, a_smem.outer, 1024, a_smem.inner)
        sB = smem.allocate_tensor(self.ab_dtype, b_smem.outer, 1024, b_smem.inner)
        sC = smem.allocate_tensor(self.c_dtype, c_smem.outer, 1024, c_smem.inner)

        tm, tn, tk = self.tile_mnk
        gA = cute.local_tile(mA, (tm, tk), (None, None, None))  # (tm, tk, tiles_m, tiles_k, L)
        gB = cute.local_tile(mB, (tn, tk), (None, None, None))  # (tn, tk, tiles_n, tiles_k, L)
        gC = cute.local_tile(mC, (tm, tn), (None, None, None))  # (tm, tn, tiles_m, tiles_n, L)
        k_tiles = cute.size(gA, mode=[3])
        # TMA views: with multicast each CTA issues its 1/cluster share of the tile
        tAsA, tAgA = cpasync.tma_partition(tma_a, crd[1], cute.make_layout(cn),
                                           cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        tBsB, tBgB = cpasync.tma_partition(tma_b, crd[0], cute.make_layout(cm),
                                           cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))
        pipeline.pipeline_init_wait(cluster_shape_mn=self.cluster_mn)

        if wg == 0:
            # producer: give registers back to the consumers (setmaxnreg), one warp drives TMA
            cute.arch.setmaxregister_decrease(40)
            if warp == 0:
                sched = utils.StaticPersistentTileScheduler.create(
                    sched_params, cute.arch.block_idx(), cute.arch.grid_dim())
                work = sched.initial_work_tile_info()
                producer = ab_pipe.make_producer()
                while work.is_valid_tile:
                    m, n, batch = work.tile_idx
                    for k in cutlass.range(k_tiles, unroll=1):
                        slot = producer.acquire_and_advance()  # wait "empty", arm "full" with tx bytes
                        cute.copy(tma_a, tAgA[(None, m, k, batch)], tAsA[(None, slot.index)],
                                  tma_bar_ptr=slot.barrier, mcast_mask=a_mask)
                        cute.copy(tma_b, tBgB[(None, n, k, batch)], tBsB[(None, slot.index)],
                                  tma_bar_ptr=slot.barrier, mcast_mask=b_mask)
                    sched.advance_to_next_work()
                    work = sched.get_current_work()
                producer.tail()  # don't exit while peers may still signal our barriers
        else:
            cute.arch.setmaxregister_increase(232)  # 64 x 256 fp32 accumulators = 128 regs/thread
            ctid = tidx - WG  # thread index among the consumers
            thr_mma = tiled_mma.get_slice((wg - 1) * WG)
            tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))  # smem descriptors
            tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
            acc = cute.make_rmem_tensor(thr_mma.partition_C(gC).shape[:3], self.acc_dtype)
            k_blocks = cute.size(tCrA, mode=[2])

            # epilogue: registers -> (stmatrix) smem subtile -> TMA store, epi_stages in flight
            r2s_atom = sm90.get_smem_store_op(self.c_major, self.c_dtype, self.acc_dtype)
            r2s = cute.make_tiled_copy_S(r2s_atom, cute.make_tiled_copy_C_atom(r2s_atom, tiled_mma))
            thr_r2s = r2s.get_slice(ctid)
            tRS_sC = thr_r2s.partition_D(sC)  # (R2S, R2S_M, R2S_N, epi_stages)
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
            # accumulate into acc, which is zeroed per tile (cheaper than special-casing k = 0)
            tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
            while work.is_valid_tile:
                m, n, batch = work.tile_idx
                acc.fill(0.0)
                warpgroup.fence()  # order the register writes above before the async wgmmas
                for k in cutlass.range(k_tiles, unroll=1):
                    ab_pipe.consumer_wait(read)
                    for kb in cutlass.range_constexpr(k_blocks):
                        cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, read.index)],
                                  tCrB[(None, None, kb, read.index)], acc)
                    warpgroup.commit_group()
                    # keep one k-tile of wgmmas in flight; the one before it is done reading smem,
                    # so its stage goes back to the producer
                    warpgroup.wait_group(1)
                    if k > 0:
                        ab_pipe.consumer_release(free)
                        free.advance()
                    read.advance()
                warpgroup.wait_group(0)
                ab_pipe.consumer_release(free)
                free.advance()

                # this tile's C, in epi_tile pieces; a rolling buffer index across tiles keeps the
                # "buffer is free" invariant of the store pipeline whatever the piece count
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
                    cute.arch.fence_proxy("async.shared", space="cta")  # generic writes -> TMA reads
                    epi_bar.arrive_and_wait()
                    if warp == 4:
                        cute.copy(tma_c, bSG_sC[(None, buf)], bSG_gC[(None, (e // epi_n, e % epi_n))])
                        store_pipe.producer_commit()
                        store_pipe.producer_acquire()  # next buffer's previous store has read smem
                    epi_bar.arrive_and_wait()
                sched.advance_to_next_work()
                work = sched.get_current_work()
            store_pipe.producer_tail()


def supports(case, variant=""):
    if device_arch() not in ("", "sm_90a"):
        return f"the warpgroup-MMA + TMA GEMM is Hopper-only (sm_90a), this GPU is {device_arch()}"
    if case.dtype == "float32":
        return "warpgroup MMA has no IEEE float32 product (TF32 would fail the float32 check)"
    if case.shape["K"] % 8 or case.shape["N"] % 8:
        return "TMA needs 16-byte aligned rows: K and N must be multiples of 8 for 16-bit types"
    if case.shape["M"] == 1:
        # the static layouts drop a mode of extent 1: A's and C's TMA copies come out rank 1
        # (cp.async.bulk.tensor.1d in the PTX) against the 2-D swizzled tile, an illegal instruction
        return "M = 1: the static layouts drop the M mode and A's and C's TMA copies lose a rank (a GEMV)"
    return None


def operand_views(a, b, c):
    """The kernel's batched (mode0, mode1, L) operands as views of the lab's row-major matrices."""
    (m, k), n = a.shape, b.shape[1]
    return (a.as_strided((m, k, 1), (k, 1, m * k)), b.as_strided((n, k, 1), (1, n, k * n)),
            c.as_strided((m, n, 1), (n, 1, m * n)))


def compile_case(case, inputs, outputs, variant, options="", **knobs):
    """`knobs`: HopperGemm's (tile_mn, cluster_mn, swizzle, ...), default TILE_MN and CLUSTER_MN; a
    2x1 cluster only where the M tiles pair up (an odd count would leave one CTA of a pair a tile
    wholly outside C: that path has not run on a GPU yet)."""
    views = operand_views(inputs["a"], inputs["b"], outputs["c"])
    tensors = [as_cute(t, variant) for t in views]
    cluster = CLUSTER_MN if -(-case.shape["M"] // TILE_MN[0]) % CLUSTER_MN[0] == 0 else (1, 1)
    kernel = HopperGemm(**{"tile_mn": TILE_MN, "cluster_mn": cluster, **ORDER, **knobs})
    return compile_once(kernel, tensors, variant, options), tensors


def build(case, inputs, outputs, stream, variant="", **knobs):
    compiled, tensors = compile_case(case, inputs, outputs, variant, **knobs)
    return launcher(compiled, tensors, operand_views(inputs["a"], inputs["b"], outputs["c"]), stream, variant)
