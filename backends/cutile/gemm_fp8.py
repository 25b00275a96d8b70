"""C = dequant(A) @ dequant(B)^T in cuTile, the way NVIDIA's TileGym writes its block-scaled FP8 GEMM
(fp8_quantization_matmul): a K loop of BLOCK = 128 (one scale block) whose ct.mma of the e4m3 tiles
starts from a zero float32 tile each step, scaled by A's per-row and B's per-block scale of that block
and added into the float32 accumulator, the promotion every 128 of K that Hopper's FP8 tensor cores
need (problems/gemm_fp8.py). Unlike TileGym's gather / scatter version, tiles move by ct.load /
ct.store as the lab's cuTile GEMM does (TMA, zero padding, output tiles in grouped order).

Works as follows:
1. A's and B's e4m3 bits (uint8) load as (TM, BLOCK) and (TN, BLOCK) tiles and are bitcast to
   float8_e4m3fn; B's tile is transposed into the MMA's (BLOCK, TN) operand (K-major, as wgmma takes it).
2. TN = BLOCK, so a tile of C meets one of B's scale blocks per K step: A's scales load as a (TM, 1)
   tile, B's as (1, 1); a tensorwise case loads its one scale each from (0, 0).
3. The accumulator rounds once to bfloat16 into C.

Constraints: K a multiple of BLOCK (the problem's); M and N anything (partial tiles pad with zeros)."""
import cuda.tile as ct

from backends.cutile.gemm import load, swizzle_2d

BLOCK = 128                  # the scales' block: K per step, and C's tile width
TM = 128
HINTS = {"num_worker_warps": 8}      # two consumer warpgroups: 64 rows of the partial and the accumulator each
LATENCY = 4                  # the loads' prefetch hint
FP8_CAPABILITY = (9, 0)      # cuTile's float8_e4m3fn needs it
ConstInt, ConstBool = ct.Constant[int], ct.Constant[bool]


@ct.kernel
def scaled_matmul(a, b, c, a_scale, b_scale, tm: ConstInt, latency: ConstInt, blockwise: ConstBool):
    bm, bn = swizzle_2d(a.shape[0], b.shape[0], tm, BLOCK, ct.bid(0))
    acc = ct.full((tm, BLOCK), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(a, axis=1, shape=(tm, BLOCK))):
        ta = ct.bitcast(load(a, (bm, k), (tm, BLOCK), latency), ct.float8_e4m3fn)
        tb = ct.bitcast(load(b, (bn, k), (BLOCK, BLOCK), latency), ct.float8_e4m3fn)
        part = ct.mma(ta, ct.transpose(tb), ct.full((tm, BLOCK), 0, dtype=ct.float32))
        if blockwise:
            sa = ct.load(a_scale, index=(bm, k), shape=(tm, 1), padding_mode=ct.PaddingMode.ZERO)
            sb = ct.load(b_scale, index=(bn, k), shape=(1, 1))
        else:
            sa = ct.load(a_scale, index=(0, 0), shape=(1, 1))
            sb = ct.load(b_scale, index=(0, 0), shape=(1, 1))
        acc = acc + part * sa * sb
    ct.store(c, index=(bm, bn), tile=acc.astype(c.dtype))


def supports(case, variant=""):
    from backends.gpus import gpus
    found = gpus()
    if found and tuple(map(int, found[0]["compute_capability"].split("."))) < FP8_CAPABILITY:
        return f"cuTile's float8_e4m3fn needs sm_90 or later (this GPU: {found[0]['compute_capability']})"
    return None


def launch_plan(m, n, blockwise, tm=None, hints=None, latency=None):
    """(kernel, grid, constants) for a case: the constants above, or the knobs given."""
    tm = tm or TM
    hints = HINTS if hints is None else hints
    kernel = scaled_matmul.replace_hints(**hints) if hints else scaled_matmul
    grid = (ct.cdiv(m, tm) * ct.cdiv(n, BLOCK),)
    return kernel, grid, (tm, LATENCY if latency is None else latency, bool(blockwise))


def build(case, inputs, outputs, stream, variant="", **knobs):
    import torch

    from backends.cutile import compile_on_scratch
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    kernel, grid, consts = launch_plan(a.shape[0], b.shape[0], case.shape["blockwise"], **knobs)
    scales = (inputs["a_scale"], inputs["b_scale"])
    compile_on_scratch(stream, grid, kernel, (a, b, torch.empty_like(c), *scales, *consts))

    def run():
        ct.launch(stream, grid, kernel, (a, b, c, *scales, *consts))

    return run


def export(case, variant, target, **knobs):
    """The case's kernel compiled ahead of time for `target`."""
    import problems
    from backends.cutile import array_param, cubin
    shapes = problems.get("gemm_fp8").input_shapes(case)
    kernel, _, consts = launch_plan(case.shape["M"], case.shape["N"], case.shape["blockwise"], **knobs)
    params = [array_param("uint8", shapes["a"]), array_param("uint8", shapes["b"]),
              array_param("bfloat16", (case.shape["M"], case.shape["N"])),
              array_param("float32", shapes["a_scale"]), array_param("float32", shapes["b_scale"])]
    return cubin(kernel, [*params, *consts], target)
