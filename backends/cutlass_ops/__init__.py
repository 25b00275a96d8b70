"""CUTLASS Operator API (`nvidia-cutlass-operators`, `import cutlass.operators`; the CUTLASS repo's
`cutlass_api` before it was published): a GEMM kernel picked, not written. get_operators(args,
target_sm="90a") lists the registered CuTe DSL kernels whose metadata (dtypes, strides, 16-byte
alignment, target) fit the case; each Operator then supports() / compile() / run(). Default
variant: compile every candidate, time each on the case in build() and keep the fastest (that
share of build time is reported apart, `autotune_s`; nvMatmulHeuristics ranks SM100 kernels only);
`first`: the first candidate in discovery order, no search. Torch tensors, the lab's stream."""

from backends.base import Backend, TorchArrays, TorchStream, require_torch_cuda

TARGET_SM = "90a"


class CutlassOps(TorchArrays, TorchStream, Backend):
    family = "tensor-core DSL"
    extra = "cutlass-ops"
    variants = ("", "first")
    variant_problems = {"first": ("gemm",)}   # noqa: RUF012
    distributions = ("nvidia-cutlass-operators", "nvidia-cutlass-dsl", "torch")
    min_compute_capability = (9, 0)
    min_driver_cuda = (13, 0)

    def first_build_s(self, problem):
        return 44.0 if self.variant == "" else 1.2     # H100, 8192^3 bf16: 28 candidates compiled and timed / one

    def build_key(self, problem, case):
        # the search compiles and times every candidate again for each case (35-57 s a case on a busy
        # node): each case a worker of its own, or a dtype's test cases in one worker outlast its limit
        return case.name if self.variant == "" else case.dtype

    def modules(self):
        return ("cutlass.operators", "torch")

    def load(self):
        require_torch_cuda()
        import cutlass.operators  # noqa: F401



BACKEND = CutlassOps()
