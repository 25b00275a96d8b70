"""cuda.coop (cuda-cccl 1.1.1, the last release with it): CUB's block and warp primitives inside
numba-cuda kernels. Primitives are compiled (NVRTC) when made, so build() makes them."""
from backends.base import NumbaBackend


class CudaCoop(NumbaBackend):
    family = "SIMT"
    extra = "coop"
    distributions = ("cuda-cccl", "numba", "numba-cuda")

    def modules(self):
        return ("cuda.coop", "numba.cuda")

    def device(self):
        return "cuda"            # primitives compile for the current GPU: no simulator

    def supports(self, case):
        return "cuda.coop 1.1.1 builds CUB with bfloat16 disabled" if case.dtype == "bfloat16" else None


BACKEND = CudaCoop()
