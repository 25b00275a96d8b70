"""Every registry pair on its test cases, through the harness (3 seeds, poisoned outputs, float64
reference). A pair that cannot run here skips with the reason; one that runs must never be wrong.
A GPU tool's host stand-in (its `stand_in_variants`: torch.compile's and FlexAttention's inductor C++,
Warp's CPU device) builds each case for seconds: it takes conftest.dtype_sample's cases, every dtype and the
first dtype's every shape."""
import pytest

import backends
from tests.conftest import dtype_sample, impl_params, run_lab

BAD = ("wrong", "failed")


@pytest.mark.parametrize("impl", impl_params())
def test_correct_on_every_test_case(tmp_path, impl):
    backend = backends.get(impl.backend, impl.variant)
    usable, why = backend.available()
    if not usable:       # (a compile-only backend is compiled without a GPU in tests/test_compile_only.py)
        pytest.skip(f"{impl.label}: {why}")
    sample = dtype_sample(impl.problem) if impl.variant in backend.stand_in_variants else ()
    doc = run_lab(tmp_path, problems=[impl.problem], backends_=[impl.label], case_names=sample)
    rows = [r for r in doc["records"] if r["backend"] == impl.backend and r["variant"] == impl.variant]
    assert rows
    bad = [f"{r['case']}: {r['status']}: {r['error'][-400:]}" for r in rows if r["status"] in BAD]
    assert not bad, "\n".join(bad)
    if all(r["status"] == "not_applicable" for r in rows):      # e.g. NumPy on a problem with bfloat16 outputs
        pytest.skip(f"{impl.label} takes no {impl.problem} case here: {rows[0]['reason']}")
    assert any(r["status"] == "ok" for r in rows)
    assert all(r["status"] in ("ok", "not_applicable") for r in rows)
    assert all(r["reason"] for r in rows if r["status"] == "not_applicable")
