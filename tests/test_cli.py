"""The `ways` command: bad input gets one clear line and exit 2, with nothing written."""
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def ways(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "COLUMNS": "200"})


def ran(out, *args) -> dict:
    """`ways run ARGS --out OUT`, which must succeed: the results.json it wrote, validated."""
    from harness.results import records
    r = ways("run", *args, "--out", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "results.json").read_text())
    records.validate(doc)
    return doc


@pytest.mark.parametrize("args,msg", [
    (["-p", "fft"], "unknown problem 'fft' (valid: attention, elementwise, gemm, gemm_fp8, scan, segreduce)"),
    (["-b", "magic"], "unknown backend 'magic' (valid: array_api"),
    (["-b", "array_api[julia]"], "no variant 'julia'"),
    (["-p", "gemm", "--shape", "M=4096,N=4096"], "gemm needs shape keys M,N,K (missing: K)\n"),
    (["-p", "gemm", "--shape", "M=4,N=4,K=4,Q=1"], "gemm needs shape keys M,N,K (unknown: Q)\n"),
    (["-p", "gemm", "--shape", "M=4096,N=x,K=1"], "'x' is not an integer"),
    (["-p", "gemm", "--shape", "M=4096,N=-4,K=1"], "must not be negative"),
    (["-p", "gemm", "--shape", "M=1.5,N=4,K=1"], "not an integer"),
    (["-p", "gemm", "--shape", "M4096"], "malformed --shape"),
    (["-p", "gemm", "--shape", "M=1,N=1,K=1", "--dtype", "int4"], "unknown dtype 'int4'"),
    (["-p", "segreduce", "--shape", "rows=131072,cols=131072"], "more than the"),
    (["-p", "gemm", "-p", "segreduce", "--shape", "M=1,N=1,K=1"], "exactly one -p"),
    (["-p", "elementwise", "--shape", "n=2000000000000"], "too large"),
    (["-p", "gemm", "--case", "8x8x8-float16"], "no built-in case named 8x8x8-float16 (`ways list --cases` shows"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, msg):
    out = tmp_path / "never"
    r = ways("run", *args, "--out", str(out))
    assert r.returncode == 2
    assert r.stderr.startswith("ways: error: ") and msg in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert not out.exists()


def test_unwritable_output_dir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = ways("run", "-p", "gemm", "--out", str(blocker / "sub"))
    assert r.returncode == 2 and "not writable" in r.stderr


def test_report_of_a_missing_file(tmp_path):
    r = ways("report", str(tmp_path / "nope.json"))
    assert r.returncode == 2 and "no results file" in r.stderr


def test_list_shows_the_matrix():
    r = ways("list")
    assert r.returncode == 0
    for word in ("array_api[numpy]", "array_api[cupy]", "array_api[torch]", "segreduce", "elementwise", "gemm"):
        assert word in r.stdout


def test_list_cases_shows_the_names_case_takes():
    import problems
    r = ways("list", "--cases", "-p", "gemm")
    assert r.returncode == 0, r.stderr
    gemm = problems.get("gemm")
    assert all(c.name in r.stdout for c in gemm.all_cases()) and "scan" not in r.stdout
    assert "bench, without a GPU" in r.stdout and "bench, a GPU's" in r.stdout
    one = ways("run", "-p", "gemm", "-b", "array_api[numpy]", "--case", gemm.host_cases()[0].name, "--cases", "bench",
               "--no-compile", "--out", "/dev/null/x")        # a host case is a built-in one: only the --out fails
    assert one.returncode == 2 and "not writable" in one.stderr


def test_help_describes_run_and_every_option():
    r = ways("run", "--help")
    assert r.returncode == 0 and "Check every selected implementation" in r.stdout
    options = [line.split()[0] for line in r.stdout.split("options:")[1].splitlines() if line.strip().startswith("-")]
    described = r.stdout.split("options:")[1]
    assert "--cases {test,bench,all}" in described and "test cases (checked only)" in described
    assert len(options) >= 15


def test_report_says_what_it_wrote_and_does_not_print_the_report(tmp_path):
    r = ways("report", str(ROOT / "reports/h100/results.json"), "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("written: ") and "| implementation |" not in r.stdout and len(r.stdout) < 1000


def test_a_custom_case_starts_no_compile_time_process(tmp_path):
    """Compile figures come from each problem's own compile case: a run of one's own shape skips them."""
    doc = ran(tmp_path / "out", "-p", "gemm", "-b", "array_api[numpy]", "--shape", "M=64,N=64,K=64:fp32")
    assert [(x["status"], x["compile"]) for x in doc["records"] if x["variant"] == "numpy"] == [("ok", None)]
    assert not any("compile" in phase for phase in doc["run"]["phases"])


def test_a_skip_reason_is_never_cut(capsys):
    from harness.report.terminal import print_summary
    reason = "missing tilelang (pip install --no-deps --target /a/long/path/" + "x" * 150 + "/tilelang-site -r r.txt)"
    doc = {"run": {}, "records": [{"problem": "gemm", "case": "c", "kind": "test", "backend": "tilelang",
                                   "variant": "", "status": "unavailable", "reason": reason, "error": None,
                                   "max_rel_err": None, "build_s": None, "compile": None, "loc": None}]}
    print_summary(doc)
    assert f"skipped tilelang: {reason}\n" in capsys.readouterr().out


def test_env_says_what_is_missing():
    r = ways("env")
    assert r.returncode == 0 and "python" in r.stdout and "array_api[numpy]" in r.stdout


def test_run_custom_case_on_cpu_then_report(tmp_path):
    out = tmp_path / "out"
    r = ways("run", "-p", "gemm", "-b", "array_api[numpy]", "--shape", "M=300,N=200,K=100", "--dtype", "fp32",
             "--out", str(out), "--no-compile")
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "results.json").read_text())
    [rec] = [x for x in doc["records"] if x["variant"] == "numpy"]
    assert rec["case"] == "custom-M300-N200-K100-float32" and rec["kind"] == "bench" and rec["status"] == "ok"
    assert rec["timing"]["engine"] == "host-timer" and rec["timing"]["achieved"] > 0
    rep = ways("report", str(out / "results.json"))
    assert rep.returncode == 0 and "custom-M300-N200-K100-float32" in (out / "report.md").read_text()


def test_run_one_named_case(tmp_path):
    out = tmp_path / "out"
    r = ways("run", "-p", "gemm", "-b", "array_api[numpy]", "--case", "129x257x65-float32", "--out", str(out),
             "--no-compile")
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "results.json").read_text())
    assert {x["case"] for x in doc["records"]} == {"129x257x65-float32"}
    assert [x["status"] for x in doc["records"] if x["variant"] == "numpy"] == ["ok"]


