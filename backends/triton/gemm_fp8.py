"""C = dequant(A) @ dequant(B)^T in Triton, the way DeepGEMM-style FP8 kernels write it: a K loop of
BK = 128 (one scale block), each block's tl.dot of the e4m3 tiles into a fresh float32 partial sum,
which is scaled by A's per-row and B's per-column scale of that block and added into the float32
accumulator: the promotion every 128 of K that FP8 tensor cores need (problems/gemm_fp8.py). A
tensorwise case takes the same loop with strides of 0 into its one scale each. Output tiles in
grouped order, autotuned over a few Hopper configs.

Variant `tma`: A's and B's tiles through tensor descriptors (TMA, out-of-bounds rows read as zeros),
as Triton's own Hopper FP8 GEMM (tutorial 09-persistent-matmul's matmul_tma) loads them: no tile of
64-bit pointers in registers (the pointer kernel's 128x128 config compiles to 255 registers and a
stack of 1184 bytes of spills for sm_90a, the descriptor one to 227 registers and none)."""
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from backends.base import compiling, timing_kernels
from backends.triton import interpreted
from backends.triton._grouped import grouped_tile

BK = 128                     # one scale block of K a step


def configs():
    if interpreted():                    # the interpreter runs one small config, no tuning
        return [triton.Config({"BM": 32, "BN": 32, "GROUP": 4}, num_warps=4, num_stages=1)]
    return [triton.Config({"BM": bm, "BN": bn, "GROUP": 8}, num_warps=w, num_stages=s)
            for bm, bn, w, s in ((128, 128, 8, 3), (128, 128, 4, 4), (128, 256, 8, 3), (64, 128, 4, 4),
                                 (128, 64, 4, 4))]


@triton.autotune(configs=configs(), key=["M", "N", "K", "s_am"])
@triton.jit
def scaled_matmul(a_ptr, b_ptr, c_ptr, as_ptr, bs_ptr, M, N, K, s_am, s_ak, s_bn, s_bk,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BM, BN, GROUP)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None].to(tl.int64) * K + rk[None, :]
    b_ptrs = b_ptr + rn[None, :].to(tl.int64) * K + rk[:, None]          # B is (N, K): a (BK, BN) tile
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kb in range(0, K // BK):
        a = tl.load(a_ptrs, mask=rm[:, None] < M, other=0).to(tl.float8e4nv, bitcast=True)
        b = tl.load(b_ptrs, mask=rn[None, :] < N, other=0).to(tl.float8e4nv, bitcast=True)
        sa = tl.load(as_ptr + rm * s_am + kb * s_ak, mask=rm < M, other=0.0)
        sb = tl.load(bs_ptr + rn // BK * s_bn + kb * s_bk, mask=rn < N, other=0.0)
        acc += tl.dot(a, b) * sa[:, None] * sb[None, :]
        a_ptrs += BK
        b_ptrs += BK
    c_ptrs = c_ptr + rm[:, None].to(tl.int64) * N + rn[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def tile_shapes(nargs):
    """The autotuner's pre-hook: each config's tile shapes on the descriptors (made with a dummy one)."""
    nargs["a_desc"].block_shape = [nargs["BM"], nargs["BK"]]
    nargs["b_desc"].block_shape = [nargs["BN"], nargs["BK"]]


def tma_configs():
    return [triton.Config({"BM": bm, "BN": bn, "GROUP": 8}, num_warps=w, num_stages=s, pre_hook=tile_shapes)
            for bm, bn, w, s in TMA_CONFIGS]


# (BM, BN, warps, stages) that compile for sm_90a without spills (128x128 on 4 warps and 128x256 on 8
# spill 152 and 128 bytes); every config of the pointer kernel spills (96-4136 bytes)
TMA_CONFIGS = ((128, 128, 8, 4), (64, 128, 4, 5), (128, 64, 4, 5))


@triton.autotune(configs=tma_configs(), key=["M", "N", "K", "s_am"])
@triton.jit
def scaled_matmul_tma(a_desc, b_desc, c_ptr, as_ptr, bs_ptr, M, N, K, s_am, s_ak, s_bn, s_bk,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BM, BN, GROUP)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kb in range(0, K // BK):
        a = a_desc.load([pid_m * BM, kb * BK])
        b = b_desc.load([pid_n * BN, kb * BK])
        sa = tl.load(as_ptr + rm * s_am + kb * s_ak, mask=rm < M, other=0.0)
        sb = tl.load(bs_ptr + rn // BK * s_bn + kb * s_bk, mask=rn < N, other=0.0)
        acc += tl.dot(a, b.T) * sa[:, None] * sb[None, :]
    c_ptrs = c_ptr + rm[:, None].to(tl.int64) * N + rn[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def warm_up(kernel, args, grid):
    """Every config of an autotuned kernel compiled ahead of its first launch, each after its pre-hook
    (the descriptors' tile shapes), which the autotuner's own warmup() does not run."""
    for config in kernel.configs:
        if config.pre_hook:
            config.pre_hook({**dict(zip(kernel.arg_names, args, strict=False)), "BK": BK, **config.kwargs})
        kernel.fn.warmup(*args, BK=BK, grid=grid, **config.all_kwargs())


def build(case, inputs, outputs, stream, variant=""):
    a, b, c, a_scale, b_scale = inputs["a"], inputs["b"], outputs["c"], inputs["a_scale"], inputs["b_scale"]
    (m, k), n = a.shape, b.shape[0]
    strides = (*a_scale.stride(), *b_scale.stride()) if case.shape["blockwise"] else (0, 0, 0, 0)
    kernel, operands = scaled_matmul, (a, b)
    if variant == "tma":                 # tile_shapes() sets each config's on the descriptors
        kernel = scaled_matmul_tma
        operands = [TensorDescriptor.from_tensor(x.view(torch.float8_e4m3fn), [1, 1]) for x in (a, b)]

    def grid(meta):
        return (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)

    scratch = c.clone()       # the autotuner launches the kernel: on a scratch C, so the outputs stay poisoned
    if not interpreted():
        with compiling():
            warm_up(kernel, (*operands, scratch, a_scale, b_scale, m, n, k, *strides), grid)
    with timing_kernels():
        kernel[grid](*operands, scratch, a_scale, b_scale, m, n, k, *strides, BK=BK)

    def run():
        kernel[grid](*operands, c, a_scale, b_scale, m, n, k, *strides, BK=BK)

    return run
