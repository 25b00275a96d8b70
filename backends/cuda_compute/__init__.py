"""cuda.compute (cuda-cccl): device-wide CUB algorithms called from Python, no kernel written.

Variants: the default passes segmented_reduce the largest segment size (so CUB picks a thread,
warp or block per row); `default_args` leaves it out, as a first call would."""
from backends.base import NumbaBackend, StreamHandle


class CudaCompute(NumbaBackend):
    family = "no kernel"
    extra = "compute"
    distributions = ("cuda-cccl", "numba", "numba-cuda")

    def modules(self, variant):
        return ("cuda.compute", "numba.cuda")

    def variants_of(self, problem):
        return ("", "default_args") if problem == "segreduce" else ("",)

    def device(self, variant):
        return "cuda"

    def supports(self, problem, case, variant):
        if case.dtype == "bfloat16":
            return "cuda.compute 1.1.1 has no bfloat16"
        if problem == "elementwise" and case.dtype == "float16":
            return "cuda.compute 1.1.1 compiles no user operator on float16"
        return None

    def stream(self, handle, variant):
        return StreamHandle(handle)


BACKEND = CudaCompute()
