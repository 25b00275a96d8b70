"""cuda.compute (cuda-cccl): device-wide CUB algorithms called from Python, no kernel written.

Variants: the default passes segmented_reduce the largest segment size (so CUB picks a thread,
warp or block per row); `default_args` leaves it out, as a first call would."""
from backends.base import NumbaBackend, StreamHandle


class CudaCompute(NumbaBackend):
    family = "no kernel"
    extra = "compute"
    distributions = ("cuda-cccl", "numba", "numba-cuda")

    def modules(self):
        return ("cuda.compute", "numba.cuda")

    variants = ("", "default_args")
    variant_problems = {"default_args": ("segreduce",)}   # noqa: RUF012

    def device(self):
        return "cuda"

    def supports(self, case):
        if case.dtype == "bfloat16":
            return "cuda.compute 1.1.1 has no bfloat16"
        return None

    def stream(self, handle):
        return StreamHandle(handle)


BACKEND = CudaCompute()
