"""C = A @ B through QuACK's gemm into the lab's output, fp32 accumulation; A (M, K) and B (K, N)
row-major as they come (the kernel reads B N-major)."""
from quack.gemm_interface import gemm

ALIGN = 8       # TMA: 16-byte aligned rows of 16-bit elements


def supports(case, variant=""):
    if case.dtype not in ("bfloat16", "float16"):
        return f"QuACK's GEMM is written here for fp16 / bf16 (got {case.dtype})"
    if case.shape["K"] % ALIGN or case.shape["N"] % ALIGN:
        return "TMA needs 16-byte aligned rows: K and N must be multiples of 8 for 16-bit types"
    return None


def build(case, inputs, outputs, stream, variant=""):
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    tuned = variant == ""

    def run():
        gemm(a, b, out=c, tuned=tuned)

    return run
