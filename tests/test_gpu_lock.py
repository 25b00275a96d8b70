"""`ways run --jobs N`: several workers on one GPU. Timing holds the GPU alone, other GPU work shares
it, CPU work needs nothing, and a waiting timer is not starved by a stream of sharers. Checked here
with processes and wall clocks (the lock is flock on files: no GPU needed)."""
import json
import multiprocessing as mp
import time

import pytest

import problems
from harness.schedule.gpu_lock import GpuLock

START_S = 3.0      # every process waits for one common start, however long its own start-up took


def _hold(path, mode, start_after, seconds, log, t0):
    time.sleep(max(0.0, t0 + start_after - time.time()))
    lock = GpuLock(path)
    asked = time.time()
    with getattr(lock, mode)():
        got = time.time()
        time.sleep(seconds)
        done = time.time()
    log.put((mode, start_after, asked, got, done))


def _steps(path, mode, start_after, seconds, log, t0, step_s=0.2):
    """A sharer whose section is `seconds` of 0.2 s GPU steps, letting a waiting timer in after each."""
    time.sleep(max(0.0, t0 + start_after - time.time()))
    lock = GpuLock(path)
    with lock.shared():
        got = time.time()
        for _ in range(round(seconds / step_s)):
            time.sleep(step_s)
            lock.let_timers_in()
        done = time.time()
    log.put((mode, start_after, got, got, done))


def _run(path, specs):
    ctx = mp.get_context("spawn")
    log = ctx.Queue()
    t0 = time.time() + START_S
    procs = [ctx.Process(target=_steps if mode == "steps" else _hold, args=(path, mode, after, secs, log, t0))
             for mode, after, secs in specs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    rows = [log.get(timeout=5) for _ in procs]
    return {(mode, after): (got, done) for mode, after, _, got, done in rows}


def test_timing_excludes_other_gpu_work_but_not_cpu_work(tmp_path):
    t = _run(str(tmp_path / "gpu.lock"), [("exclusive", 0.0, 0.8), ("shared", 0.3, 0.1), ("released", 0.3, 0.1)])
    ex_got, ex_done = t["exclusive", 0.0]
    assert t["shared", 0.3][0] >= ex_done - 0.01            # GPU work waited for the timer
    assert t["released", 0.3][1] < ex_done                   # CPU work ran beside it


def test_sharers_overlap_and_a_waiting_timer_goes_before_later_sharers(tmp_path):
    t = _run(str(tmp_path / "gpu.lock"), [("shared", 0.0, 0.8), ("shared", 0.1, 0.3),
                                          ("exclusive", 0.3, 0.3), ("shared", 0.6, 0.1)])
    first_done = t["shared", 0.0][1]
    assert t["shared", 0.1][0] < first_done                  # two sharers at once
    ex_got, ex_done = t["exclusive", 0.3]
    assert ex_got >= first_done - 0.01                        # the timer waited for both sharers
    assert t["shared", 0.6][0] >= ex_done - 0.01              # the late sharer waited behind the timer


def test_nested_modes_in_one_process(tmp_path):
    lock = GpuLock(str(tmp_path / "gpu.lock"))
    with lock.shared():
        with lock.exclusive():             # upgrade (an autotuning build inside a checked item)
            assert lock.mode == 2
            with lock.released():          # inside timing the GPU stays held
                assert lock.mode == 2
        assert lock.mode == 1
        with lock.released():
            assert lock.mode == 0
    assert lock.mode == 0
    off = GpuLock(None)                    # one worker at a time: no lock at all
    with off.exclusive():
        assert off.mode == 2


def test_run_with_two_jobs_accounts_for_its_time(tmp_path):
    from tests.test_cli import ways
    out = tmp_path / "out"
    r = ways("run", "-b", "array_api[numpy]", "--cases", "test", "--no-compile", "--jobs", "2", "--out", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "results.json").read_text())
    run = doc["run"]
    assert run["complete"] and run["jobs"] == 2
    assert {r["problem"] for r in doc["records"]} == set(problems.names())
    assert all(r["status"] in ("ok", "not_applicable") for r in doc["records"])
    assert abs(sum(run["phases"].values()) - run["duration_s"]) < 0.05 * run["duration_s"] + 0.1
    assert run["worker_phases"]["checks"] > 0
    held = run["gpu_lock"]                   # the workers' holds of the lock, summarized
    assert held["timing_holds"] == 0 and held["longest_shared"]
    assert {h["who"].split()[0] for h in held["longest_shared"]} == {"array_api[numpy]"}
    kept = [json.loads(line) for line in (out / "gpu-lock-holds.jsonl").read_text().splitlines()]
    assert kept and all(h["mode"] == "shared" and h["released"] >= h["got"] >= h["asked"] for h in kept)
    assert "GPU lock: held for timing 0 s" in r.stdout
    assert ways("run", "--jobs", "0", "--out", str(out)).returncode == 2


