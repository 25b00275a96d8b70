"""array_api[dask] over many chunks: the library's own cross-chunk steps (a scan's carries, a row sum's
tree, a product's blocks) against the same references, with chunks made far smaller than the lab's."""
import math

import numpy as np
import pytest

import backends
import problems
from problems.base import poison

dask = pytest.importorskip("dask", reason="dask not installed (pip install '.[dask]')")
da = pytest.importorskip("dask.array", reason="dask.array not installed")
pytest.importorskip("array_api_compat", reason="array-api-compat not installed")

SMALL_CHUNK = "4KiB"      # a few hundred float32 elements a chunk: every test case below spans several


def size(case) -> int:
    return math.prod(v for v in case.shape.values() if not isinstance(v, bool))      # (attention's causal flag)


def spans_chunks(problem, case) -> bool:
    """NumPy chunks: no bfloat16. Dask's matmul over several chunks of K adds the partial products in
    the output's dtype, so a float16 GEMM split along K is off by more than one rounding (the lab's
    256 MiB chunks keep every GEMM case's K in one chunk): float32 only for GEMM here."""
    dtypes = ("float32",) if problem == "gemm" else ("float32", "float16")
    return case.kind == "test" and case.dtype in dtypes and 2**12 < size(case) <= 2**23


CASES = [(p, c) for p in problems.names() for c in problems.get(p).cases() if spans_chunks(p, c)]
NOT_ON_NUMPY_CHUNKS = {"gemm_fp8"}      # its C is bfloat16, which NumPy has not


def test_the_cases_span_several_chunks():
    assert {p for p, _ in CASES} == set(problems.names()) - NOT_ON_NUMPY_CHUNKS
    fp8 = problems.get("gemm_fp8")
    assert backends.implementation("array_api", "gemm_fp8").supports(fp8.cases()[0], "dask")
    with dask.config.set({"array.chunk-size": SMALL_CHUNK}):
        for name, case in CASES:
            host = problems.get(name).make_inputs(case, case.seed)
            biggest = max((v for v in host.values() if isinstance(v, np.ndarray)), key=np.size)
            assert np.prod(da.from_array(biggest, chunks="auto").numblocks) > 1, (name, case.name)


@pytest.mark.parametrize("name,case", [pytest.param(p, c, id=f"{p}-{c.name}") for p, c in CASES])
def test_dask_file_over_small_chunks(name, case):
    problem = problems.get(name)
    impl = backends.implementation("array_api", name)
    host = problem.make_inputs(case, case.seed)
    outputs = {k: poison(s, dt) for k, (s, dt) in problem.output_spec(case).items()}
    run = impl.build(case, {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in host.items()},
                     outputs, None, variant="dask")
    with dask.config.set({"array.chunk-size": SMALL_CHUNK}):
        got = run()
    problem.check({k: np.asarray(v) for k, v in got.items()}, problem.reference(case, host), case)
