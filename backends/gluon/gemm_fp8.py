"""C = dequant(A) @ dequant(B)^T in Gluon on Hopper: e4m3 tiles by TMA into a ring of BUFFERS
mbarrier-guarded stages, one asynchronous FP8 wgmma per 128 of K (one scale block) into a fresh
float32 partial sum, which is scaled by A's row scales and B's block scale and added into the float32
accumulator: the promotion FP8 tensor cores need (problems/gemm_fp8.py), as DeepGEMM and CUTLASS's
Hopper FP8 kernels do it.

Works as follows:
1. Each program takes a BM x BN tile of C (BN = 128: one of B's scale blocks), in grouped order.
2. It issues the TMA loads of its first BUFFERS K steps; per step it waits for that stage, runs the
   wgmma (A and B both K-major, as FP8 wgmma takes them), waits for it, refills the stage with the
   step BUFFERS ahead, and adds the partial sum times its scales (a tensorwise case: strides of 0
   into one scale each) to the accumulator while the loads fly.
3. C is rounded to bfloat16 and stored from the accumulator's layout, masked (any M and N).
Variant `overlap`: each step's scales are loaded before its stage's wait, and the previous step's
partial sum is scaled into the accumulator while this step's wgmma runs (two partial sums in
registers), so the MMAs no longer wait for the scaling, as DeepGEMM's consumers overlap theirs.

Constraints: K a multiple of 128 (the problem's); TMA needs K's rows 16-byte aligned, which they are."""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, warpgroup_mma, warpgroup_mma_wait
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from backends.base import compiling
from backends.gluon._pipeline import grouped_tile, load_stage

BM, BN, BK = 128, 128, 128   # BN and BK: one scale block of B; 16 KiB of A and of B a stage
BUFFERS = 4
GROUP = 8
WARPS = 8                    # two warpgroups: 64 rows each, partial sum and accumulator in registers