def test_a_cpu_variant_times_without_holding_the_gpu(tmp_path):
    """A CPU variant's work is CPU work: beside --jobs workers its timing and its calls hold no GPU,
    so no timer waits for them (NumPy's 2^28-element rows once held it 26 s of the timers'
    time)."""
    from harness.schedule.gpu_lock import LOCK, NONE, SHARED
    from harness.run.session import Session
    from tests.test_cli import ways
    s = Session("array_api", "numpy")
    with LOCK.shared():
        assert LOCK.mode == SHARED
        with s.gpu_work():
            assert LOCK.mode == NONE
    out = tmp_path / "out"
    r = ways("run", "-p", "gemm", "-b", "array_api[numpy]", "--shape", "M=300,N=200,K=100", "--dtype", "fp32",
             "--no-compile", "--jobs", "2", "--out", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "results.json").read_text())
    [rec] = [x for x in doc["records"] if x["variant"] == "numpy"]
    assert rec["status"] == "ok" and rec["timing"]["engine"] == "host-timer"
    assert doc["run"]["gpu_lock"]["timing_holds"] == 0
    holds = [json.loads(line) for line in (out / "gpu-lock-holds.jsonl").read_text().splitlines()]
    assert all(h["mode"] == "shared" for h in holds), holds         # the worker's sections, never timing


def test_compile_time_processes_run_beside_the_jobs_workers(tmp_path):
    """--jobs: the compile-time processes start with the workers (under the same GPU lock), each
    implementation's cold repeats at once, then its warm ones, each on a cache a cold one filled."""
    from tests.test_cli import compile_records
    compiled, doc = compile_records(tmp_path, "--jobs", "2", "--compile-repeats", "2")
    for comp in compiled.values():
        assert comp["beside_workers"] == 2 and comp["repeats_at_once"] and comp["processes"] == 4
        assert len(comp["cold_samples"]) == len(comp["warm_samples"]) == 2 and comp["warm_s"] > 0
        assert comp["concurrent"] % 2 == 0                      # processes at once: implementations x repeats
        # CPU seconds of the build (what a loaded machine leaves it): recorded; NumPy's build only binds
        # its function, so a clock tick (10 ms) may not pass
        assert all(isinstance(comp[k], float) and 0 <= comp[k] <= comp[k.replace("_cpu", "")] + 0.02
                   for k in ("cold_cpu_s", "warm_cpu_s"))
    run = doc["run"]
    assert "compile-time processes (after the workers ended)" in run["phases"]
    assert abs(sum(run["phases"].values()) - run["duration_s"]) < 0.05 * run["duration_s"] + 0.1
    who = {h["who"] for h in run["gpu_lock"]["shared_by_who"]}       # the lock's holds name their processes
    assert who & {f"array_api[numpy] {p} (compile-time process)" for p in ("segreduce", "elementwise")}, who


def test_one_maker_per_case_for_workers_at_once(tmp_path):
    """`--jobs` workers wanting the same case data: one makes it, the others wait and load it."""
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    with ctx.Pool(3) as pool:
        made = pool.starmap(_case_data_in_a_process, [(str(tmp_path),)] * 3)
    assert sorted(made) == [False, False, True]


