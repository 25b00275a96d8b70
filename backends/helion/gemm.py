"""C = A @ B in Helion, as its matmul example writes it: a tile of C per program, a K loop into a
float32 accumulator (hl.dot; the example's torch.addmm is the same tl.dot on a GPU). fp32 sets
dot_precision="ieee": Helion's default (TRITON_F32_DEFAULT) is TF32, which is not an fp32 GEMM."""
import helion
import helion.language as hl
import torch

from backends.helion import effort, interpreted, prepared

INTERPRETER_MIN_SIDE = 16      # Helion pads smaller dims, which Triton's interpreter mishandles


def supports(case, variant=""):
    if interpreted() and (case.dtype == "bfloat16" or min(case.shape.values()) < INTERPRETER_MIN_SIDE):
        return "Triton interpreter: it mishandles bf16 tl.dot and Helion's padding of dims under 16"
    return None


def matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
    m, k = a.size()
    n = b.size(1)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = hl.dot(a[tile_m, tile_k], b[tile_k, tile_n], acc=acc)
        c[tile_m, tile_n] = acc.to(c.dtype)


def fixed(dtype):
    if interpreted():
        return helion.Config(block_sizes=[32, 32, 32], num_warps=4, num_stages=1)
    if dtype == torch.float32:
        return helion.Config(block_sizes=[128, 128, 32], l2_groupings=[8], num_warps=8, num_stages=3)
    return helion.Config(block_sizes=[128, 256, 64], l2_groupings=[8], num_warps=8, num_stages=3)


def build(case, inputs, outputs, stream, variant=""):
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    precision = "ieee" if a.dtype == torch.float32 else "tf32"   # tf32 only ever applies to fp32 inputs
    kernel = helion.kernel(matmul, autotune_effort=effort(), dot_precision=precision, static_shapes=True,
                           # as Helion's matmul example: tl.dot is pipelined by num_stages
                           autotune_config_overrides={"range_unroll_factors": [0, 0], "range_num_stages": [0, 0]})
    return prepared(kernel, (a, b, c), (a, b, torch.empty_like(c)), fixed(a.dtype), variant)
