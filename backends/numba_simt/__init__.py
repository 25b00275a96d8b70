"""numba-cuda SIMT kernels: CUDA's thread model written in Python, no tensor cores, no libraries."""
from backends.base import NumbaBackend

BACKEND = NumbaBackend()
