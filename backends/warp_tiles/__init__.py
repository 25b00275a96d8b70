"""NVIDIA Warp's tile primitives (tile_load / tile_sum / tile_matmul / tile_store, launch_tiled).

Variants: "" runs on the GPU; "cpu" runs the small test cases on Warp's CPU device (how CI checks
the kernels); for gemm, "no_mathdx" compiles tile_matmul without cuBLASDx (libmathdx), whose link
step dominates the cold compile, to show what that costs and saves (test cases only: its scalar
GEMM is not a contender). The GPU variant "" is the one the tables compare."""
import math

import numpy as np

from backends.base import Backend, Unavailable

CPU_WORK = 2**27         # Warp's CPU device runs a block's threads one after another: keep it small


class WarpTiles(Backend):
    family = "tile"
    extra = "warp"
    distributions = ("warp-lang",)

    def modules(self):
        return ("warp",)

    variants = ("", "no_mathdx", "cpu")
    stand_in_variants = ("cpu",)
    variant_problems = {"no_mathdx": ("gemm",)}   # noqa: RUF012

    def device(self):
        return "cpu" if self.variant == "cpu" else "cuda"

    def load(self):
        import warp as wp
        wp.config.log_level = wp.LOG_WARNING      # no "Module ... load" line per kernel
        wp.init()
        if self.variant == "cpu" and not wp.is_cpu_available():
            raise Unavailable("this Warp build has no CPU compiler (warp-clang)")
        if self.variant != "cpu" and not wp.is_cuda_available():
            raise Unavailable(f"Warp {wp.__version__} sees no CUDA device")

    def first_build_s(self, problem):
        if problem == "attention":        # two cuBLASDx products in one kernel: 66 s cold beside --jobs workers
            return 66.0
        return 22.0 if problem == "gemm" and self.variant != "no_mathdx" else 1.0     # cuBLASDx GEMM: 22 s cold

    def build_key(self, problem, case):
        if problem == "attention":        # a kernel per dtype, head dim and mask
            return case.dtype, case.shape["D"], case.shape["causal"]
        return super().build_key(problem, case)

    def supports(self, case):
        if self.variant == "cpu" and (case.kind != "test" or math.prod(case.shape.values()) > CPU_WORK):
            return "Warp's CPU device: small test cases only"
        if self.variant == "no_mathdx" and case.kind != "test":
            return "tile_matmul without cuBLASDx is a scalar GEMM: test cases and compile time only"
        return None

    def to_device(self, a, dtype):
        import warp as wp
        return wp.array(np.ascontiguousarray(a), dtype=warp_dtype(dtype), device=self.warp_device())

    def to_host(self, x):
        import warp as wp
        if x.dtype == wp.bfloat16:
            x = x.view(wp.uint16)          # Warp hands bfloat16 to NumPy as its bits anyway
        return x.numpy()

    def overwrite(self, dst, host, dtype):
        import warp as wp
        wp.copy(dst, self.to_device(host, dtype))

    def stream(self, handle):
        import warp as wp
        if self.variant == "cpu" or handle is None:
            return None
        return wp.Stream(self.warp_device(), cuda_stream=handle)

    def warp_device(self):
        return "cpu" if self.variant == "cpu" else "cuda:0"


def warp_dtype(name: str):
    import warp as wp
    return {"float32": wp.float32, "float16": wp.float16, "bfloat16": wp.bfloat16}[name]


BACKEND = WarpTiles()
