"""The lab's timing against an independent one: the same torch kernel through the lab (nvbench,
cold) and through triton.testing.do_bench (which also flushes L2 between runs). GPU only."""
import json

import pytest

import problems
from tests.conftest import needs_gpu, run_lab

pytestmark = [needs_gpu]


def test_lab_agrees_with_do_bench(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    testing = pytest.importorskip("triton.testing")
    from harness import registry
    case = problems.get("segreduce").case("8192x32768-float32")
    monkeypatch.setattr(registry, "cases_for", lambda p, kinds, custom=None: [case])
    doc = run_lab(tmp_path, problems=["segreduce"], backends_=["array_api[torch]"], kinds=("bench",))
    [rec] = [r for r in doc["records"] if r["variant"] == "torch"]
    assert rec["status"] == "ok", rec["error"]
    lab_ms = rec["timing"]["device_ms_cold"]
    x = torch.rand(8192, 32768, device="cuda", dtype=torch.float32) * 2 - 1
    do_bench_ms = testing.do_bench(lambda: torch.sum(x, dim=1, dtype=torch.float32), warmup=200, rep=2000,
                                   return_mode="median")
    print(json.dumps({"case": case.name, "lab_engine": rec["timing"]["engine"], "lab_cold_median_ms": lab_ms,
                      "triton_do_bench_median_ms": do_bench_ms}))
    assert abs(lab_ms - do_bench_ms) / do_bench_ms < 0.05
