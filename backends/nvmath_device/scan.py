"""No scan in nvmath-python's device API: it brings cuBLASDx's Matmul, cuFFTDx's FFT and cuRAND's
generators into numba kernels; a scan written around none of them is numba_simt's row (and CUB's
block scan inside numba is cuda_coop's)."""
from backends.base import not_expressible

supports, build = not_expressible(
    "nvmath-python's device API has matmul, FFT and random numbers: no scan")
