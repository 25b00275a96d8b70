"""C = A @ B in CuTe DSL: CUTLASS's Hopper example kernel (TMA loads into a multistage shared-memory
pipeline, warpgroup MMA, TMA store; _hopper_gemm.py), fed the lab's layouts. The example takes
(M, K, L) A, (N, K, L) B and (M, N, L) C and reads each operand's major mode from its strides, so the
lab's row-major B enters as B^T viewed N-major, with no copy. TMA needs 16-byte aligned rows: K and N
a multiple of 8 (16-bit types); other shapes are not applicable, as is float32 (warpgroup MMA has no
IEEE float32 product; TF32 would fail the float32 check)."""
import cutlass

from backends.cute_dsl import as_cute, compile_once, launcher
from backends.cute_dsl._hopper_gemm import HopperWgmmaGemmKernel

TILE_MN, CLUSTER_MN = (128, 256), (1, 1)


def supports(case):
    if case.dtype == "float32":
        return "warpgroup MMA has no IEEE float32 product (TF32 would fail the float32 check)"
    if case.shape["K"] % 8 or case.shape["N"] % 8:
        return "TMA needs 16-byte aligned rows: K and N must be multiples of 8 for 16-bit types"
    return None


def operand_views(a, b, c):
    """The example's batched (mode0, mode1, L) operands as views of the lab's row-major matrices."""
    (m, k), n = a.shape, b.shape[1]
    return (a.as_strided((m, k, 1), (k, 1, m * k)), b.as_strided((n, k, 1), (1, n, k * n)),
            c.as_strided((m, n, 1), (n, 1, m * n)))


def compile_case(case, inputs, outputs, variant, options=""):
    views = operand_views(inputs["a"], inputs["b"], outputs["c"])
    tensors = [as_cute(t, variant) for t in views]
    kernel = HopperWgmmaGemmKernel(cutlass.Float32, TILE_MN, CLUSTER_MN)
    return compile_once(kernel, tensors, variant, options), tensors


def build(case, inputs, outputs, stream, variant):
    compiled, tensors = compile_case(case, inputs, outputs, variant)
    return launcher(compiled, tensors, operand_views(inputs["a"], inputs["b"], outputs["c"]), stream, variant)