@pytest.mark.parametrize("args,msg", [
    (["--timeout", "0"], "--timeout 0 must be a positive number of seconds"),
    (["--timeout", "nan"], "must be a positive number"),
    (["--compile-repeats", "0"], "--compile-repeats 0 must be at least 1"),
    (["--compile-jobs", "-1"], "--compile-jobs -1 must be 0 (automatic) or more"),
])
def test_bad_run_options(tmp_path, args, msg):
    r = ways("run", "-b", "array_api[numpy]", *args, "--out", str(tmp_path / "never"))
    assert r.returncode == 2 and msg in r.stderr and r.stderr.count("\n") == 1, r.stderr


def _numpy_run(out, *more):
    return ways("run", "-b", "array_api[numpy]", "-p", "elementwise", "--case", "1001-float32", "--no-compile",
                "--out", str(out), *more)


def test_a_second_run_into_the_same_out_keeps_the_first(tmp_path):
    out = tmp_path / "out"
    assert _numpy_run(out).returncode == 0
    first = json.loads((out / "results.json").read_text())["run"]["id"]
    r = _numpy_run(out)
    assert r.returncode == 0 and f"moved to {out / 'previous' / first}" in r.stdout
    kept = json.loads((out / "previous" / first / "results.json").read_text())
    assert kept["run"]["id"] == first and (out / "previous" / first / "logs").is_dir()
    assert json.loads((out / "results.json").read_text())["run"]["id"] != first
    assert not (out / ".ways-run.lock").exists()


