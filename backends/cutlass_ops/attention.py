"""No attention in the CUTLASS Operator API: its operators take GEMM and grouped-GEMM arguments (with
fused epilogues) only. Two of its GEMMs with the softmax between them in PyTorch would be the
materialised attention of the array_api row, not a fused kernel."""
from backends.base import not_expressible

supports, build = not_expressible(
    "the CUTLASS Operator API's operators are GEMMs and grouped GEMMs: it has no fused attention")
