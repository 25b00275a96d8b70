"""`ways run --gpus`: jobs dealt to lanes (one per GPU), each lane a run of its own, merged; on this
machine the lanes run the NumPy rows side by side (CUDA_VISIBLE_DEVICES set per lane)."""
import json
from pathlib import Path

import pytest

from harness.results import records
from harness.run import lanes
from harness.run.plan import Options, plan
from harness.run.progress import NullProgress
from tests.test_cli import ran, ways


def test_deal_balances_and_gives_each_benching_lane_its_cublas_rows():
    jobs = plan(Options(problems=["gemm", "segreduce"], backends=["array_api[numpy]", "triton", "cute_dsl"]))
    parts = lanes.deal(jobs, 2)
    dealt = [(j.impl.label, j.impl.problem, c.name) for part in parts for j in part for c in j.cases]
    own = [(j.impl.label, j.impl.problem, c.name) for j in jobs for c in j.cases]
    assert set(dealt) == set(own)                        # nothing lost
    for part in parts:                                   # a lane timing GEMM has cuBLAS beside it
        if any(j.impl.problem == "gemm" and any(c.kind == "bench" for c in j.cases) for j in part):
            assert any(j.impl.label == "array_api[torch]" and j.impl.problem == "gemm" for j in part)
    weights = [sum(5 if c.kind == "bench" else 1 for j in part for c in j.cases) for part in parts]
    assert min(weights) > 0


def test_a_resumed_lane_that_timed_attention_gets_every_sdpa_row():
    """--resume: a lane with no attention left that timed attention in an earlier part still gets
    each of SDPA's backends beside it (the fastest of them is the ceiling), and a lane that never
    timed it gets none."""
    jobs = plan(Options(problems=["attention"], backends=["triton", "torch_sdpa[flash]", "torch_sdpa[cudnn]",
                                                          "torch_sdpa[efficient]"]))
    left = [j for j in jobs if j.impl.backend == "triton"]
    parts = lanes.deal(left, 3, refs=jobs, benched=[set(), {"attention"}, set()])
    has = [{j.impl.label for j in part} for part in parts]
    sdpa = {"torch_sdpa[flash]", "torch_sdpa[cudnn]", "torch_sdpa[efficient]"}
    assert sdpa <= has[1] and "triton" not in has[1]
    assert [bool(sdpa & h) for h in (has[0], has[2])] == ["triton" in h for h in (has[0], has[2])]


def test_a_resume_measures_missing_compile_figures_where_the_rows_are():
    """--resume: an implementation with every row in but no compile figures (its compile-time
    processes were stopped) is dealt as a job of no cases to the lane holding most of its rows;
    one with its compile figures, or rows still to run, is not."""
    from harness.run.resume import Done
    jobs = plan(Options(problems=["segreduce"], backends=["triton", "cute_dsl", "numba_simt"]))
    keys = {j.impl.label: {(j.impl.backend, j.impl.variant, j.impl.problem, c.name) for c in j.cases} for j in jobs}
    triton, cute = sorted(keys["triton"]), keys["cute_dsl"]
    measured = [Done(rows=set(triton[:2]) | cute), Done(rows=set(triton[2:]))]
    anywhere = Done(rows=set().union(*(d.rows for d in measured)), compiles={("cute_dsl", "", "segreduce")})
    parts = [[], []]
    lanes.add_compile_only(parts, jobs, measured, anywhere)
    assert parts[0] == [] and [(j.impl.label, j.cases) for j in parts[1]] == [("triton", [])]


def test_a_lane_without_its_own_vendor_rows_borrows_its_siblings():
    """The % of peak of a lane that timed no vendor row (cuBLAS, SDPA) is taken against its sibling
    GPU's fastest, its basis saying which GPU measured it; a lane's own vendor rows come first."""
    def row(label, ms, gpu):
        backend, _, variant = label.rstrip("]").partition("[")
        return {"problem": "attention", "case": "4x32x4096x128-full-bfloat16", "backend": backend,
                "variant": variant, "status": "ok", "dtype": "bfloat16", "gpu": {"index": gpu},
                "work": {"flops": 1e12, "bytes": 1},
                "timing": {"device_ms_cold": ms, "device_ms_sustained": ms, "cold": {}, "sustained": {}}}
    env = {"environment": {"gpus": [{"name": "NVIDIA H200"}]}, "references": {}}
    a = {**env, "records": [row("torch_sdpa[flash]", 2.0, 0), row("torch_sdpa[cudnn]", 1.0, 0), row("triton", 2.0, 0)]}
    b = {**env, "records": [row("cute_dsl", 1.0, 1), row("torch_sdpa[efficient]", 4.0, 1)]}
    lanes.borrow_references([a, b])
    cute, triton = b["records"][0]["timing"], a["records"][2]["timing"]
    assert cute["pct_of_peak"] == pytest.approx(100) and "torch_sdpa[cudnn]" in cute["peak_basis"]
    assert "measured on GPU 0 of the node" in cute["peak_basis"]
    assert triton["pct_of_peak"] == pytest.approx(50) and "measured on" not in triton["peak_basis"]


