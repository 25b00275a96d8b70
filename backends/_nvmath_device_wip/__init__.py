"""nvmath-python's device API: cuBLASDx (through libmathdx) called inside numba-cuda kernels.

WORK IN PROGRESS, not discovered (the leading underscore keeps it out of the registry). On the
H100 node (2026-11-22) the gemm failed on float16 test cases with "ValueError: Alignment must be a
multiple of 8" and did not finish a float32 test case within minutes (a hang or a very slow
libmathdx compile); segreduce (y = X @ ones) has not run yet. Rename the folder to nvmath_device
once both run correctly there."""
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