@gluon.jit
def scaled_matmul(a_desc, b_desc, c_ptr, as_ptr, bs_ptr, M, N, K, s_am, s_ak, s_bn, s_bk,
                  GROUP: gl.constexpr, BUFFERS: gl.constexpr, OVERLAP: gl.constexpr, num_warps: gl.constexpr):
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_desc.block_type.shape[0]
    off_m, off_n = grouped_tile(gl.program_id(0), M, N, BM, BN, GROUP)

    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [BUFFERS, BM, BK], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [BUFFERS, BN, BK], b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [BUFFERS, 1], mbarrier.MBarrierLayout())
    for stage in gl.static_range(BUFFERS):
        mbarrier.init(ready.index(stage), count=1)

    steps = K // BK
    for first in gl.static_range(BUFFERS):
        load_stage(a_desc, (off_m, first * BK), b_desc, (off_n, first * BK), ready.index(first), a_bufs.index(first),
                   b_bufs.index(first), pred=first < steps)

    layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                     instr_shape=[16, BN, 256 // a_desc.dtype.primitive_bitwidth])
    rows = off_m + gl.arange(0, BM, layout=gl.SliceLayout(1, layout))
    cols = off_n + gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
    zero = gl.zeros((BM, BN), dtype=gl.float32, layout=layout)
    part = zero                                                      # each step's registers, reused
    acc = gl.zeros((BM, BN), dtype=gl.float32, layout=layout)
    prev, prev_scale = zero, gl.zeros((BM, ), dtype=gl.float32, layout=gl.SliceLayout(1, layout))   # overlap
    for i in range(steps):
        s = i % BUFFERS
        if OVERLAP:              # in flight while the stage is awaited and the MMA runs
            a_scale = gl.load(as_ptr + rows * s_am + i * s_ak, mask=rows < M, other=0.0)
            b_scale = gl.load(bs_ptr + off_n // BN * s_bn + i * s_bk)
        mbarrier.wait(ready.index(s), i // BUFFERS & 1)
        if OVERLAP:              # a fresh partial sum, the last one scaled meanwhile
            part = warpgroup_mma(a_bufs.index(s), b_bufs.index(s).permute((1, 0)), zero, use_acc=False,
                                 is_async=True)
            acc += prev * gl.expand_dims(prev_scale, 1)
        else:
            part = warpgroup_mma(a_bufs.index(s), b_bufs.index(s).permute((1, 0)), part, use_acc=False,
                                 is_async=True)
        part = warpgroup_mma_wait(num_outstanding=0, deps=(part, ))
        ahead = i + BUFFERS
        load_stage(a_desc, (off_m, ahead * BK), b_desc, (off_n, ahead * BK), ready.index(s), a_bufs.index(s),
                   b_bufs.index(s), pred=ahead < steps)
        if OVERLAP:
            prev, prev_scale = part, a_scale * b_scale
        else:
            a_scale = gl.load(as_ptr + rows * s_am + i * s_ak, mask=rows < M, other=0.0)
            b_scale = gl.load(bs_ptr + off_n // BN * s_bn + i * s_bk)
            acc += part * gl.expand_dims(a_scale * b_scale, 1)
    if OVERLAP:
        acc += prev * gl.expand_dims(prev_scale, 1)
    for stage in gl.static_range(BUFFERS):
        mbarrier.invalidate(ready.index(stage))

    row, col = gl.expand_dims(rows, 1), gl.expand_dims(cols, 0)
    gl.store(c_ptr + row.to(gl.int64) * N + col, acc.to(c_ptr.dtype.element_ty), mask=(row < M) & (col < N))


def descriptors(a, b):
    e4m3 = [x.view(torch.float8_e4m3fn) for x in (a, b)]
    return [TensorDescriptor.from_tensor(x, block, gl.NVMMASharedLayout.get_default_for(block, gl.float8e4nv))
            for x, block in zip(e4m3, ([BM, BK], [BN, BK]), strict=True)]


def scale_strides(case, a_scale, b_scale):
    return (*a_scale.stride(), *b_scale.stride()) if case.shape["blockwise"] else (0, 0, 0, 0)


def build(case, inputs, outputs, stream, variant=""):
    a, b, c, a_scale, b_scale = inputs["a"], inputs["b"], outputs["c"], inputs["a_scale"], inputs["b_scale"]
    (m, k), n = a.shape, b.shape[0]
    descs, strides = descriptors(a, b), scale_strides(case, a_scale, b_scale)
    grid, overlap = (triton.cdiv(m, BM) * triton.cdiv(n, BN),), variant == "overlap"
    with compiling():
        scaled_matmul.warmup(*descs, c, a_scale, b_scale, m, n, k, *strides, GROUP, BUFFERS, overlap,
                             num_warps=WARPS, grid=grid)

    def run():
        scaled_matmul[grid](*descs, c, a_scale, b_scale, m, n, k, *strides, GROUP, BUFFERS, overlap,
                            num_warps=WARPS)

    return run


def export(case, variant, target):
    """The case's kernel compiled for `target` (sm_90a) without a GPU: its cubin."""
    from backends.gluon import cubin
    m, n, k = (case.shape[d] for d in "MNK")
    a, b = torch.empty(m, k, dtype=torch.uint8), torch.empty(n, k, dtype=torch.uint8)
    a_scale, b_scale = torch.empty(m, k // BK), torch.empty(-(-n // BN), k // BK)
    a_desc, b_desc = descriptors(a, b)
    strides = dict(zip(("s_am", "s_ak", "s_bn", "s_bk"), scale_strides(case, a_scale, b_scale), strict=True))
    args = {"a_desc": a_desc, "b_desc": b_desc, "c_ptr": torch.empty(m, n, dtype=torch.bfloat16), "as_ptr": a_scale,
            "bs_ptr": b_scale, "M": m, "N": n, "K": k, **strides}
    constexprs = {"GROUP": GROUP, "BUFFERS": BUFFERS, "OVERLAP": variant == "overlap", "num_warps": WARPS}
    return cubin(scaled_matmul, args, constexprs, WARPS, target)