def _case_data_in_a_process(cache: str) -> bool:
    """Whether this process made the case data (problem.make_inputs ran here)."""
    from pathlib import Path

    import problems
    from harness.run.case_store import case_data
    problem = problems.get("segreduce")
    case = problem.case("37x4097-float32")
    calls = []
    make = problem.make_inputs
    problem.make_inputs = lambda *a: calls.append(1) or make(*a)
    inputs, ref = case_data(problem, case, case.seed, Path(cache))
    assert inputs["x"].shape == (37, 4097) and "y" in ref
    return bool(calls)


def test_a_slow_builder_is_spread_over_workers(tmp_path, monkeypatch):
    """--jobs: an implementation whose builds take long (nvmath: 70-165 s a build) runs as one
    worker per build key (dtype by default) plus one for the cases it does not take, every case
    still giving one record, and its compile time is measured by one cold and one warm process."""
    import backends
    import problems
    from harness.run.plan import Job, shards
    from harness.run.registry import Impl
    from tests.conftest import run_lab
    numpy_backend = backends.get("array_api")
    monkeypatch.setattr(type(numpy_backend), "first_build_s", lambda self, problem: 100.0)
    seg = problems.get("segreduce")
    cases = [seg.case(n) for n in ("1x1-float32", "64x1000-float16", "37x4097-float32", "64x1000-bfloat16")]
    parts = shards(Job(Impl("array_api", "numpy", "segreduce"), cases))
    assert [[c.name for c in p.cases] for p in parts] == [["1x1-float32", "37x4097-float32"], ["64x1000-float16"],
                                                          ["64x1000-bfloat16"]]
    assert [p.shard for p in parts] == [".part1of3", ".part2of3", ".part3of3"]
    monkeypatch.setattr(type(numpy_backend), "supports", lambda self, case:
                        "no float16 here" if case.dtype == "float16" else None)
    monkeypatch.setattr(type(numpy_backend), "build_key", lambda self, problem, case: case.name)
    parts = shards(Job(Impl("array_api", "numpy", "segreduce"), cases))
    assert [[c.name for c in p.cases] for p in parts] == [["1x1-float32"], ["37x4097-float32"], ["64x1000-bfloat16"],
                                                          ["64x1000-float16"]]     # the untaken case last
    monkeypatch.undo()
    monkeypatch.setattr(type(numpy_backend), "first_build_s", lambda self, problem: 100.0)
    doc = run_lab(tmp_path, ["segreduce"], ["array_api[numpy]"], jobs=2, measure_compile=True, compile_repeats=2)
    recs = doc["records"]
    assert recs[0]["compile"]["processes"] == 2       # a slow builder beside the workers: one cold, one warm
    tests = [c for c in seg.cases() if c.kind == "test"]
    assert sorted(r["case"] for r in recs) == sorted(c.name for c in tests)
    assert all(r["status"] in ("ok", "not_applicable") for r in recs)
    logs = sorted(p.name for p in (tmp_path / "out" / "logs").glob("array_api[[]numpy[]].segreduce.part*.log"))
    assert len(logs) == len({c.dtype for c in tests})


def test_the_nvmath_pipeline_builds_once_per_shape_bucket():
    """nvmath's DevicePipeline compiles its kernels for its arrays' shapes (minutes each): the pipeline
    variant pads every side to a power of two of at least PIPELINE_BUCKET, so the float16 test
    matrices share one build (one worker), the 8192^3 case has its own, the other dtypes none."""
    import problems
    from backends.nvmath_device import PIPELINE_BUCKET, pipeline_bucket
    from harness.run.plan import Job, shards
    from harness.run.registry import Impl
    assert [pipeline_bucket(n) for n in (1, 1000, PIPELINE_BUCKET, PIPELINE_BUCKET + 1, 8192)] == \
        [PIPELINE_BUCKET, PIPELINE_BUCKET, PIPELINE_BUCKET, 2 * PIPELINE_BUCKET, 8192]
    gemm = problems.get("gemm")
    cases = list(gemm.cases())
    parts = shards(Job(Impl("nvmath_device", "pipeline", "gemm"), cases))
    small = [c.name for c in cases if c.dtype == "float16" and max(c.shape.values()) <= PIPELINE_BUCKET]
    names = [[c.name for c in p.cases] for p in parts]
    assert len(small) >= 5 and names[:2] == [small, ["8192x8192x8192-float16"]]
    assert len(parts) == 3 and all(c.dtype != "float16" for c in parts[2].cases)


