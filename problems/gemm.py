"""GEMM: C = A @ B with row-major A (M, K) and B (K, N).

bf16/fp16 inputs accumulate in fp32 and return their own dtype; fp32 is fp32 throughout (a TF32
product is not an fp32 GEMM and fails the check).
"""
import math

import numpy as np

from problems.base import DTYPES, Case, Expected, Problem, decode, log_uniform, sample_rows, uniform

CHECKED_FLOPS = 2**33    # bigger products are checked on sampled rows (NaN check stays full)
# ways sweep: sides up to this; ALIGN elements of 16 bits are the 16 bytes a TMA row pitch needs, and a
# side that is a multiple of TILE_MULTIPLE would fill whole tiles
SWEEP_SIDE, ALIGN, TILE_MULTIPLE = 2048, 8, 64


def _case(kind, m, n, k, dtype):
    return Case(f"{m}x{n}x{k}-{dtype}", kind, dtype, {"M": m, "N": n, "K": k})


class Gemm(Problem):
    name = "gemm"
    dims = ("M", "N", "K")
    dtypes = ("bfloat16", "float16", "float32")
    compile_case_name = "129x257x65-bfloat16"
    quick_case_names = ("129x257x65-bfloat16", "8192x8192x8192-bfloat16")
    roofline = "compute"
    linear_inputs = ("a",)
    # the fastest vendor path is 100%: cuBLAS through PyTorch and CuPy, cuBLASLt autotuned through
    # nvmath-python's host Matmul, and XLA's own choice (cuBLASLt or its Triton GEMMs)
    vendor = ("array_api[torch]", "array_api[cupy]", "nvmath", "array_api[jax]")
    vendor_reference = "fastest"
    adjacent_reference = ("array_api[torch]",)

    def cases(self):
        test = [(m, n, k, dt) for dt in self.dtypes
                for m, n, k in ((1, 1, 1), (129, 257, 65), (1000, 1000, 1000))]
        # aligned but ragged: K and N multiples of 8 (16-byte rows: the TMA paths take them), no side a
        # multiple of any tile, one M under a tile and N over a thousand
        test += [(m, n, k, dt) for dt in ("bfloat16", "float16") for m, n, k in ((200, 264, 136), (72, 1048, 520))]
        test += [(1, 264, 104, "bfloat16")]       # one row (a GEMV): a static layout may drop the M mode
        test += [(52, 175, 43, "bfloat16")]       # few rows, N over 133: cuBLAS may split K, reducing in bf16
        bench = [(8192, 8192, 8192, "bfloat16"), (8192, 8192, 8192, "float16"),
                 (4096, 4096, 4096, "bfloat16"), (4096, 4096, 4096, "float32"),
                 (16384, 16384, 512, "bfloat16")]
        return [_case("test", *t) for t in test] + [_case("bench", *b) for b in bench]

    def host_cases(self):
        return [_case("bench", 2048, 2048, 2048, "float32")]      # NumPy has no bfloat16, and no float16 BLAS

    def random_shape(self, rng):
        """Half aligned but ragged (K and N multiples of 8, where TMA paths take them; no side a
        multiple of a tile), half anything, every side in [1, 2048]."""
        shape = {d: log_uniform(rng, 1, SWEEP_SIDE) for d in self.dims}
        if rng.random() < 0.5:
            for d in ("K", "N"):
                shape[d] = max(ALIGN, shape[d] // ALIGN * ALIGN)
                if shape[d] % TILE_MULTIPLE == 0:
                    shape[d] += ALIGN
        return shape

    def input_shapes(self, case):
        m, n, k = (case.shape[d] for d in self.dims)
        return {"a": (m, k), "b": (k, n)}

    def make_inputs(self, case, seed):
        rng = np.random.default_rng(seed)
        shapes = self.input_shapes(case)
        return {"a": uniform(rng, shapes["a"], case.dtype), "b": uniform(rng, shapes["b"], case.dtype)}

    def output_spec(self, case):
        return {"c": ((case.shape["M"], case.shape["N"]), case.dtype)}

    def reference(self, case, inputs):
        m, n, k = (case.shape[d] for d in self.dims)
        rows = None
        a = decode(inputs["a"], case.dtype)
        if 2 * m * n * k > CHECKED_FLOPS:
            rows = sample_rows(m, max(2, CHECKED_FLOPS // (2 * n * k)), case.seed, edge=1)
            a = a[rows]
        b = decode(inputs["b"], case.dtype)
        value = a @ b
        abs_product = np.abs(a) @ np.abs(b)
        out = DTYPES[case.dtype]
        bound = (DTYPES["float32"].unit_roundoff * (2 * math.sqrt(k) + 16) * abs_product
                 + out.unit_roundoff * np.abs(value) + out.smallest_normal)
        return {"c": Expected(value, bound, rows)}

    def work(self, case):
        m, n, k = (case.shape[d] for d in self.dims)
        return (m * k + k * n + m * n) * DTYPES[case.dtype].itemsize, 2 * m * n * k


PROBLEM = Gemm()