def test_two_runs_at_once_into_one_out_are_refused(tmp_path):
    import fcntl
    out = tmp_path / "out"
    out.mkdir()
    with open(out / ".ways-run.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write("pid 4242")
        lock.flush()
        r = _numpy_run(out)
    assert r.returncode == 2 and "another `ways run` (pid 4242) is writing to" in r.stderr, r.stderr
    assert not (out / "results.jsonl").exists()


def _interrupted_while_broken_hangs(args: list[str], out) -> tuple[subprocess.Popen, str]:
    """`ways run ARGS` (with the deliberately hanging `broken` backend's segreduce), Ctrl-C once its
    worker is inside its endless call; the process and its stderr."""
    import signal
    import time
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", *args], cwd=ROOT, env={**os.environ},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = out / "logs" / "broken[numpy].segreduce.log"
    deadline = time.monotonic() + 120
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(3)                              # the broken worker is now inside its endless call
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    return proc, err


def test_an_interrupted_run_leaves_valid_results_and_no_worker(tmp_path, bad_backends):
    """Ctrl-C while a worker hangs: exit 130, results.json written (complete: false, what was
    measured in it), the hanging worker killed with its parent."""

    from harness.results import records
    out = tmp_path / "out"
    proc, err = _interrupted_while_broken_hangs(["-b", "array_api[numpy]", "-b", "broken", "-p", "segreduce",
                                                 "--cases", "test", "--no-compile", "--timeout", "120",
                                                 "--out", str(out)], out)
    assert proc.returncode == 130 and "interrupted" in err, err
    doc = json.loads((out / "results.json").read_text())
    records.validate(doc)
    assert doc["run"]["complete"] is False
    assert any(r["backend"] == "array_api" and r["status"] == "ok" for r in doc["records"])
    left = subprocess.run(["pgrep", "-f", "harness.run.worker run --backend broken"], capture_output=True, text=True)
    assert left.stdout.strip() == "", "a worker outlived the interrupted run"


def test_quick_runs_each_problems_quick_cases_and_marks_its_rows(tmp_path):
    from harness.run.plan import Options, plan
    from tests.conftest import HAS_GPU
    jobs = plan(Options(backends=["array_api[numpy]"], quick=True))
    bench = {"attention": "4x32x4096x128-full-bfloat16", "elementwise": "268435456-float32",      # a GPU's
             "gemm": "8192x8192x8192-bfloat16", "gemm_fp8": "8192x8192x8192-e4m3-blockwise",
             "scan": "268435456-float32", "segreduce": "8192x32768-float32"} \
        if HAS_GPU else {"attention": "1x8x1024x64-full-float16", "elementwise": "16777216-float32",  # the host's
                         "gemm": "2048x2048x2048-float32", "gemm_fp8": "1024x1024x1024-e4m3-blockwise",
                         "scan": "4194304-float32", "segreduce": "4096x4096-float32"}
    assert {(j.impl.problem, c.name) for j in jobs for c in j.cases} == {
        ("attention", "1x2x17x64-causal-bfloat16"), ("elementwise", "1001-float32"), ("gemm", "129x257x65-bfloat16"),
        ("gemm_fp8", "129x257x256-e4m3-blockwise"), ("scan", "4097-float32"), ("segreduce", "37x4097-float32"),
        *bench.items()}
    out = tmp_path / "out"
    r = ways("run", "-b", "array_api[numpy]", "-p", "segreduce", "--quick", "--cases", "test", "--out", str(out),
             "--html")
    assert r.returncode == 0, r.stderr
    assert (out / "index.html").is_file() and (out / "report.md").is_file() and "page: " in r.stdout   # one command
    doc = json.loads((out / "results.json").read_text())
    assert doc["run"]["quick"] is True
    assert [(x["case"], x["status"], x["quick"], x["compile"]) for x in doc["records"]] == \
        [("37x4097-float32", "ok", True, None)]        # quick: no compile processes
    rep = ways("report", str(out / "results.json"), "--html")
    assert rep.returncode == 0, rep.stderr
    assert "Rows marked quick come from a quick: `ways run --quick`" in (out / "report.md").read_text()
    assert "Rows marked quick come from" in (out / "index.html").read_text()
    from harness.report.page import _badge
    assert "class=quick" in _badge({**doc["records"][0], "kind": "bench"})      # a timed row's badge
    every = ways("run", "-b", "array_api[numpy]", "--quick", "--cases", "test", "--jobs", "2",
                 "--out", str(tmp_path / "all"))
    assert every.returncode == 0, every.stderr
    doc = json.loads((tmp_path / "all" / "results.json").read_text())
    assert sorted((x["problem"], x["status"]) for x in doc["records"]) == \
        [("attention", "not_applicable"), ("elementwise", "ok"), ("gemm", "not_applicable"),
         ("gemm_fp8", "not_applicable"), ("scan", "ok"), ("segreduce", "ok")]      # NumPy has no bfloat16
    logs = sorted(p.name for p in (tmp_path / "all" / "logs").glob("array_api*.log"))
    assert logs == ["array_api[numpy].attention+elementwise+gemm+gemm_fp8+scan+segreduce.log"]   # one worker for its problems
    bad = ways("run", "--quick", "--case", "37x4097-float32", "--out", str(tmp_path / "never"))
    assert bad.returncode == 2 and "--quick picks its own cases" in bad.stderr


def compile_records(tmp_path, *options: str) -> tuple[dict, dict]:
    """A run of NumPy's segreduce and elementwise test cases with compile-time processes (`options`
    say how): its compile figures by problem (both there), and its results document."""
    out = tmp_path / "out"
    r = ways("run", "-b", "array_api[numpy]", "-p", "segreduce", "-p", "elementwise", "--cases", "test",
             *options, "--out", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "results.json").read_text())
    compiled = {x["problem"]: x["compile"] for x in doc["records"]}
    assert set(compiled) == {"segreduce", "elementwise"}
    return compiled, doc


