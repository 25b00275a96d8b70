"""C = dequant(A) @ dequant(B)^T in Helion, its FP8 GEMM example's hl.dot on the e4m3 tiles with the
block scales added: a tile of C per program, a K loop of BLOCK (one scale block), each step's hl.dot
into a fresh float32 partial sum scaled by A's row scales and B's block scale into the float32
accumulator (the promotion FP8 tensor cores need, problems/gemm_fp8.py); a tensorwise case scales
once, at the end, by its one scale each (its partial sums are promoted every BLOCK of K all the same).
Helion's own blockwise example (fp8_gemm_blockwise) is marked not functional, so this one is ours."""
import helion
import helion.language as hl
import torch

from backends.helion import effort, interpreted, prepared

BLOCK = 128                     # a scale block of K


def blockwise(a: torch.Tensor, b: torch.Tensor, a_scale: torch.Tensor, b_scale: torch.Tensor,
              c: torch.Tensor) -> None:
    m, k = a.size()
    n = b.size(0)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        b_rows = tile_n.index // BLOCK                 # B's scale block of each column of the tile
        for tile_k in hl.tile(k, block_size=BLOCK):
            partial = hl.dot(a[tile_m, tile_k], b[tile_n, tile_k].T)
            kb = tile_k.begin // BLOCK
            acc = acc + partial * a_scale[tile_m, kb][:, None] * b_scale[b_rows, kb][None, :]
        c[tile_m, tile_n] = acc.to(c.dtype)


def tensorwise(a: torch.Tensor, b: torch.Tensor, a_scale: torch.Tensor, b_scale: torch.Tensor,
               c: torch.Tensor) -> None:
    m, k = a.size()
    n = b.size(0)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k, block_size=BLOCK):
            acc = acc + hl.dot(a[tile_m, tile_k], b[tile_n, tile_k].T)
        c[tile_m, tile_n] = (acc * (a_scale[0, 0] * b_scale[0, 0])).to(c.dtype)


def supports(case, variant=""):
    if interpreted():
        return ("Triton interpreter: it rounds float32 to bfloat16 toward zero (a GPU to nearest); "
                "tests/test_gemm_fp8.py checks the kernels' float32 sums there")
    return None


def fixed():
    if interpreted():
        return helion.Config(block_sizes=[32, 32], num_warps=4, num_stages=1)
    return helion.Config(block_sizes=[128, 128], l2_groupings=[8], num_warps=8, num_stages=4)


def build(case, inputs, outputs, stream, variant=""):
    a, b = (inputs[x].view(torch.float8_e4m3fn) for x in ("a", "b"))      # the e4m3 bits as e4m3
    a_scale, b_scale, c = inputs["a_scale"], inputs["b_scale"], outputs["c"]
    kernel = helion.kernel(blockwise if case.shape["blockwise"] else tensorwise, autotune_effort=effort(),
                           static_shapes=True)
    return prepared(kernel, (a, b, a_scale, b_scale, c), (a, b, a_scale, b_scale, torch.empty_like(c)),
                    fixed(), variant)
