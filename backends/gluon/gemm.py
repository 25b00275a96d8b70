"""C = A @ B in Gluon, the Hopper way its tutorials teach (05-wgmma, 07-persistence): TMA copies of
A and B tiles into a ring of BUFFERS shared-memory stages, each guarded by an mbarrier, and
asynchronous warpgroup MMAs (wgmma) accumulating in registers.

Works as follows:
1. Each program takes a BM x BN tile of C, in grouped order (GROUP rows of tiles share B's columns in L2).
2. It issues the TMA loads of its first BUFFERS - 1 K steps, then, per K step: waits for that stage's
   barrier, issues the wgmma on it, waits until only that wgmma is in flight (the one before it has
   read its stage), and refills the stage the earlier one read with the K step BUFFERS - 1 ahead.
3. The float32 accumulator is rounded to C's dtype in shared memory and written by one TMA store.

Constraints: 16-bit inputs (wgmma's fp32 inputs would be TF32); TMA needs 16-byte row pitches (K and N
multiples of 8). TMA zero-fills the tiles beyond M, N and K, and clips the store."""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from backends.base import compiling
from backends.gluon._pipeline import grouped_tile, load_stage

BM, BN, BK = 128, 256, 64    # the widest wgmma (m64n256k16) for two warpgroups; 48 KiB of A and B a stage
BUFFERS = 3                  # 3 x 48 KiB stages and C's 64 KiB tile fill the SM's 227 KiB
GROUP = 8
WARPS = 8                    # two warpgroups: 128 accumulator registers a thread
ALIGN = 8                    # elements in 16 bytes


@gluon.jit
def matmul(a_desc, b_desc, c_desc, M, N, K, GROUP: gl.constexpr, BUFFERS: gl.constexpr, num_warps: gl.constexpr):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    dtype: gl.constexpr = a_desc.dtype
    off_m, off_n = grouped_tile(gl.program_id(0), M, N, BM, BN, GROUP)

    a_bufs = gl.allocate_shared_memory(dtype, [BUFFERS, BM, BK], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [BUFFERS, BK, BN], b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [BUFFERS, 1], mbarrier.MBarrierLayout())
    for stage in gl.static_range(BUFFERS):
        mbarrier.init(ready.index(stage), count=1)

    steps = gl.cdiv(K, BK)
    for first in gl.static_range(BUFFERS - 1):
        load_stage(a_desc, (off_m, first * BK), b_desc, (first * BK, off_n), ready.index(first), a_bufs.index(first),
                   b_bufs.index(first), pred=first < steps)

    layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                     instr_shape=[16, BN, 256 // dtype.primitive_bitwidth])
    acc = gl.zeros((BM, BN), dtype=gl.float32, layout=layout)
    for i in range(steps):
        s = i % BUFFERS
        mbarrier.wait(ready.index(s), i // BUFFERS & 1)
        acc = warpgroup_mma(a_bufs.index(s), b_bufs.index(s), acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc, ))
        ahead = i + BUFFERS - 1
        t = ahead % BUFFERS
        load_stage(a_desc, (off_m, ahead * BK), b_desc, (ahead * BK, off_n), ready.index(t), a_bufs.index(t),
                   b_bufs.index(t), pred=ahead < steps)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
    for stage in gl.static_range(BUFFERS):
        mbarrier.invalidate(ready.index(stage))

    c_smem = gl.allocate_shared_memory(dtype, [BM, BN], c_desc.layout)
    c_smem.store(acc.to(dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(pendings=0)


def supports(case, variant=""):
    if case.dtype not in ("bfloat16", "float16"):
        return "16-bit inputs only (wgmma's fp32 inputs would be TF32)"
    if case.shape["K"] % ALIGN or case.shape["N"] % ALIGN:
        return f"TMA needs 16-byte row pitches: K and N multiples of {ALIGN}"
    return None


def descriptors(a, b, c):
    gl_dtype = {torch.bfloat16: gl.bfloat16, torch.float16: gl.float16}[a.dtype]
    return [TensorDescriptor.from_tensor(x, block, gl.NVMMASharedLayout.get_default_for(block, gl_dtype))
            for x, block in ((a, [BM, BK]), (b, [BK, BN]), (c, [BM, BN]))]


def build(case, inputs, outputs, stream, variant=""):
    if variant == "persistent":         # one program per SM over the tiles (_gemm_persistent.py)
        from backends.gluon import _gemm_persistent
        return _gemm_persistent.build(case, inputs, outputs, stream)
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    (m, k), n = a.shape, b.shape[1]
    descs = descriptors(a, b, c)
    grid = (triton.cdiv(m, BM) * triton.cdiv(n, BN),)
    with compiling():
        matmul.warmup(*descs, m, n, k, GROUP, BUFFERS, num_warps=WARPS, grid=grid)

    def run():
        matmul[grid](*descs, m, n, k, GROUP, BUFFERS, num_warps=WARPS)

    return run


def export(case, variant, target):
    """The case's kernel (the variant's) compiled for `target` (sm_90a) without a GPU: its cubin."""
    from backends.gluon import _gemm_persistent, cubin
    kernel = _gemm_persistent.persistent_matmul if variant == "persistent" else matmul
    m, n, k = (case.shape[d] for d in "MNK")
    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}[case.dtype]
    descs = descriptors(*(torch.empty(shape, dtype=dtype) for shape in ((m, k), (k, n), (m, n))))
    args = {**dict(zip(("a_desc", "b_desc", "c_desc"), descs, strict=True)), "M": m, "N": n, "K": k}
    return cubin(kernel, args, {"GROUP": GROUP, "BUFFERS": BUFFERS, "num_warps": WARPS}, WARPS, target)
