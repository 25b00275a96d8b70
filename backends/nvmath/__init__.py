"""nvmath-python's host API: cuBLASLt through `nvmath.linalg.advanced.Matmul`, its algorithm picked
by nvmath's own autotuning on the case. A library row, and one of the GEMM ceiling's vendor paths
(problems/gemm.py). Torch tensors, the lab's stream."""
from backends.base import Backend, TorchArrays, TorchStream, require_torch_cuda


class Nvmath(TorchArrays, TorchStream, Backend):
    family = "no kernel"
    extra = "nvmath"
    distributions = ("nvmath-python", "torch")

    def modules(self):
        return ("nvmath.linalg.advanced", "torch")

    def load(self):
        require_torch_cuda()
        import nvmath.linalg.advanced  # noqa: F401

    def build_times_kernels(self, problem):
        return True              # autotune() times cuBLASLt's candidates in build(): the GPU alone


BACKEND = Nvmath()
