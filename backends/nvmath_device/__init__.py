"""nvmath-python's device API: cuBLASDx (through libmathdx) called inside numba-cuda kernels.

gemm variants, after nvmath's two performance examples: "" is the K loop of MM.execute() on tiles
double-buffered in shared memory (warp-level MMA); "pipeline" hands the K loop to a DevicePipeline
(TMA loads and warpgroup MMA on Hopper), float16 only as in its example. segreduce is y = X @ ones;
attention is two Matmuls with the online softmax written in numba between them.
Each kernel's plan (tile, threads, ...) comes from tools/nvmath_sweep.py. A cold build takes 1-3
minutes (libmathdx runs NVRTC for every cuBLASDx call) and nothing of it can be cached on disk
(numba-cuda does not cache kernels that link code), so the lab reports the first build."""
from backends.base import NumbaBackend

# A DevicePipeline's kernels are compiled for its arrays' very shapes (minutes each): the pipeline
# variant pads each side up to a power of two, at least this, so every small matrix shares one build.
PIPELINE_BUCKET = 2048


def pipeline_bucket(side: int) -> int:
    return max(PIPELINE_BUCKET, 1 << (side - 1).bit_length())


class NvmathDevice(NumbaBackend):
    family = "tensor-core DSL"
    extra = "nvmath"
    distributions = ("nvmath-python", "nvidia-libmathdx-cu13", "numba", "numba-cuda")

    def modules(self):
        return ("nvmath.device", "numba.cuda")

    variants = ("", "pipeline")
    builds_cached = False       # numba-cuda keeps no kernel that links code (cuBLASDx's LTO) on disk
    variant_problems = {"pipeline": ("gemm",)}   # noqa: RUF012

    def device(self):
        return "cuda"            # cuBLASDx code is generated for the current GPU: no simulator

    def first_build_s(self, problem):
        # cuBLASDx code generation under numba's compile lock: 69-165 s a first build; attention's two
        # Matmuls and their copies 260 s (H200 node), 290-300 s with three more such builds beside it (H100)
        return 300.0 if problem == "attention" else 150.0

    def build_key(self, problem, case):
        if self.variant == "pipeline":        # a new padded shape is a new kernel (~85 s)
            return case.dtype, tuple(pipeline_bucket(case.shape[d]) for d in "MNK")
        if problem == "attention":            # a kernel per head dim and mask: ~260 s each (H200 node)
            return case.dtype, case.shape["D"], case.shape["causal"]
        return case.dtype

    def supports(self, case):
        if case.dtype == "bfloat16":
            return "nvmath-python 1.0's device Matmul takes no bfloat16"
        if self.variant == "pipeline" and case.dtype != "float16":
            return "the pipeline (TMA + warpgroup MMA) variant is written for float16, as nvmath's example"
        return None


BACKEND = NvmathDevice()
