"""No scan in the CUTLASS Operator API: its operators take GEMM and grouped-GEMM arguments (with fused
epilogues) only."""
from backends.base import not_expressible

supports, build = not_expressible(
    "the CUTLASS Operator API's operators are GEMMs and grouped GEMMs: it has no scan")
