"""`ways sweep`: random shapes of each problem's classes, every implementation checked on them; any row
that is neither ok nor a reasoned not_applicable is a finding (exit 1)."""
import json

import numpy as np

import problems
from harness.run import sweep
from tests.test_cli import ways


def test_draws_are_valid_distinct_and_reproducible():
    drawn = sweep.draw(problems.names(), 40, seed=3)
    assert drawn == sweep.draw(problems.names(), 40, seed=3)
    for cases in drawn.values():
        assert len({c.name for c in cases}) == 40 and all(c.kind == "test" for c in cases)
    gemm = drawn["gemm"]
    ragged = [c for c in gemm if c.shape["K"] % 8 == 0 and c.shape["N"] % 8 == 0
              and c.shape["K"] % 64 and c.shape["N"] % 64]
    assert len(ragged) >= 10                 # the class the TMA paths take
    seg = drawn["segreduce"]
    assert any(c.shape["rows"] <= 8 and c.shape["cols"] > 4096 and c.shape["cols"] % 2 for c in seg)
    assert any(c.shape["rows"] > 4096 and c.shape["cols"] <= 16 for c in seg)


def test_a_sweep_of_correct_rows_has_no_finding(tmp_path):
    out = tmp_path / "sweep"
    r = ways("sweep", "-b", "array_api[numpy]", "-p", "segreduce", "-p", "elementwise", "--count", "6",
             "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((out / "results.json").read_text())
    assert len(doc["records"]) == 12 and not sweep.findings(doc)
    assert "0 finding(s)" in (out / "sweep.md").read_text()


def test_a_wrong_implementation_is_a_finding(tmp_path, bad_backends):
    out = tmp_path / "sweep"
    r = ways("sweep", "-b", "faulty", "-p", "segreduce", "--count", "12", "--out", str(out))
    assert r.returncode == 1
    text = (out / "sweep.md").read_text()
    assert "## Findings" in text and "faulty[numpy] segreduce custom-rows3-cols4889-float16: wrong" in text


def test_random_shapes_are_cases_of_their_problem():
    rng = np.random.default_rng(0)
    for name in problems.names():
        p = problems.get(name)
        for _ in range(50):
            p.custom_case(p.random_shape(rng), p.dtypes[0], kind="test")     # raises on a bad shape


def test_by_default_the_sweep_leaves_out_per_shape_searches():
    specs, left_out = sweep.default_backends(problems.names())
    assert "cutlass_ops[first]" in specs and "nvmath_device[]" in specs and "array_api[numpy]" in specs
    assert set(left_out) == {"cutlass_ops", "nvmath_device[pipeline]"}
    assert not any(s.startswith("helion[]") for s in specs)          # opt-in, as in ways run