def test_lanes_run_side_by_side_and_merge(tmp_path):
    out = tmp_path / "out"
    doc = ran(out, "-b", "array_api[numpy]", "-p", "segreduce", "-p", "elementwise", "-p", "gemm",
              "--cases", "test", "--no-compile", "--gpus", "0,1")
    assert doc["run"]["lanes"] == ["0", "1"]
    parts = [json.loads((out / "lanes" / lane / "results.json").read_text())["run"] for lane in ("gpu0", "gpu1")]
    assert doc["run"]["duration_s"] == max(p["duration_s"] for p in parts)
    assert {r["gpu"]["index"] for r in doc["records"]} == {0, 1}
    assert all(r["status"] in ("ok", "not_applicable") for r in doc["records"])
    for lane in ("gpu0", "gpu1"):
        part = json.loads((out / "lanes" / lane / "results.json").read_text())
        assert part["run"]["gpu_lane"] == lane[3:]
    again = ways("run", "-b", "array_api[numpy]", "-p", "segreduce", "--case", "1x1-float32", "--no-compile",
                 "--gpus", "0,1", "--out", str(out))
    assert again.returncode == 0, again.stderr
    kept = out / "previous" / doc["run"]["id"]                 # the first run's merged files, set aside
    assert json.loads((kept / "results.json").read_text())["run"]["id"] == doc["run"]["id"]
    assert (kept / "lanes" / "gpu0" / "results.json").is_file()


@pytest.mark.parametrize("spec,msg", [("all", "nvidia-smi lists no GPU"), ("3", "this machine has 0 GPU(s)"),
                                      ("0", "one GPU by its index: 0,"), ("0,0", "distinct GPU indices")])
def test_bad_gpus(tmp_path, spec, msg):
    r = ways("run", "-b", "array_api[numpy]", "--gpus", spec, "--out", str(tmp_path / "never"))
    assert r.returncode == 2 and msg in r.stderr, r.stderr


def test_an_interrupted_lanes_run_stops_every_lane_keeps_what_was_measured_and_resumes(tmp_path, bad_backends):
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT
    out = tmp_path / "out"
    sel = ["-b", "array_api[numpy]", "-b", "broken", "-p", "segreduce", "-p", "elementwise", "--cases", "test",
           "--no-compile", "--out", str(out)]
    tag = f"lanes-interrupt-{os.getpid()}-{time.monotonic_ns()}"     # this run's processes, not another test's
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", *sel, "--timeout", "120", "--gpus", "0,1"],
                            cwd=ROOT, env={**os.environ, "WAYS_TEST_RUN_TAG": tag}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(out.glob("lanes/*/logs/broken*.log")) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(3)                              # a broken worker is now inside its endless call
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "interrupted" in err, err
    assert time.monotonic() - sent < 30
    doc = json.loads((out / "results.json").read_text())
    records.validate(doc)
    assert any(r["backend"] == "array_api" and r["status"] == "ok" for r in doc["records"])
    for lane in ("gpu0", "gpu1"):              # every lane's results merged, none cut off mid-write
        assert (out / "lanes" / lane / "results.json").is_file()
    assert not _tagged_processes(tag), "a worker outlived the interrupted run"

    # --resume: the same lanes go on with what neither measured (the hanging item now times out)
    kept = {records.record_key(r) for r in doc["records"] if r["status"] != "failed"}
    fewer = ways("run", *sel, "--gpus", "0,", "--resume")
    assert fewer.returncode == 2 and "had lanes gpu0, gpu1" in fewer.stderr, fewer.stderr
    r = ways("run", *sel, "--timeout", "5", "--gpus", "0,1", "--resume")
    assert r.returncode == 0, r.stderr
    done = json.loads((out / "results.json").read_text())
    records.validate(done)
    assert done["run"]["complete"] and not (out / "previous").exists()
    measured = [records.record_key(x["record"]) for lane in ("gpu0", "gpu1")
                for x in records.read_jsonl(out / "lanes" / lane / "results.jsonl") if x["type"] == "record"]
    assert all(measured.count(k) == 1 for k in kept)                 # kept rows were not measured again
    keys = [records.record_key(r) for r in done["records"]]
    assert len(set(keys)) == len(keys) and set(keys) > {records.record_key(r) for r in doc["records"]}
    assert all(r["status"] != "failed" or r["backend"] == "broken" for r in done["records"])
    again = ways("run", *sel, "--gpus", "0,1", "--resume")
    assert again.returncode == 2 and "is complete" in again.stderr, again.stderr


