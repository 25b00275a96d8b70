"""Device-wide prefix sum: y[i] = x[0] + ... + x[i] over a contiguous 1-D array (inclusive).

float32 in and out; float16 and bfloat16 inputs accumulate and return float32, as the row sum does.

The check: a float64 reference (every input is exact in float32, so the reference is exact to float64's
rounding) and, per element, the bound any order of float32 additions a parallel scan may take
satisfies: y[i] is a sum of i + 1 terms, so |dy_i| <= u32 (2 sqrt(i + 1) + 16) sum_{j<=i} |x_j| (the row
sum's summation bound at depth i + 1: a tree within a tile, a chain of carries between tiles) plus the
smallest normal.

Inputs make the usual mistakes visible: values are uniform over INPUT_RANGE, mostly positive, so the
prefix grows about linearly and the bound stays a small fraction of it; an exclusive scan (off by x_i),
a lost carry between tiles (off by a tile's sum) or a tail left unwritten (poisoned outputs) all pass
the bound by orders of magnitude on the first elements they touch.
"""
import numpy as np

from problems.base import DTYPES, Case, Expected, Problem, decode, log_uniform, uniform

INPUT_RANGE = (-0.25, 1.0)     # mean 3/8: prefixes grow ~ i, sum |x| stays within ~1.4x of them
SWEEP_ELEMENTS = 1 << 24       # ways sweep: at most this many elements


def _case(kind, n, dtype):
    return Case(f"{n}-{dtype}", kind, dtype, {"n": n})


def scan_bound(x: np.ndarray) -> np.ndarray:
    """The allowed error of each inclusive prefix of x (float64 values) summed in float32."""
    depth = np.arange(1, x.size + 1, dtype=np.float64)
    u32 = DTYPES["float32"].unit_roundoff
    return u32 * (2.0 * np.sqrt(depth) + 16.0) * np.cumsum(np.abs(x)) + DTYPES["float32"].smallest_normal


class Scan(Problem):
    name = "scan"
    dims = ("n",)
    dtypes = ("float32", "float16", "bfloat16")
    compile_case_name = "1000-float32"
    quick_case_names = ("4097-float32", "268435456-float32")
    roofline = "memory"
    ceiling = "copy"          # reads n inputs, writes n float32 prefixes
    linear_inputs = ("x",)

    def cases(self):
        test = [(1, "float32"), (7, "float32"), (1000, "float32"), (4097, "float32"), (2**20 + 3, "float32"),
                (7, "float16"), (4097, "float16"), (1000, "bfloat16"), (2**20 + 3, "bfloat16")]
        bench = [(2**28, "float32"),      # 1 GiB in, 1 GiB out
                 (2**28, "bfloat16"),
                 (2**20, "float32")]       # 4 MiB: launches and latency dominate
        return [_case("test", *t) for t in test] + [_case("bench", *b) for b in bench]

    def host_cases(self):
        # float32 sums of 2**24 of these inputs reach 2**22, where one ulp is 0.5: a library's sequential
        # float32 sum (NumPy's cumsum) drifts off the bound there and not at 2**22 terms
        return [_case("bench", 2**22, "float32"), _case("bench", 2**24, "float32")]

    def random_shape(self, rng):
        return {"n": log_uniform(rng, 1, SWEEP_ELEMENTS)}

    def input_shapes(self, case):
        return {"x": (case.shape["n"],)}

    def make_inputs(self, case, seed):
        rng = np.random.default_rng(seed)
        return {"x": uniform(rng, self.input_shapes(case)["x"], case.dtype, *INPUT_RANGE)}

    def output_spec(self, case):
        return {"y": ((case.shape["n"],), "float32")}

    def reference(self, case, inputs):
        x = decode(inputs["x"], case.dtype)                 # exact: every input value is a float32
        return {"y": Expected(np.cumsum(x), scan_bound(x))}

    def work(self, case):
        n = case.shape["n"]
        return n * DTYPES[case.dtype].itemsize + n * 4, n


PROBLEM = Scan()
