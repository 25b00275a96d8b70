"""No attention in the CUTLASS Operator API: its operators take GEMM and grouped-GEMM arguments (with
fused epilogues) only. Two of its GEMMs with the softmax between them in PyTorch would be the
materialised attention of the array_api row, not a fused kernel; every case is not applicable."""
REASON = "the CUTLASS Operator API's operators are GEMMs and grouped GEMMs: it has no fused attention"


def supports(case, variant=""):
    return REASON


def build(case, inputs, outputs, stream, variant=""):
    raise NotImplementedError(REASON)