def test_each_lane_gets_its_share_of_the_cores(monkeypatch, tmp_path):
    """Two lanes on 16 usable cores: each lane's compile-time processes are sized for 8."""
    seen = []

    class Recorder(lanes.Run):
        def execute(self):
            seen.append(self.cores)
            raise RuntimeError("not run")
    monkeypatch.setattr(lanes, "Run", Recorder)
    monkeypatch.setattr(lanes, "usable_cores", lambda: 16)
    monkeypatch.setattr(lanes, "write_merged", lambda *a, **k: {})
    with pytest.raises(RuntimeError, match="not run"):
        lanes._run(Options(out=tmp_path), ["0", "1"], [[], []], NullProgress())
    assert seen == [8, 8]


def test_usable_cores_follow_the_affinity_mask():
    import shutil
    import subprocess
    import sys
    if not shutil.which("taskset"):
        pytest.skip("no taskset on this machine")
    out = subprocess.run(["taskset", "-c", "0", sys.executable, "-c",
                          "from harness.measure.env import usable_cores; print(usable_cores())"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"


def test_each_lane_keeps_a_core_for_its_timers(monkeypatch):
    import os

    from harness.schedule import gpu_lock
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)))
    assert gpu_lock.timing_cores_for(1) == [("15", "15")]
    assert gpu_lock.timing_cores_for(2) == [("14,15", "14"), ("14,15", "15")]
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert gpu_lock.timing_cores_for(1) == [None]          # too few cores: none kept


def test_a_gpu_lost_mid_run_has_its_items_dealt_again_to_the_healthy_lane(tmp_path, bad_backends, monkeypatch):
    """GPU 1 lost: the lane's items on it fail with the driver's error (kept in its own results), then
    go to GPU 0's lane again; the merged run completes with every row ok and says what was re-dealt."""
    from tests.fixtures.bad_backends.gpulost import LOST
    sel = dict(problems=["segreduce"], backends=["gpulost", "array_api[numpy]"], kinds=("test",))
    parts = lanes.deal(plan(Options(**sel)), 2)
    gone = next(k for k, part in enumerate(parts) if any(j.impl.backend == "gpulost" for j in part))
    monkeypatch.setenv("WAYS_TEST_LOST_GPU", str(gone))        # the GPU the lost backend's job is dealt to
    out = tmp_path / "out"
    doc = ran(out, "-b", "gpulost", "-b", "array_api[numpy]", "-p", "segreduce", "--cases", "test",
              "--no-compile", "--gpus", "0,1")
    first = json.loads((out / "lanes" / f"gpu{gone}" / "results.json").read_text())
    failed = [x for x in first["records"] if x["status"] == "failed"]
    assert failed and all(LOST in x["error"] for x in failed) and lanes.lost(first)
    assert doc["run"]["redealt"] == {"from": [str(gone)], "to": [str(1 - gone)], "items": len(failed)}
    assert all(x["status"] in ("ok", "not_applicable") for x in doc["records"])
    lost_rows = [x for x in doc["records"] if x["backend"] == "gpulost" and x["status"] == "ok"]
    assert {x["case"] for x in lost_rows} == {x["case"] for x in failed}          # each once, measured again
    assert len(lost_rows) == len(failed) and all(x["gpu"]["index"] == 1 - gone for x in lost_rows)
    assert (out / "lanes" / f"gpu{1 - gone}-redealt" / "results.json").is_file()


def _tagged_processes(tag: str) -> list[int]:
    """PIDs of live processes whose environment carries WAYS_TEST_RUN_TAG=tag (Linux /proc)."""
    found = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"WAYS_TEST_RUN_TAG={tag}".encode() in env.read_bytes().split(b"\0"):
                found.append(int(env.parent.name))
        except OSError:                # gone meanwhile, or not ours to read
            continue
    return found