def test_the_cutlass_operator_search_gets_a_worker_per_case():
    """cutlass_ops compiles and times every candidate kernel for each case: every case it takes is a
    worker of its own (a dtype's test cases one after another outlasted a case's limit on a busy node)."""
    import backends
    import problems
    from harness.run.plan import Job, shards
    from harness.run.registry import Impl
    cases = list(problems.get("gemm").cases())
    parts = shards(Job(Impl("cutlass_ops", "", "gemm"), cases))
    assert sorted(c.name for p in parts for c in p.cases) == sorted(c.name for c in cases)
    assert all(len(p.cases) == 1 for p in parts if not backends.get("cutlass_ops").supports(p.cases[0]))


def test_build_time_leaves_out_waiting_for_the_gpu():
    """A build that waits for another worker's timing (compiling() released the GPU, taking it back
    waits) is not charged for the wait: build_s is the build's own time."""
    import time
    import types

    import problems
    from harness.schedule.gpu_lock import WAIT_PHASE
    from harness.measure.phases import PHASES
    from harness.run.session import Session
    s = Session("array_api", "numpy")
    problem = problems.get("segreduce")
    real = s.backend.module("segreduce")

    def build(case, inputs, outputs, stream, **kw):
        with PHASES(WAIT_PHASE):
            time.sleep(0.4)                        # as if another worker timed meanwhile
        return real.build(case, inputs, outputs, stream, **kw)
    s.backend.module = lambda name: types.SimpleNamespace(build=build)
    case = problem.case("37x4097-float32")
    b = s.prepare(problem, case, case.seed)
    assert b.build_s < 0.3


def test_a_timer_gets_the_core_kept_for_timing(tmp_path):
    """WAYS_TIMING_CORES: a worker leaves those cores alone, except its own (WAYS_TIMING_CORE) while
    it holds the GPU alone; sharing the GPU or waiting, it stays off it. In a process of its own
    (the affinity is the process's)."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT
    usable = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(usable) < 2:
        pytest.skip("one usable core: none to keep")
    kept = usable[-1]
    script = (
        "import os\n"
        "from harness.schedule.gpu_lock import LOCK\n"
        "LOCK.keep_timing_cores_free()\n"
        "start = sorted(os.sched_getaffinity(0))\n"
        "with LOCK.shared():\n"
        "    shared = sorted(os.sched_getaffinity(0))\n"
        "    with LOCK.exclusive():\n"
        "        timing = sorted(os.sched_getaffinity(0))\n"
        "    back = sorted(os.sched_getaffinity(0))\n"
        "import json; print(json.dumps([start, shared, timing, back]))\n")
    env = {**os.environ, "WAYS_GPU_LOCK": str(tmp_path / "gpu.lock"), "WAYS_TIMING_CORES": str(kept),
           "WAYS_TIMING_CORE": str(kept)}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True)
    start, shared, timing, back = json.loads(out.stdout)
    others = [c for c in usable if c != kept]
    assert start == shared == back == others
    assert timing == usable


def test_a_compile_process_is_never_niced_while_it_holds_the_gpu(tmp_path):
    """A niced process holding the GPU keeps a waiting timer waiting while busier processes keep it
    off the cores: niced outside its holds where it may raise its priority again, else not at all.
    In a process of its own (the priority is the process's threads')."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT
    if not hasattr(os, "setpriority"):
        pytest.skip("no setpriority here")
    script = (
        "import os\n"
        "from harness.schedule.gpu_lock import LOCK\n"
        "nice = lambda: os.getpriority(os.PRIO_PROCESS, 0)\n"
        "base = nice()\n"
        "LOCK.nice_outside_holds(5)\n"
        "outside = nice()\n"
        "with LOCK.shared():\n"
        "    shared = nice()\n"
        "    with LOCK.released():\n"
        "        released = nice()\n"
        "    with LOCK.exclusive():\n"
        "        timing = nice()\n"
        "import json; print(json.dumps([base, outside, shared, released, timing, nice()]))\n")
    env = {**os.environ, "WAYS_GPU_LOCK": str(tmp_path / "gpu.lock")}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True)
    base, outside, shared, released, timing, after = json.loads(out.stdout)
    assert shared == timing == base                          # never niced while holding
    assert outside in (base, min(base + 5, 19)) and released == after == outside


