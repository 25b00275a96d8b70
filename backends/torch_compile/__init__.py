"""torch.compile ("no kernel"): the torch expressions of array_api[torch], compiled by Inductor into
Triton kernels (its fused elementwise and reductions, its scan for cumsum; cuBLAS where it keeps a
matmul as an extern call). Variant `max_autotune` (GEMM): `mode="max-autotune"`, Inductor's Triton GEMM
templates timed against cuBLAS in build(). Variant `cpu`: the same files on CPU tensors, Inductor's
C++/OpenMP code (CI runs it; small test cases only). Each build compiles on the case's own arrays at its first
call (dynamic=False: one graph a shape, as a model's fixed shapes get); Inductor's caches are the
worker's (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR), so a warm process reuses them."""
import math

from backends.base import Backend, TorchArrays, TorchStream, Unavailable

RECOMPILE_LIMIT = 64
CPU_WORK = 2**24          # elements (or multiply-adds) of a test case the CPU variant takes


class TorchCompile(TorchArrays, TorchStream, Backend):
    family = "no kernel"
    variants = ("", "max_autotune", "cpu")
    variant_problems = {"max_autotune": ("gemm",)}   # noqa: RUF012
    opt_in_variants = ("max_autotune",)   # its search of GEMM templates holds the GPU for each shape
    extra = "torch"
    distributions = ("torch", "triton")

    def modules(self):
        return ("torch", "triton")

    def device(self):
        return "cpu" if self.variant == "cpu" else "cuda"

    def supports(self, case):
        if self.variant == "cpu" and (case.kind != "test" or math.prod(v for v in case.shape.values() if v) > CPU_WORK):
            return "Inductor's CPU code here: small test cases only"
        return None

    def load(self):
        import torch
        if self.variant != "cpu" and not torch.cuda.is_available():
            raise Unavailable(f"torch {torch.__version__} sees no CUDA device")
        # one graph a case (dynamic=False): a worker compiles one function for more cases than
        # Dynamo's default of 8 recompiles, after which fullgraph=True fails the build
        torch._dynamo.config.recompile_limit = RECOMPILE_LIMIT

    def build_times_kernels(self, problem):
        return self.variant == "max_autotune"      # Inductor times its GEMM templates in the first call

    def first_build_s(self, problem):
        return 60.0 if self.variant == "max_autotune" else 15.0


BACKEND = TorchCompile()
