"""nvmath-python's device API: cuBLASDx (through libmathdx) called inside numba-cuda kernels."""
from backends.base import NumbaBackend


class NvmathDevice(NumbaBackend):
    extra = "nvmath"
    distributions = ("nvmath-python", "nvidia-libmathdx-cu13", "numba", "numba-cuda")

    def modules(self, variant):
        return ("nvmath.device", "numba.cuda")

    def device(self, variant):
        return "cuda"            # cuBLASDx code is generated for the current GPU: no simulator

    def supports(self, problem, case, variant):
        return "nvmath-python 1.0's device Matmul takes no bfloat16" if case.dtype == "bfloat16" else None


BACKEND = NvmathDevice()
