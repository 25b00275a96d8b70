"""C = dequant(A) @ dequant(B)^T in TileLang, as its DeepGEMM example (example_deepgemm_fp8_2xAcc)
writes it: a 128x128 tile of C per program in swizzled order, a T.Pipelined K loop of 128 (one scale
block) that copies the e4m3 tiles into shared memory (TMA) and T.gemm's them (warpgroup MMA, B
transposed: it is K-major) into a fresh float32 fragment, which is scaled by A's row scales times B's
block scale and added into a second float32 fragment (the promotion FP8 tensor cores need,
problems/gemm_fp8.py), staged through shared memory on the way out. A tensorwise case takes the same
loop with its one scale each. T.copy zero-fills past the matrices' edges; the scale loads are guarded.

Unlike the example, the scales are read in the promotion loop itself: staged in shared memory as the
example does, every blockwise case past 4 blocks of K (the pipeline's depth) came out wrong on the H200
and every tensorwise one right, as if TileLang 0.1.15's pipeliner let a later step's scales overwrite
this step's; B's scale bound once a step, the example's exact form, does not compile ("used before
definition"). C is taken in 64x128 tiles, as the example's newer form does (TileLang #2103, "Optimize
hopper fp8 deepgemm tile size"; it reads the scales there too): faster on every bench case on the H200
than its first 128x128 tile, which the `m128` variant keeps."""
import tilelang.language as T
import torch

from backends.tilelang import compile_program

BLOCK = 128                      # a scale block of K, and C's tile (B's scale is one per 128 columns)
TILE_M, TILE_M_FIRST = 64, 128  # C's rows a program: the example's newer tile, and its first one (m128)
STAGES, THREADS = 4, 128         # the example's pipeline depth and one warpgroup


def program(case, variant=""):
    m, n, k = case.shape["M"], case.shape["N"], case.shape["K"]
    tile_m = TILE_M_FIRST if variant == "m128" else TILE_M
    blockwise = bool(case.shape["blockwise"])
    k_blocks = k // BLOCK
    a_scales = (m, k_blocks) if blockwise else (1, 1)
    b_scales = (T.ceildiv(n, BLOCK), k_blocks) if blockwise else (1, 1)

    @T.prim_func
    def scaled_matmul(a: T.Tensor((m, k), "float8_e4m3"), b: T.Tensor((n, k), "float8_e4m3"),
                      c: T.Tensor((m, n), "bfloat16"), a_scale: T.Tensor(a_scales, "float32"),
                      b_scale: T.Tensor(b_scales, "float32")):
        with T.Kernel(T.ceildiv(n, BLOCK), T.ceildiv(m, tile_m), threads=THREADS) as (bx, by):
            a_s = T.alloc_shared((tile_m, BLOCK), "float8_e4m3")
            b_s = T.alloc_shared((BLOCK, BLOCK), "float8_e4m3")
            c_s = T.alloc_shared((tile_m, BLOCK), "bfloat16")
            partial = T.alloc_fragment((tile_m, BLOCK), "float32")
            acc = T.alloc_fragment((tile_m, BLOCK), "float32")
            T.use_swizzle(panel_size=10)
            T.clear(partial)
            T.clear(acc)
            for kb in T.Pipelined(k_blocks, num_stages=STAGES):
                T.copy(a[by * tile_m, kb * BLOCK], a_s)
                T.copy(b[bx * BLOCK, kb * BLOCK], b_s)
                T.gemm(a_s, b_s, partial, transpose_B=True)
                for i, j in T.Parallel(tile_m, BLOCK):
                    if blockwise:
                        row = T.min(by * tile_m + i, m - 1)        # rows past M: any scale, their C is cut
                        acc[i, j] += partial[i, j] * (a_scale[row, kb] * b_scale[bx, kb])
                    else:
                        acc[i, j] += partial[i, j] * (a_scale[0, 0] * b_scale[0, 0])
                T.clear(partial)
            T.copy(acc, c_s)
            T.copy(c_s, c[by * tile_m, bx * BLOCK])

    return scaled_matmul


def build(case, inputs, outputs, stream, variant=""):
    kernel = compile_program(program(case, variant))
    a, b = (inputs[x].view(torch.float8_e4m3fn) for x in ("a", "b"))      # the e4m3 bits as e4m3
    c, a_scale, b_scale = outputs["c"], inputs["a_scale"], inputs["b_scale"]

    def run():
        kernel(a, b, c, a_scale, b_scale)

    return run
