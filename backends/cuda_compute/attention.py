"""No attention in cuda.compute: its device-wide algorithms (reduce, scan, transform, segmented
reduce, sort, select, ...) include no matrix product, and attention is two of them around a softmax.
Every case is not applicable, with that reason."""
REASON = "cuda.compute's device-wide algorithms include no matrix product: no attention"


def supports(case, variant=""):
    return REASON


def build(case, inputs, outputs, stream, variant=""):
    raise NotImplementedError(REASON)
