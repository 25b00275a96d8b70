"""torch.compile ("no kernel"): the torch expressions of array_api[torch], compiled by Inductor into
Triton kernels (its fused elementwise and reductions, its scan for cumsum; cuBLAS where it keeps a
matmul as an extern call). Variant `max_autotune` (GEMM): `mode="max-autotune"`, Inductor's Triton GEMM
templates timed against cuBLAS in build(). Variant `cpu`: the same files on CPU tensors, Inductor's
C++/OpenMP code (CI runs it; small test cases only). Each build compiles on the case's own arrays at its first
call (dynamic=False: one graph a shape, as a model's fixed shapes get); Inductor's caches are the
worker's (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR), so a warm process reuses them."""
import math

from backends.base import Backend, CompiledTorch, TorchArrays, TorchStream

CPU_WORK = 2**24          # elements (or multiply-adds) of a test case the CPU variant takes


class TorchCompile(CompiledTorch, TorchArrays, TorchStream, Backend):
    family = "no kernel"
    variants = ("", "max_autotune", "cpu")
    variant_problems = {"max_autotune": ("gemm",)}   # noqa: RUF012
    opt_in_variants = ("max_autotune",)   # its search of GEMM templates holds the GPU for each shape
    extra = "torch"
    distributions = ("torch", "triton")

    def modules(self):
        return ("torch", "triton")

    def supports(self, case):
        if self.variant == "cpu" and (case.kind != "test" or math.prod(v for v in case.shape.values() if v) > CPU_WORK):
            return "Inductor's CPU code here: small test cases only"
        return None

    def build_times_kernels(self, problem):
        return self.variant == "max_autotune"      # Inductor times its GEMM templates in the first call

    def first_build_s(self, problem):
        return 60.0 if self.variant == "max_autotune" else 15.0


BACKEND = TorchCompile()
