"""gluon[persistent]: gemm.py's GEMM made persistent, as Gluon's 07-persistence tutorial does it: one
program per SM walks the output tiles (grouped order, a stride of the grid), the TMA ring and its
mbarriers kept across tiles with running load and MMA counts, and each tile's TMA store left in flight
while the next tile's loads start (the store is waited for only before C's tile in shared memory is
written again).

Works as follows:
1. A program's first tile: the loads of its first BUFFERS - 1 K steps.
2. Per K step, as gemm.py: wait for the stage, issue the wgmma, wait until only it is in flight, refill
   the stage the one before it read with the step BUFFERS - 1 ahead (none past the tile's last).
3. After the tile's last wgmma, the previous tile's store is waited for, C's tile written to shared
   memory and stored by TMA without waiting; the next tile's first loads follow at once.

Constraints: gemm.py's; C's tile has shared memory of its own beside the ring (3 x 48 + 64 KiB)."""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

from backends.base import compiling
from backends.gluon._pipeline import grouped_tile, load_stage
from backends.gluon.gemm import BM, BN, BUFFERS, GROUP, WARPS, descriptors


@gluon.jit
def issue_load(a_desc, b_desc, ready, a_bufs, b_bufs, off_m, off_n, k, produced, BUFFERS: gl.constexpr):
    s = produced % BUFFERS
    load_stage(a_desc, (off_m, k), b_desc, (k, off_n), ready.index(s), a_bufs.index(s), b_bufs.index(s))
    return produced + 1


@gluon.jit
def persistent_matmul(a_desc, b_desc, c_desc, M, N, K, GROUP: gl.constexpr, BUFFERS: gl.constexpr,
                      num_warps: gl.constexpr):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    dtype: gl.constexpr = a_desc.dtype

    a_bufs = gl.allocate_shared_memory(dtype, [BUFFERS, BM, BK], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [BUFFERS, BK, BN], b_desc.layout)
    c_smem = gl.allocate_shared_memory(dtype, [BM, BN], c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [BUFFERS, 1], mbarrier.MBarrierLayout())
    for stage in gl.static_range(BUFFERS):
        mbarrier.init(ready.index(stage), count=1)
    layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                     instr_shape=[16, BN, 256 // dtype.primitive_bitwidth])

    tiles_m, tiles_n = gl.cdiv(M, BM), gl.cdiv(N, BN)
    steps = gl.cdiv(K, BK)
    produced = 0
    consumed = 0
    for tile in range(gl.program_id(0), tiles_m * tiles_n, gl.num_programs(0)):
        off_m, off_n = grouped_tile(tile, M, N, BM, BN, GROUP)
        for k in range(0, min(BUFFERS - 1, steps)):
            produced = issue_load(a_desc, b_desc, ready, a_bufs, b_bufs, off_m, off_n, k * BK, produced, BUFFERS)
        acc = gl.zeros((BM, BN), dtype=gl.float32, layout=layout)
        for i in range(steps):
            s = consumed % BUFFERS
            mbarrier.wait(ready.index(s), consumed // BUFFERS & 1)
            acc = warpgroup_mma(a_bufs.index(s), b_bufs.index(s), acc, is_async=True)
            acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc, ))
            consumed += 1
            if i + BUFFERS - 1 < steps:
                produced = issue_load(a_desc, b_desc, ready, a_bufs, b_bufs, off_m, off_n, (i + BUFFERS - 1) * BK,
                                      produced, BUFFERS)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
        tma.store_wait(pendings=0)           # the last tile's store has read C's tile
        c_smem.store(acc.to(dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(pendings=0)
    for stage in gl.static_range(BUFFERS):
        mbarrier.invalidate(ready.index(stage))


def build(case, inputs, outputs, stream, variant=""):
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    (m, k), n = a.shape, b.shape[1]
    descs = descriptors(a, b, c)
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    grid = (min(sms, triton.cdiv(m, BM) * triton.cdiv(n, BN)),)
    with compiling():
        persistent_matmul.warmup(*descs, m, n, k, GROUP, BUFFERS, num_warps=WARPS, grid=grid)

    def run():
        persistent_matmul[grid](*descs, m, n, k, GROUP, BUFFERS, num_warps=WARPS)

    return run