def test_compile_time_processes_of_several_implementations_at_once(tmp_path):
    compiled, _ = compile_records(tmp_path, "--compile-repeats", "1", "--compile-jobs", "2")
    for comp in compiled.values():
        assert comp["concurrent"] == 2 and comp["cold_s"] > 0 and comp["warm_s"] > 0 and comp["processes"] == 2
        assert comp["import_s"] > 0                     # importing the tool in a fresh process


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_interrupt_during_compile_processes_kills_them(tmp_path, bad_backends, jobs):
    """Ctrl-C while compile-time processes run (several at once; with --jobs 2 beside the workers):
    exit 130 at once, none left behind (they hang in their first call until --timeout, 30 s, without
    the kill), the run's phase profile kept."""
    import signal
    import time
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "-b", "broken", "-p", "segreduce",
                             "--case", "1x1-float32", "--timeout", "30", "--compile-repeats", "2",
                             "--compile-jobs", "2", "--jobs", jobs, "--out", str(out)],
                            cwd=ROOT, env={**os.environ}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = out / "logs" / "broken[numpy].segreduce.compile.log"
    deadline = time.monotonic() + 120
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(4)                              # a compile process is now inside its endless first call
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err, err
    assert time.monotonic() - sent < 10, "the run waited for its compile processes"
    left = subprocess.run(["pgrep", "-f", "harness.run.worker compile --backend broken"], capture_output=True,
                          text=True)
    assert left.stdout.strip() == "", "a compile process outlived the interrupted run"
    run = json.loads((out / "results.json").read_text())["run"]
    assert not run["complete"] and sum(run["phases"].values()) > 4            # where its time went, kept


