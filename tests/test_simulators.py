"""What runs without a GPU beyond NumPy: the numba_simt kernels on numba's CUDA simulator
(NUMBA_ENABLE_CUDASIM=1), small float32 test cases, through the real harness."""
import pytest

from tests.conftest import run_lab

pytest.importorskip("numba.cuda", reason="numba-cuda not installed")


@pytest.mark.parametrize("problem", ["segreduce", "elementwise", "gemm"])
def test_numba_simt_on_the_cuda_simulator(tmp_path, monkeypatch, problem):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")      # inherited by the worker processes
    doc = run_lab(tmp_path, problems=[problem], backends_=["numba_simt"])
    rows = [r for r in doc["records"] if r["backend"] == "numba_simt"]
    ran = [r for r in rows if r["status"] == "ok"]
    bad = [f"{r['case']}: {r['status']}: {r['error'][-300:]}" for r in rows if r["status"] in ("wrong", "failed")]
    assert not bad, "\n".join(bad)
    assert ran and all(r["dtype"] == "float32" and len(r["seeds"]) == 3 for r in ran)
    skipped = [r for r in rows if r["status"] == "not_applicable"]
    assert all("simulator" in r["reason"] for r in skipped)
