"""`ways run --ray`: the Ray executor on a local cluster with fake GPU resources (NumPy rows), and a
task whose process keeps dying: retried by Ray, then reported as failed records, the merge valid."""
import os

import pytest

from harness.results import records
from harness.run.runner import Options
from tests.test_cli import ran

ray = pytest.importorskip("ray", reason="the Ray executor's extra is not installed (pip install '.[ray]')")


def test_local_cluster_runs_the_plan_in_one_task_per_gpu(tmp_path):
    out = tmp_path / "out"
    doc = ran(out, "-b", "array_api[numpy]", "-p", "segreduce", "-p", "elementwise", "--cases", "test",
              "--no-compile", "--ray", "local:2")
    assert doc["run"]["ray"] == {"gpu_kinds": {"any": 2}, "tasks": ["any-0", "any-1"]}
    assert {x["gpu"]["index"] for x in doc["records"]} == {0, 1}          # Ray's CUDA_VISIBLE_DEVICES
    assert all(x["status"] in ("ok", "not_applicable") for x in doc["records"])
    assert sorted(p.name for p in (out / "lanes").iterdir()) == ["any-0", "any-1"]


def dying_lane(opts, jobs):
    """A task that dies (its process exits) when it holds the segreduce jobs."""
    from harness.run import cluster
    if any(j.impl.problem == "segreduce" for j in jobs):
        os._exit(3)
    return cluster._lane(opts, jobs)             # the task's own module: not patched there


def test_a_task_that_keeps_dying_is_reported_failed(tmp_path, monkeypatch):
    from harness.run import cluster
    from harness.run.runner import NullProgress
    monkeypatch.setattr(cluster, "_lane", dying_lane)
    opts = Options(problems=["segreduce", "elementwise"], backends=["array_api[numpy]"], kinds=("test",),
                   out=tmp_path / "out", measure_compile=False)
    doc = cluster.run(opts, "local:2", NullProgress())
    records.validate(doc)
    seg = [x for x in doc["records"] if x["problem"] == "segreduce"]
    assert seg and all(x["status"] == "failed" and x["error"].startswith("Ray task any-") for x in seg), \
        [(x["status"], x["error"][:200]) for x in seg]
    ew = [x for x in doc["records"] if x["problem"] == "elementwise"]
    assert ew and all(x["status"] in ("ok", "not_applicable") for x in ew), [x["error"][:300] for x in ew]
