"""Elementwise: z = alpha * x + y over contiguous vectors, in the inputs' dtype."""
import numpy as np

from problems.base import DTYPES, Case, Expected, Problem, decode, log_uniform, sample_rows, uniform

CHECKED_ELEMENTS = 2**24    # longer vectors are checked on both ends and a random sample (NaN check stays full)
CHECKED_SAMPLES = 2**22
SWEEP_ELEMENTS = 1 << 24    # ways sweep: lengths up to this
HOST_ELEMENTS = 1 << 24     # a run without a GPU: 64 MiB a float32 vector

# Exactly representable in every dtype, so all backends multiply by the same number.
ALPHAS = (0.5, 0.75, 1.25, 1.5, -0.75, 2.0)


class Elementwise(Problem):
    name = "elementwise"
    dims = ("n",)
    dtypes = ("float32", "float16", "bfloat16")
    compile_case_name = "1001-float32"
    quick_case_names = ("1001-float32", "268435456-float32")
    roofline = "memory"
    ceiling = "triad"         # reads two vectors, writes one: a stream of that pattern, not a copy
    # CUB's DeviceTransform (bulk copies into shared memory on Hopper): 1.3% past the lab's triad
    # stream on the H200 (reports/evidence/like-for-like/h200-timer-check-adjacent-cold)
    ceiling_rows = ("cuda_compute",)
    linear_inputs = ("x", "y")

    def cases(self):
        test = [(1, "float32"), (7, "float32"), (1001, "float32"), (100003, "float32"),
                (1048579, "float32"), (7, "float16"), (100003, "float16"),
                (1001, "bfloat16"), (1048579, "bfloat16")]
        bench = [(2**28, "float32"), (2**28, "float16"), (2**28, "bfloat16")]
        return ([Case(f"{n}-{dt}", "test", dt, {"n": n}) for n, dt in test]
                + [Case(f"{n}-{dt}", "bench", dt, {"n": n}) for n, dt in bench])

    def host_cases(self):
        return [Case(f"{HOST_ELEMENTS}-{dt}", "bench", dt, {"n": HOST_ELEMENTS}) for dt in ("float32", "float16")]

    def random_shape(self, rng):
        return {"n": log_uniform(rng, 1, SWEEP_ELEMENTS)}     # odd lengths, tails of every size

    def input_shapes(self, case):
        n = case.shape["n"]
        return {"x": (n,), "y": (n,)}

    def make_inputs(self, case, seed):
        rng = np.random.default_rng(seed)
        n = case.shape["n"]
        return {"x": uniform(rng, (n,), case.dtype), "y": uniform(rng, (n,), case.dtype),
                "alpha": float(rng.choice(ALPHAS))}

    def output_spec(self, case):
        return {"z": ((case.shape["n"],), case.dtype)}

    def reference(self, case, inputs):
        n = case.shape["n"]
        rows = sample_rows(n, CHECKED_SAMPLES, case.seed) if n > CHECKED_ELEMENTS else None
        x, y = (inputs[k] if rows is None else inputs[k][rows] for k in ("x", "y"))
        ax = inputs["alpha"] * decode(x, case.dtype)
        y = decode(y, case.dtype)
        out = DTYPES[case.dtype]
        # one rounding of alpha*x and one of the sum, in the output dtype at worst
        bound = 3 * out.unit_roundoff * (np.abs(ax) + np.abs(y)) + out.smallest_normal
        return {"z": Expected(ax + y, bound, rows)}

    def work(self, case):
        n = case.shape["n"]
        return 3 * n * DTYPES[case.dtype].itemsize, 2 * n


PROBLEM = Elementwise()
