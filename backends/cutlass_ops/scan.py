"""No scan in the CUTLASS Operator API: its operators take GEMM and grouped-GEMM arguments (with fused
epilogues) only, so every scan case is not applicable, with that reason."""
REASON = "the CUTLASS Operator API's operators are GEMMs and grouped GEMMs: it has no scan"


def supports(case, variant=""):
    return REASON


def build(case, inputs, outputs, stream, variant=""):
    raise NotImplementedError(REASON)
