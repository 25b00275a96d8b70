"""No attention in cuda.compute: its device-wide algorithms (reduce, scan, transform, segmented
reduce, sort, select, ...) include no matrix product, and attention is two of them around a softmax."""
from backends.base import not_expressible

supports, build = not_expressible(
    "cuda.compute's device-wide algorithms include no matrix product: no attention")