def _labelled_hold(path, mode, who, doing, start_after, seconds, t0):
    from harness.measure.phases import PHASES
    time.sleep(max(0.0, t0 + start_after - time.time()))
    lock = GpuLock(path)
    lock.label = who
    with PHASES(doing), getattr(lock, mode)():
        time.sleep(seconds)


def test_the_holds_tell_what_a_timer_waited_behind(tmp_path):
    """Each hold is written to <lock>.holds.jsonl; the summary puts a timer's wait on the sharer
    that let go last."""
    from harness.schedule import gpu_lock, lock_holds
    path = str(tmp_path / "gpu.lock")
    ctx = mp.get_context("spawn")
    t0 = time.time() + START_S
    specs = [("shared", "jax_pallas gemm 8192x8192x8192-bfloat16", "builds", 0.0, 1.0),
             ("shared", "triton elementwise 1001-float32", "uploads", 0.1, 0.2),
             ("exclusive", "nvrtc gemm 4096x4096x4096-bfloat16", "sampling (cold)", 0.4, 0.3)]
    procs = [ctx.Process(target=_labelled_hold, args=(path, *spec, t0)) for spec in specs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    holds = lock_holds.read(tmp_path / ("gpu.lock" + gpu_lock.HOLDS_SUFFIX))
    assert sorted(h["mode"] for h in holds) == ["exclusive", "shared", "shared"]
    s = lock_holds.summarize(holds)
    assert 0.4 < s["timers_waited_s"] < 0.9 and 0.25 < s["timing_held_s"] < 0.5
    behind = s["timers_waited_behind"]
    assert [(b["who"], b["doing"], b["waits"]) for b in behind] == [("jax_pallas gemm", "builds", 1)]
    assert s["longest_shared"][0]["who"].startswith("jax_pallas gemm") and s["longest_shared"][0]["held_s"] > 0.9


def test_a_timer_behind_another_timer_is_not_put_on_a_sharer():
    from harness.schedule import lock_holds
    holds = [{"who": "a gemm x", "doing": "sampling (cold)", "mode": "exclusive", "asked": 0.0, "got": 0.0,
              "released": 2.0},
             {"who": "b gemm x", "doing": "builds", "mode": "shared", "asked": 0.0, "got": 0.0, "released": 0.0},
             {"who": "c gemm x", "doing": "sampling (cold)", "mode": "exclusive", "asked": 1.0, "got": 2.0,
              "released": 3.0}]
    s = lock_holds.summarize(holds)
    assert s["timers_waited_behind"] == [{"who": "another timer", "doing": "", "s": 1.0, "waits": 1}]
    assert s["timing_held_s"] == 3.0 and s["span_s"] == 3.0


def test_a_hold_is_named_by_the_phase_that_took_most_of_it(tmp_path):
    """A hold asked for as the CPU-only float64 references end (the GPU taken back for the upload and
    the build after them) is the build's, not the references'."""
    from harness.schedule import gpu_lock, lock_holds
    from harness.measure.phases import PHASES
    lock = GpuLock(str(tmp_path / "gpu.lock"))
    lock.label = "nvmath_device segreduce 8192x32768-float32"
    with lock.shared():
        with PHASES("inputs and float64 references"), lock.released():
            time.sleep(0.05)
        with PHASES("uploads"):
            time.sleep(0.02)
        with PHASES("builds"):
            time.sleep(0.2)
    holds = lock_holds.read(tmp_path / ("gpu.lock" + gpu_lock.HOLDS_SUFFIX))
    assert len(holds) == 2          # before the references, and after them
    assert (holds[1]["asked_in"], holds[1]["doing"]) == ("inputs and float64 references", "builds")


def test_the_wall_time_not_timed_is_split_into_blocked_and_no_timer_ready():
    """Timer 1 holds 0-2; timer 2 waits 1-4 (behind timer 1, then behind a sharer 2-4) and holds 4-5;
    nothing asks 5-7, timer 3 holds 7-8: 4 s timed, 2 s a timer blocked by other GPU work, 2 s none ready."""
    from harness.schedule import lock_holds
    holds = [{"who": "a gemm x", "doing": "sampling (cold)", "mode": "exclusive", "asked": 0.0, "got": 0.0,
              "released": 2.0},
             {"who": "b gemm x", "doing": "builds", "mode": "shared", "asked": 0.5, "got": 2.0, "released": 4.0},
             {"who": "c gemm x", "doing": "sampling (cold)", "mode": "exclusive", "asked": 1.0, "got": 4.0,
              "released": 5.0},
             {"who": "d gemm x", "doing": "sampling (cold)", "mode": "exclusive", "asked": 7.0, "got": 7.0,
              "released": 8.0}]
    s = lock_holds.summarize(holds)
    assert (s["span_s"], s["timing_held_s"], s["timer_blocked_s"]) == (8.0, 4.0, 2.0)
    assert "2 s a timer waited behind other GPU work, 2 s no timer was ready" in "\n".join(lock_holds.lines(s))


def test_a_sharer_lets_a_waiting_timer_in_between_its_steps(tmp_path):
    """A shared section of six 0.2 s GPU steps (uploads, a build, calls, downloads): a timer asking
    0.3 s in gets the GPU when the second step ends, not when the section does (1.2 s)."""
    t = _run(str(tmp_path / "gpu.lock"), [("steps", 0.0, 1.2), ("exclusive", 0.3, 0.3)])
    got, done = t["steps", 0.0]
    ex_got, ex_done = t["exclusive", 0.3]
    assert ex_got - got < 0.55                       # after step 2 (0.4 s), with scheduling slack
    assert done >= ex_done - 0.01                    # the sharer went on after the timer, never beside it
    assert done - got >= 1.2 + 0.3 - 0.05            # its six steps plus the timer's turn


def test_a_worker_of_test_cases_only_starts_no_timing(tmp_path, monkeypatch):
    """A worker whose share has no bench case (a slow builder's part, what a resumed run has left)
    checks its test cases and never starts a timing engine: nvbench refuses to run no benchmark,
    which killed such workers before their first test case."""
    import argparse
    import dataclasses
    import os

    import problems
    from harness.run import worker
    monkeypatch.setattr(worker.Worker, "run_bench", lambda self, bench: pytest.fail(f"timing started: {bench}"))
    seg = problems.get("segreduce")
    items = tmp_path / "items.json"
    items.write_text(json.dumps([{"problem": "segreduce", "case": dataclasses.asdict(seg.case("37x4097-float32"))}]))
    read, write = os.pipe()
    args = argparse.Namespace(backend="array_api", variant="numpy", items=str(items), fd=write, scratch=str(tmp_path))
    assert worker.run_items(args) == 0
    events = [json.loads(line) for line in os.fdopen(read).read().splitlines()]
    done = [e["record"] for e in events if e["event"] == "done"]
    assert [(r["case"], r["status"]) for r in done] == [("37x4097-float32", "ok")]


def test_the_tools_own_compile_is_timed_apart_from_the_build():
    """compiling() blocks (the outermost of nested ones) are the tool's own compile: the build's part
    `tool_compile_s`, beside the whole build the compile column shows."""
    import backends.base
    from harness.run.session import TOOL_COMPILE
    before = TOOL_COMPILE.seconds
    with backends.base.compiling():
        with backends.base.compiling():
            time.sleep(0.05)
        time.sleep(0.05)
    assert 0.1 <= TOOL_COMPILE.seconds - before < 0.2


def test_a_compile_time_processs_search_shares_the_gpu(monkeypatch):
    """An autotuner's search in a compile-time process is only timed for how long it takes: it shares
    the GPU with other workers' GPU work (never with a timer) instead of holding it alone."""
    from harness.run import session
    from harness.schedule.gpu_lock import LOCK
    assert session.TOOL_SEARCH.hold == LOCK.exclusive and session.Session.searches_alone
    monkeypatch.setattr(session.TOOL_SEARCH, "hold", session.TOOL_SEARCH.hold)
    monkeypatch.setattr(session.Session, "searches_alone", True)
    session.searches_share_the_gpu()
    assert session.TOOL_SEARCH.hold == LOCK.shared and not session.Session.searches_alone
