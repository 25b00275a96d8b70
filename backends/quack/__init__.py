"""QuACK (the quack-kernels wheel): Tri Dao's CuTe DSL kernel library, its GEMM called through
`quack.gemm_interface.gemm`, which picks the architecture's kernel (GemmSm90 on Hopper: TMA,
warpgroup MMA, a persistent tile scheduler, clusters), compiles it once per config and keeps it. A
library row beside the lab's own `cute_dsl` GEMM. Two variants: `fixed` runs the library's default
config for the GPU (`tuned=False`, what it does without nvidia-matmul-heuristics); the default one is
`gemm`'s own default, its autotuner timing its configs per shape in build() (44 on sm_90, each a
CuTe DSL compile: minutes a case), so it runs only where a run names it. Arrays are torch tensors on
torch's current stream."""
from backends.base import Backend, TorchArrays, TorchCuda, TorchStream


class Quack(TorchArrays, TorchStream, TorchCuda, Backend):
    family = "no kernel"
    extra = "quack"
    variants = ("", "fixed")
    opt_in_variants = ("",)
    distributions = ("quack-kernels", "nvidia-cutlass-dsl", "apache-tvm-ffi", "torch")
    min_compute_capability = (8, 0)
    cache_vars = {"QUACK_CACHE_DIR": "quack"}   # noqa: RUF012  its autotuner's results, where it keeps them

    def modules(self):
        return ("quack", "torch")

    def first_build_s(self, problem):
        return 120.0 if self.variant == "" else 5.0

    def build_times_kernels(self, problem):
        return self.variant == ""               # the autotuner times its candidates in build()


BACKEND = Quack()
