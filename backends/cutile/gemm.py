"""C = A @ B in cuTile, as its MatMul sample writes it: output tiles in grouped (swizzled) order
for L2 reuse, a K loop of ct.mma into a float32 accumulator, zero padding for partial tiles.
Unlike the sample, float32 stays float32 (the sample casts it to tfloat32, which is not an fp32
GEMM: the lab's check would reject it)."""
import cuda.tile as ct
import torch

from backends.cutile import compile_on_scratch

GROUP_M = 8
# 16-bit: 128x128x64 at one block per SM measured best on the H100 (82.9% of cuBLAS at 8192^3 bf16,
# against 5.6% for the sample's 128x256x64 at the default hints)
TILE = {"bfloat16": (128, 128, 64), "float16": (128, 128, 64), "float32": (32, 32, 32)}


def swizzle_2d(m, n, tm, tn, bid):
    tiles_m, tiles_n = ct.cdiv(m, tm), ct.cdiv(n, tn)
    group = bid // (GROUP_M * tiles_n)
    first_m = group * GROUP_M
    size_m = min(tiles_m - first_m, GROUP_M)
    return first_m + bid % size_m, (bid % (GROUP_M * tiles_n)) // size_m


@ct.kernel(occupancy=1)
def matmul(a, b, c, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bm, bn = swizzle_2d(a.shape[0], b.shape[1], tm, tn, ct.bid(0))
    acc = ct.full((tm, tn), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(a, axis=1, shape=(tm, tk))):
        ta = ct.load(a, index=(bm, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
        tb = ct.load(b, index=(k, bn), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(bm, bn), tile=acc.astype(c.dtype))


def build(case, inputs, outputs, stream):
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    tm, tn, tk = TILE[case.dtype]
    grid = (ct.cdiv(a.shape[0], tm) * ct.cdiv(b.shape[1], tn),)
    compile_on_scratch(stream, grid, matmul, (a, b, torch.empty_like(c), tm, tn, tk))

    def run():
        ct.launch(stream, grid, matmul, (a, b, c, tm, tn, tk))

    return run
