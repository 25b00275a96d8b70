"""On a GPU: a faulting kernel is contained (its cases 'failed', the rest of the sweep runs), and
the array-API rows time their bench cases with the lab's engine."""
import pytest

from tests.conftest import needs_gpu, run_lab

pytestmark = [needs_gpu]


def test_illegal_memory_access_is_contained(tmp_path, bad_backends):
    pytest.importorskip("cupy", reason="the fault fixture is written with CuPy")
    doc = run_lab(tmp_path, backends_=["gpufault"], problems=["segreduce", "elementwise"])
    seg = [r for r in doc["records"] if r["problem"] == "segreduce" and r["status"] != "not_applicable"]
    ew = [r for r in doc["records"] if r["problem"] == "elementwise" and r["status"] != "not_applicable"]
    assert seg and all(r["status"] == "failed" for r in seg)
    assert any("illegal" in r["error"].lower() for r in seg), seg[0]["error"][-800:]
    assert ew and all(r["status"] == "ok" for r in ew)
    assert doc["run"]["complete"]
