"""C = A @ B with nvmath-python's stateful host Matmul (cuBLASLt), as its autotuning example does.

Works as follows:
1. Matmul(a, b, c, beta=0) with inplace=True states the problem once: C is the result (beta 0: it
   is not read) and the compute type is fp32 for every input type.
2. plan() asks cuBLASLt's heuristics for PLAN_LIMIT candidate algorithms; autotune() runs each
   AUTOTUNE_ITERATIONS times on these operands and orders them fastest first.
3. Each call is execute() of the fastest on the stream.

Constraints: split-K partial sums are added in the compute type (fp32), never in the output's
bf16/fp16 (cuBLASLt's in-place and output-type reduction schemes are left out); fp32 stays fp32
(no TF32).
"""
import nvmath
from nvmath.linalg.advanced import Matmul, MatmulPlanPreferences, MatmulReductionScheme

PLAN_LIMIT = 16
AUTOTUNE_ITERATIONS = 10


def build(case, inputs, outputs, stream, variant=""):
    mm = Matmul(inputs["a"], inputs["b"], outputs["c"], beta=0.0, stream=stream,
                options={"inplace": True, "compute_type": nvmath.linalg.ComputeType.COMPUTE_32F})
    mm.plan(preferences=MatmulPlanPreferences(limit=PLAN_LIMIT,
                                              reduction_scheme_mask=MatmulReductionScheme.COMPUTE_TYPE),
            stream=stream)
    mm.autotune(iterations=AUTOTUNE_ITERATIONS, stream=stream)

    def run():
        mm.execute(stream=stream)
    return run