def test_case_data_kept_between_runs_in_WAYS_CASE_CACHE(tmp_path):
    cache = tmp_path / "cases"
    env = {**os.environ, "WAYS_CASE_CACHE": str(cache), "COLUMNS": "200"}
    args = [sys.executable, "-m", "harness", "run", "-b", "array_api[numpy]", "-p", "segreduce",
            "--case", "37x4097-float32", "--no-compile"]
    first = subprocess.run([*args, "--out", str(tmp_path / "a")], cwd=ROOT, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    files = sorted(cache.glob("segreduce/37x4097-float32.seed*/buffer*"))
    assert files, "no case data kept"
    stamps = [f.stat().st_mtime_ns for f in files]
    second = subprocess.run([*args, "--out", str(tmp_path / "b")], cwd=ROOT, env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    assert [f.stat().st_mtime_ns for f in files] == stamps      # read, not made again
    a, b = (json.loads((tmp_path / d / "results.json").read_text()) for d in "ab")
    assert [r["max_rel_err"] for r in a["records"]] == [r["max_rel_err"] for r in b["records"]]


def test_quick_leaves_out_implementations_slow_to_build(tmp_path):
    """The demo's selection: an implementation whose first build takes minutes (nvmath's cuBLASDx
    code generation) is a row that says so, not minutes of the demo."""
    out = tmp_path / "out"
    r = ways("run", "--quick", "-b", "nvmath_device", "-p", "segreduce", "--out", str(out))
    assert r.returncode == 0, r.stderr
    recs = json.loads((out / "results.json").read_text())["records"]
    assert recs and all(x["status"] == "skipped" and "--quick leaves out" in x["reason"] and x["quick"] for x in recs)


def test_an_interrupted_run_goes_on_with_resume(tmp_path, bad_backends):
    """Ctrl-C, then `--resume` into the same folder: the rows measured before are kept (not run
    again), the rest and the failed ones are run, the test outputs of the first part are kept for the
    cross-check, and the document is complete with both parts' times added up."""

    from harness.results import records
    out = tmp_path / "out"
    sel = ["-b", "array_api[numpy]", "-b", "broken", "-p", "segreduce", "--cases", "test", "--no-compile",
           "--out", str(out)]
    _interrupted_while_broken_hangs([*sel, "--timeout", "120"], out)
    first = json.loads((out / "results.json").read_text())
    kept = {records.record_key(r): r for r in first["records"] if r["status"] not in ("failed", "skipped")}
    assert not first["run"]["complete"] and any(k[0] == "array_api" for k in kept)
    assert (out / ".crosscheck-outputs" / "segreduce").is_dir()

    other = ways("run", *sel, "--cases", "all", "--resume")
    assert other.returncode == 2 and "the same selection" in other.stderr, other.stderr
    r = ways("run", *sel, "--timeout", "5", "--resume")      # how it runs (--timeout, --jobs) may change
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "results.json").read_text())
    records.validate(doc)
    assert doc["run"]["complete"] and len(doc["run"]["resumed"]) == 1
    assert doc["run"]["duration_s"] > first["run"]["duration_s"]
    lines = records.read_jsonl(out / "results.jsonl")
    keys = [records.record_key(x["record"]) for x in lines if x["type"] == "record"]
    assert all(keys.count(k) == 1 for k in kept)                     # kept rows were not run again
    assert {records.record_key(r): r for r in doc["records"]}.keys() >= kept.keys()
    assert all(r["status"] != "failed" or r["backend"] == "broken" for r in doc["records"])
    assert not (out / ".crosscheck-outputs").exists()                # taken back for the cross-check
    again = ways("run", *sel, "--resume")
    assert again.returncode == 2 and "is complete" in again.stderr
    nothing = ways("run", "-p", "segreduce", "--resume", "--out", str(tmp_path / "empty"))
    assert nothing.returncode == 2 and "no run to go on with" in nothing.stderr


