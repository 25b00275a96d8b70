"""`ways run --ray`: the Ray executor on a local cluster with fake GPU resources (NumPy rows), a
task whose process keeps dying: retried by Ray, then reported as failed records, the merge valid; and
a run interrupted while a task still runs: what every task measured is merged all the same."""
import json
import os
import signal
import threading
import time

import pytest

from harness.results import records
from harness.run.plan import Options
from tests.test_cli import ran

ray = pytest.importorskip("ray", reason="the Ray executor's extra is not installed (pip install '.[ray]')")


def numpy_rows(out):
    """The row sum's and elementwise's test cases on NumPy, for a two-task local cluster."""
    return Options(problems=["segreduce", "elementwise"], backends=["array_api[numpy]"], kinds=("test",),
                   out=out, measure_compile=False)


def test_local_cluster_runs_the_plan_in_one_task_per_gpu(tmp_path):
    out = tmp_path / "out"
    doc = ran(out, "-b", "array_api[numpy]", "-p", "segreduce", "-p", "elementwise", "--cases", "test",
              "--no-compile", "--ray", "local:2")
    assert doc["run"]["ray"] == {"gpu_kinds": {"any": 2}, "tasks": ["any-0", "any-1"]}
    assert {x["gpu"]["index"] for x in doc["records"]} == {0, 1}          # Ray's CUDA_VISIBLE_DEVICES
    assert all(x["status"] in ("ok", "not_applicable") for x in doc["records"])
    assert sorted(p.name for p in (out / "lanes").iterdir()) == ["any-0", "any-1"]


def test_workers_keep_the_driver_s_pythonpath(monkeypatch):
    from harness.run import cluster
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/site/with/ray", "/lab/site"]))
    assert cluster.worker_pythonpath().split(os.pathsep) == [str(cluster.ROOT_DIR), "/site/with/ray", "/lab/site"]
    monkeypatch.delenv("PYTHONPATH")
    assert cluster.worker_pythonpath() == str(cluster.ROOT_DIR)


def dying_lane(opts, jobs, out=None):
    """A task that dies (its process exits) when it holds the segreduce jobs."""
    from harness.run import cluster
    if any(j.impl.problem == "segreduce" for j in jobs):
        os._exit(3)
    return cluster._lane(opts, jobs, out)        # the task's own module: not patched there


def test_a_task_that_keeps_dying_is_reported_failed(tmp_path, monkeypatch):
    from harness.run import cluster
    from harness.run.progress import NullProgress
    monkeypatch.setattr(cluster, "_lane", dying_lane)
    opts = numpy_rows(tmp_path / "out")
    doc = cluster.run(opts, "local:2", NullProgress())
    records.validate(doc)
    seg = [x for x in doc["records"] if x["problem"] == "segreduce"]
    assert seg and all(x["status"] == "failed" and x["error"].startswith("Ray task any-") for x in seg), \
        [(x["status"], x["error"][:200]) for x in seg]
    ew = [x for x in doc["records"] if x["problem"] == "elementwise"]
    assert ew and all(x["status"] in ("ok", "not_applicable") for x in ew), [x["error"][:300] for x in ew]


def lingering_lane(opts, jobs, out=None):
    """A task that runs its jobs, then (holding the segreduce jobs) keeps its GPU until it is cancelled."""
    from harness.run import cluster
    doc = cluster._lane(opts, jobs, out)
    while any(j.impl.problem == "segreduce" for j in jobs):
        time.sleep(0.1)
    return doc


def wait_for_both_lanes(out, limit_s=None):
    """Until both tasks of a two-task run have written their lane's results (or `limit_s` passed)."""
    deadline = None if limit_s is None else time.monotonic() + limit_s
    while not all((out / "lanes" / name / "results.json").is_file() for name in ("any-0", "any-1")):
        if deadline is not None and time.monotonic() > deadline:
            return
        time.sleep(0.2)


def test_an_interrupted_run_keeps_what_every_task_measured(tmp_path, monkeypatch):
    from harness.run import cluster
    from harness.run.progress import NullProgress
    monkeypatch.setattr(cluster, "_lane", lingering_lane)
    out = tmp_path / "out"
    opts = numpy_rows(out)

    def interrupt_once_both_wrote():
        wait_for_both_lanes(out, NEVER_WRITTEN_S)         # a lane that never writes fails the test, not hangs it
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_both_wrote, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        cluster.run(opts, "local:2", NullProgress())
    doc = json.loads((out / "results.json").read_text())
    records.validate(doc)
    assert {x["problem"] for x in doc["records"] if x["status"] in ("ok", "not_applicable")} == \
        {"segreduce", "elementwise"}


NEVER_WRITTEN_S = 60             # a two-task CPU cluster's first task ends within seconds


def test_a_ctrl_c_while_a_finished_task_is_collected_loses_nothing(tmp_path, monkeypatch):
    """Ctrl-C reaching the driver as it keeps a finished task's document (here: as it writes it): the
    document is still merged, from the lane's folder the task wrote it to."""
    from harness.run import cluster
    from harness.run.progress import NullProgress
    monkeypatch.setattr(cluster, "_lane", lingering_lane)
    write, writes = records.atomic_write, []
    out = tmp_path / "out"

    def interrupted_first(path, text):
        writes.append(path)
        if len(writes) == 1:
            # the other task still running, but past its cases (it lingers): what it measured is there
            wait_for_both_lanes(out, NEVER_WRITTEN_S)
            raise KeyboardInterrupt
        write(path, text)

    monkeypatch.setattr(records, "atomic_write", interrupted_first)

    def interrupt_if_never_written():           # a driver that never keeps a finished task's results
        deadline = time.monotonic() + NEVER_WRITTEN_S
        while not writes and time.monotonic() < deadline:
            time.sleep(0.2)
        if not writes:
            os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_if_never_written, daemon=True).start()
    opts = numpy_rows(out)
    with pytest.raises(KeyboardInterrupt):
        cluster.run(opts, "local:2", NullProgress())
    assert writes[0].parent.parent == out / "lanes"
    doc = json.loads((out / "results.json").read_text())
    records.validate(doc)
    assert {x["problem"] for x in doc["records"] if x["status"] in ("ok", "not_applicable")} == \
        {"segreduce", "elementwise"}


def test_a_stop_cancels_only_the_tasks_still_running():
    """Ray's driver aborts when a task it cancelled then reports its completion: a finished task (its
    result there, its reply perhaps not yet) is left alone, the running ones are cancelled and waited on."""
    from harness.run import cluster

    class FakeRay:
        def __init__(self):
            self.cancelled, self.waited = [], []

        def wait(self, refs, num_returns, timeout):
            if timeout == 0:
                return [r for r in refs if r == "done"], [r for r in refs if r != "done"]
            self.waited.append((list(refs), timeout))
            return refs, []

        def cancel(self, ref):
            self.cancelled.append(ref)

    fake = FakeRay()
    cluster._stop(fake, ["done", "running"])
    assert fake.cancelled == ["running"] and fake.waited == [(["running"], cluster.STOP_S)]
    fake = FakeRay()
    cluster._stop(fake, ["done"])
    assert fake.cancelled == [] and fake.waited == []
