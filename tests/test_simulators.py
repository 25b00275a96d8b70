"""What runs without a GPU beyond NumPy, through the real harness: the numba_simt kernels on
numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1, small float32 test cases; attention, which has no
float32 cases: its small float16 ones), the Triton kernels on
Triton's interpreter (TRITON_INTERPRET=1, small fp32/fp16 test cases on CPU tensors) and the Warp
tile kernels on Warp's CPU device (the warp_tiles[cpu] variant, small test cases) and the JAX Pallas
kernels (Triton lowering) in Pallas's interpreter (WAYS_PALLAS_INTERPRET=1), and the Helion kernels
(fixed configs) as the Triton code they generate, in Triton's interpreter. A simulator runs a block's
threads or programs in Python, so it takes the test cases of up to SIMULATED_FLOPS_MAX flops: every odd
shape and dtype but the 1000-long attention and the 1000^3 GEMM (a GPU runs those)."""
import importlib.util

import pytest

import backends
import problems
from harness.run.registry import parse_backend
from tests.conftest import run_lab

# backend -> (module, environment switch, word in the reason for what it skips, dtypes it runs)
TOOLS = {"numba_simt": ("numba", "NUMBA_ENABLE_CUDASIM", "simulator", {"attention": {"float16"}, "": {"float32"}}),
         "triton": ("triton", "TRITON_INTERPRET", "interpreter", {"float32", "float16"}),
         # wp.utils.array_scan writes its input's dtype: Warp's scan takes float32 only
         "warp_tiles[cpu]": ("warp", None, "CPU device", {"scan": {"float32"}, "": {"float32", "float16", "bfloat16"}}),
         "jax_pallas": ("jax", "WAYS_PALLAS_INTERPRET", "interpreter", {"float32", "float16", "bfloat16"}),
         # Triton's interpreter mishandles bf16 tl.dot: Helion's bf16 GEMM and attention are not applicable there
         "helion[fixed]": ("helion", "TRITON_INTERPRET", "interpreter",
                           {"gemm": {"float32", "float16"}, "attention": {"float16"},
                            "": {"float32", "float16", "bfloat16"}})}
PAIRS = [pytest.param(b, p, id=f"{b}-{p}") for b in TOOLS for name, variant in [parse_backend(b)]
         for p in backends.problems_of(name) if (variant or "") in backends.get(name).variants_of(p)]
# a case's limit: the run's own rule is a GPU's (a minute and builds), a simulated block runs its threads
# in Python (numba's simulator: over a minute for 1000 one-column rows)
SIMULATED_CASE_LIMIT_S = 600.0
SIMULATED_FLOPS_MAX = 2e8           # numba's simulator took 164 s for attention's 1000-long cases


def simulated_cases(problem: str) -> list[str]:
    spec = problems.get(problem)
    return [c.name for c in spec.cases() if c.kind == "test" and spec.work(c)[1] <= SIMULATED_FLOPS_MAX]


@pytest.mark.parametrize("backend,problem", PAIRS)
def test_kernels_without_a_gpu(tmp_path, monkeypatch, backend, problem):
    module, switch, word, dtypes = TOOLS[backend]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} not installed")
    if switch:
        monkeypatch.setenv(switch, "1")                  # inherited by the worker processes
    doc = run_lab(tmp_path, problems=[problem], backends_=[backend], item_timeout=SIMULATED_CASE_LIMIT_S,
                  case_names=tuple(simulated_cases(problem)))
    name, _, variant = backend.rstrip("]").partition("[")
    rows = [r for r in doc["records"] if r["backend"] == name and r["variant"] == variant]
    ran = [r for r in rows if r["status"] == "ok"]
    bad = [f"{r['case']}: {r['status']}: {r['error'][-300:]}" for r in rows if r["status"] in ("wrong", "failed")]
    assert not bad, "\n".join(bad)
    if isinstance(dtypes, dict):                       # per problem ("": the others)
        dtypes = dtypes.get(problem, dtypes[""])
    dtypes = dtypes & set(problems.get(problem).dtypes)
    if not dtypes:              # the stand-in takes none of the problem's dtypes: each row says why
        assert rows and all(r["status"] == "not_applicable" and word in r["reason"] for r in rows)
        return
    assert ran and {r["dtype"] for r in ran} == dtypes and all(len(r["seeds"]) == 3 for r in ran)
    skipped = [r for r in rows if r["status"] == "not_applicable" and r["dtype"] in dtypes]
    assert all(word in r["reason"] for r in skipped)           # (other dtypes: the tool's own reasons)


def test_simulators_take_every_problems_odd_shapes_and_dtypes():
    for name in backends.problems_of("triton"):
        spec, kept = problems.get(name), set(simulated_cases(name))
        tests = [c for c in spec.cases() if c.kind == "test"]
        assert {c.dtype for c in tests if c.name in kept} == {c.dtype for c in tests}
        assert len(kept) >= len(tests) // 2, (name, sorted(kept))
