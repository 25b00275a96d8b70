"""No attention in cuda.coop: its primitives are CUB's block and warp collectives (load, store,
exchange, reduce, scan, radix and merge sort, histogram) called from numba-cuda kernels, with no
matrix product among them. Both of attention's products would be the plain SIMT loops of the
numba_simt row (where they are measured), with a CUB reduction in place of the softmax's shuffles."""
from backends.base import not_expressible

supports, build = not_expressible(
    "cuda.coop's block and warp collectives (load, store, reduce, scan, sort) include no matrix product:"
    " attention's two products would be numba_simt's SIMT loops")
