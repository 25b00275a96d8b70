"""numba-cuda SIMT kernels: CUDA's thread model written in Python, no tensor cores, no libraries."""
from backends.base import NumbaBackend, cuda_simulator


class NumbaSimt(NumbaBackend):
    """Under the CUDA simulator: the small float32 test cases (NumbaBackend.supports) and, for the
    problems that have no float32 cases, their float16 test cases within the file's own limits (NumPy's
    float16, widened to float32 in the kernel as on the GPU)."""
    SIMULATED_FLOAT16 = ("attention",)

    def why_not(self, problem, case):
        if cuda_simulator() and problem in self.SIMULATED_FLOAT16 and case.kind == "test" \
                and case.dtype == "float16":
            supports = getattr(self.module(problem), "supports", None)
            return supports(case, self.variant) if supports else None
        return super().why_not(problem, case)


BACKEND = NumbaSimt()