def test_resume_redoes_failed_and_skipped_rows_and_errored_compiles(tmp_path):
    """A row kept by --resume is a measurement: a failed one and those skipped after it timed out are
    run again, and so is a compile-time process that died; one with nothing to time is not."""
    from harness.run import resume
    rows = [{"backend": "b", "variant": "", "problem": "scan", "case": f"c{i}", "status": status, "compile": None}
            for i, status in enumerate(("ok", "wrong", "failed", "skipped", "not_applicable", "unavailable"))]
    lines = [{"type": "run", "environment": {}, "run": {}},
             *({"type": "record", "record": r} for r in rows),
             {"type": "compile", "backend": "b", "variant": "", "problem": "scan", "compile": {"error": "SIGKILL"}},
             {"type": "compile", "backend": "b", "variant": "x", "problem": "scan",
              "compile": {"case": None, "not_applicable": "unavailable: no CPU compiler"}},
             {"type": "compile", "backend": "b", "variant": "y", "problem": "scan", "compile": {"cold_s": 1.0}}]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    done = resume.measured(tmp_path)
    assert {k[3] for k in done.rows} == {"c0", "c1", "c4", "c5"}
    assert done.compiles == {("b", "x", "scan"), ("b", "y", "scan")}


@pytest.mark.parametrize("command", [["env"], ["list"]])
def test_a_cli_piped_into_head_exits_quietly(command):
    """`ways env | head -1`: the reader closes the pipe early; no BrokenPipeError traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "harness", *command], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "COLUMNS": "200"})
    proc.stdout.close()             # as head does after its line; here before any, so every write meets it
    _, err = proc.communicate(timeout=120)
    assert err == b"", err.decode()
    assert proc.returncode in (0, 1)        # rich's console ends a broken pipe with exit 1 itself


def test_a_compile_process_of_an_unavailable_tool_has_nothing_to_time():
    """A compile-time process whose tool is unavailable here (no GPU in CI) says so, and its record
    holds no error: --resume does not start it again, and the report shows no compile failure."""
    r = subprocess.run([sys.executable, "-m", "harness.run.worker", "compile", "--backend", "cuda_coop",
                        "--problem", "segreduce"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    line = json.loads(r.stdout)
    assert line["not_applicable"].startswith("unavailable: "), line


def test_compile_figures_are_written_as_each_ends(tmp_path, monkeypatch):
    """A slow compile-time process (nvmath's take minutes) does not hold back the records of those
    started after it: each is written when it ends, so a run stopped meanwhile keeps them."""
    import threading

    from harness.run.plan import Job, Options
    from harness.run.registry import Impl
    from harness.run.runner import Run

    quick_written = threading.Event()

    def compile_times(self, job, scratch, aot=False, lock=None, at_once=False):
        if job.impl.variant == "slow":
            assert quick_written.wait(timeout=30), "the slow one's record was awaited first"
        return {"case": "c", "cold_s": 1.0}

    class Writer:
        lines: list = []

        def write(self, obj):
            self.lines.append(obj)
            if obj["compile"]["cold_s"] and obj["variant"] == "quick":
                quick_written.set()

    monkeypatch.setattr(Run, "_compile_times", compile_times)
    run = Run(Options(out=str(tmp_path), compile_jobs=2, compile_repeats=1), cores=2)
    writer = Writer()
    run._all_compile_times([(Job(Impl("array_api", v, "scan"), []), False) for v in ("slow", "quick")],
                           writer, tmp_path)
    assert [x["variant"] for x in writer.lines] == ["quick", "slow"]
