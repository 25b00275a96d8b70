"""Segmented reduction: y[r] = sum_c x[r, c] over a contiguous (rows, cols) array.

fp32 in and out; fp16/bf16 inputs accumulate and return fp32.
"""
import numpy as np

from problems.base import DTYPES, Case, Expected, Problem, decode, log_uniform, summation_bound, uniform

# ways sweep: a third each of few very long rows, many tiny rows, and anything; at most SWEEP_ELEMENTS
SWEEP_ELEMENTS = 1 << 24


def _case(kind, rows, cols, dtype):
    return Case(f"{rows}x{cols}-{dtype}", kind, dtype, {"rows": rows, "cols": cols})


class SegReduce(Problem):
    name = "segreduce"
    dims = ("rows", "cols")
    dtypes = ("float32", "float16", "bfloat16")
    compile_case_name = "64x1000-float32"
    quick_case_names = ("37x4097-float32", "8192x32768-float32")
    roofline = "memory"
    ceiling = "read"          # reads rows x cols, writes rows floats: a read stream, not a copy
    linear_inputs = ("x",)

    def cases(self):
        test = [(1, 1, "float32"), (1, 4097, "float32"), (64, 1000, "float32"), (1000, 1, "float32"),
                (37, 4097, "float32"), (64, 1000, "float16"), (1, 4097, "float16"),
                (64, 1000, "bfloat16"), (3, 4097, "bfloat16"),
                # few very long odd rows, many tiny rows
                (2, 100003, "float16"), (2, 1048583, "float16"), (3, 65537, "float32"), (50000, 3, "float32"),
                (20011, 5, "bfloat16")]
        bench = [(8192, 32768, "float32"),      # 1 GiB of long rows
                 (2**20, 256, "float32"),        # 1 GiB of many short rows
                 (8192, 32768, "bfloat16")]
        return [_case("test", *t) for t in test] + [_case("bench", *b) for b in bench]

    def host_cases(self):
        return [_case("bench", 4096, 4096, "float32"), _case("bench", 2**16, 256, "float32")]   # 64 MiB each

    def random_shape(self, rng):
        kind = rng.integers(3)
        if kind == 0:                                   # few very long rows, odd lengths
            rows, cols = log_uniform(rng, 1, 8), log_uniform(rng, 4097, 1 << 21) | 1
        elif kind == 1:                                 # many tiny rows
            rows, cols = log_uniform(rng, 4097, 1 << 20), log_uniform(rng, 1, 16)
        else:
            rows, cols = log_uniform(rng, 1, 1 << 14), log_uniform(rng, 1, 1 << 14)
        return {"rows": rows, "cols": max(1, min(cols, SWEEP_ELEMENTS // rows))}

    def input_shapes(self, case):
        return {"x": (case.shape["rows"], case.shape["cols"])}

    def make_inputs(self, case, seed):
        rng = np.random.default_rng(seed)
        return {"x": uniform(rng, self.input_shapes(case)["x"], case.dtype)}

    def output_spec(self, case):
        return {"y": ((case.shape["rows"],), "float32")}

    def reference(self, case, inputs):
        x = decode(inputs["x"], case.dtype, np.float32)     # exact: every input value is a float32
        value = x.sum(axis=1, dtype=np.float64)
        abs_sum = np.abs(x).sum(axis=1, dtype=np.float64)
        bound = summation_bound(abs_sum, case.shape["cols"]) + DTYPES["float32"].smallest_normal
        return {"y": Expected(value, bound)}

    def work(self, case):
        rows, cols = case.shape["rows"], case.shape["cols"]
        return rows * cols * DTYPES[case.dtype].itemsize + rows * 4, rows * cols


PROBLEM = SegReduce()
