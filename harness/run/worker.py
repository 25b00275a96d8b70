"""One backend variant's work, in a process of its own: check every case, then (bench cases)
time it. Records go to the parent as JSON lines on a pipe; a crash here costs one item, not the run.

    python -m harness.run.worker run --backend B --variant V --items ITEMS.json --fd N --scratch DIR
    python -m harness.run.worker compile --backend B --variant V --problem P   (one cold/warm build)
    python -m harness.run.worker export --backend B --variant V --problem P    (compile-only, no GPU)
    python -m harness.run.worker peaks                                          (copy bandwidth, peaks)
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path

import backends
import problems
from backends.base import Unavailable
from harness.measure import gate, nvbench_engine, second_timer
from harness.measure import timing as timing_mod
from harness.schedule.gpu_lock import LOCK, WAIT_PHASE
from harness.measure.phases import PHASES
from harness.results import records
from harness.run.adjacent import Adjacent
from harness.run.session import Session, check_case, checked, follows_new_inputs, searches_share_the_gpu
from problems.base import Case

CUDA_ERROR = re.compile(r"CUDA error: ([^\n]+)|(CUDA_ERROR_\w+|cudaError\w+)[:\s]*([^\n]*)")


def failure_text() -> str:
    """The exception being handled: what happened in one line ('CUDA error: ...' for a CUDA error,
    whichever library raised it), then its traceback."""
    exc = sys.exc_info()[1]
    found = CUDA_ERROR.search(str(exc))
    if found:
        line = f"CUDA error: {found.group(1) or found.group(3) or found.group(2)}"
    else:
        line = (f"{type(exc).__name__}: {exc}".splitlines() or [""])[0]
    return f"{line[:300]}\n{traceback.format_exc()}"


class Worker:
    """Checks and times bench cases, then checks test cases, reporting each on the event pipe."""

    def __init__(self, args, send):
        self.args, self.send = args, send
        self.scratch = Path(args.scratch)
        self.s: Session | None = None
        self.broken = False        # after a failure the CUDA context may be unusable
        self.engine = None         # the cold engine of the events paths (gated or not)
        self.adjacent: Adjacent | None = None

    def record(self, problem, case) -> dict:
        LOCK.label = f"{_impl(self.args)} {problem.name} {case.name}"     # whose GPU holds these are (lock_holds.py)
        return records.new_record(problem.name, case, self.args.backend, self.args.variant)

    def not_applicable(self, problem, case, rec) -> bool:
        reason = self.s.why_not(problem.name, case)
        if reason:
            rec.update(status="not_applicable", reason=reason)
        return bool(reason)

    def test_item(self, i, problem, case) -> None:
        self.send({"event": "start", "item": i})
        rec = self.record(problem, case)
        try:
            if not self.not_applicable(problem, case, rec):
                with LOCK.shared():      # GPU work beside other workers' (gpu_lock.py); CPU parts release it
                    check_case(self.s, problem, case, rec, self.scratch)
        except Exception:
            rec.update(status="failed", error=failure_text())
            self.broken = True
        self.send({"event": "done", "item": i, "record": rec})

    def bench_item(self, i, problem, case, measure) -> dict:
        """Check on a fresh seed, time with `measure(timed_call)`, re-check the timed output."""
        self.send({"event": "start", "item": i})
        rec = self.record(problem, case)
        s = self.s
        try:
            if self.not_applicable(problem, case, rec):
                return rec
            with LOCK.shared():
                return self._bench(problem, case, rec, measure)
        except Exception:
            rec.update(status="failed", error=failure_text())
            self.broken = True
            return rec
        finally:
            s.backend.release()

    def _bench(self, problem, case, rec, measure) -> dict:
        """bench_item's work, the GPU shared with other workers except while timing."""
        s = self.s
        b = s.prepare(problem, case, case.seed, self.scratch)
        got, first_call = s.call(b.run, b.outputs)
        rec.update(build_s=b.build_s, first_call_s=first_call, seeds=[case.seed])
        if checked(s, problem, case, rec, got, b.ref, "before timing") is None:
            return rec
        last = {}

        def timed():
            last["out"] = b.run()

        with_sustained, beside = timing_mod.sustained_wanted(), None
        if self.engine is not None:      # the reference's cold samples and windows before and after the row's
            self.adjacent = self.adjacent or Adjacent(s.device, self.scratch)
            measure = self.adjacent.around(problem, case, s.backend.label(), self.engine, measure)
            beside = self.adjacent.beside(problem, case, s.backend.label(), getattr(self.engine, "hold", None)) \
                if with_sustained else None
        # no other worker's kernels in the timed window
        with s.backend.stream_context(s.stream), s.gpu_work(alone=True):
            timing = timing_mod.on_gpu(s.device, timed, measure, problem.roofline,
                                       with_sustained=with_sustained, hold=getattr(self.engine, "hold", None),
                                       lead=getattr(self.engine, "lead", None), beside=beside) \
                if s.device.kind == "cuda" else measure(timed)
            if "host_ms" not in timing:
                timing.update(timing_mod.host_call_costs(timed, s.device.sync))
            if s.device.kind == "cuda" and second_timer.wanted(problem, case) and "second_timer" not in timing:
                timing["second_timer"] = second_timer.host_batches(
                    timed, s.device.sync, batches=second_timer.scaled_batches(problem.roofline),
                    clock=timing_mod.SmClock(s.device.device.pci_bus_id).read)
        s.device.sync()
        rec["timing"] = timing
        if checked(s, problem, case, rec, last["out"] if last.get("out") is not None else b.outputs,
                   b.ref, "after timing") is not None:
            follows_new_inputs(s, problem, case, rec, b, "after timing")
        return rec

    def run_bench(self, bench) -> None:
        if self.s.device.kind == "cpu":
            for i, problem, case in bench:
                rec = self.bench_item(i, problem, case, timing_mod.host_engine)
                self.send({"event": "done", "item": i, "record": rec})
                if self.broken:
                    return
            return
        why_not_nvbench = nvbench_engine.available()
        engine_name = gate.cold_engine()
        if engine_name == "nvbench" and why_not_nvbench is None:
            return self.run_nvbench(bench)
        gated = engine_name == "gated"
        engine = self.engine = gate.GatedEngine(self.s.device) if gated else timing_mod.EventEngine(self.s.device)
        for i, problem, case in bench:
            rec = self.bench_item(i, problem, case, engine.measure)
            if rec.get("timing") and not gated:
                rec["timing"]["engine_note"] = why_not_nvbench
            self.send({"event": "done", "item": i, "record": rec})
            if self.broken:
                return

    def run_nvbench(self, bench) -> None:
        measured: dict[str, tuple[int, dict]] = {}

        def benchmark(i, problem, case):
            def fn(state):
                if self.broken:
                    state.skip("an earlier case failed; left for a fresh worker")
                    return
                state.set_stream(self.s.device.stream)

                def measure(timed):
                    state.exec(lambda launch: timed(), batched=False)
                    return {}
                rec = self.bench_item(i, problem, case, measure)
                measured[f"item{i}"] = (i, rec)
                if rec.get("timing") is None:      # never measured; a row wrong after timing keeps its figures
                    state.skip(rec["status"])
            return fn

        figures = nvbench_engine.run([(f"item{i}", benchmark(i, p, c)) for i, p, c in bench],
                                     self.scratch / f"nvbench-{os.getpid()}.json")
        device = figures.pop("__device__", {})
        if device:
            self.send({"event": "device", "properties": {"nvbench": device}})
        for name, (i, rec) in measured.items():
            if rec.get("timing") is not None:
                if "engine" in figures.get(name, {}):
                    rec["timing"].update(figures[name])
                else:                      # checked, but nvbench kept no figures for it
                    rec["timing"] = None
                    why = f"nvbench: {figures.get(name, {}).get('skipped', 'no figures written')}"
                    rec["error"] = f"{rec['error']}\n{why}" if rec["error"] else why
            self.send({"event": "done", "item": i, "record": rec})


def _impl(args) -> str:
    return backends.label(args.backend, args.variant)


def run_items(args) -> int:
    out = os.fdopen(args.fd, "w", buffering=1)
    try:
        return _run_items(args, out)
    finally:
        LOCK.on_wait = lambda waiting: None      # the hook holds the pipe: the parent must see it close
        out.close()


def _run_items(args, out) -> int:

    def send(obj):
        out.write(json.dumps(records.finite(obj), allow_nan=False) + "\n")

    items = [(problems.get(it["problem"]), Case(**it["case"])) for it in json.loads(Path(args.items).read_text())]
    # the supervisor's clock for a case stops while this worker waits for another's hold of the GPU
    LOCK.on_wait = lambda waiting: send({"event": "gpu_wait" if waiting else "gpu_got"})
    w = Worker(args, send)
    LOCK.label = f"{_impl(args)} {items[0][0].name if items else ''}"
    try:
        with PHASES("worker start-up (imports, device)"):
            w.s = Session(args.backend, args.variant)
    except Exception as exc:
        unavailable = isinstance(exc, (ImportError, Unavailable))
        for i, (problem, case) in enumerate(items):
            rec = w.record(problem, case)
            if unavailable:
                rec.update(status="unavailable", reason=f"{type(exc).__name__}: {exc}")
            else:
                rec.update(status="failed", error=failure_text())
            send({"event": "done", "item": i, "record": rec})
        return 0
    send({"event": "device", "properties": w.s.device.properties()})
    try:
        # bench cases first: with --jobs the GPU's timing is the run's bottleneck (one timer at a time),
        # so timers are fed from the first seconds, and the checks that need no timing fill the end
        bench = [(i, p, c) for i, (p, c) in enumerate(items) if c.kind != "test"]
        if bench:          # none: a worker of test cases only (nvbench refuses to run no benchmark)
            w.run_bench(bench)
        if w.broken:
            return 3      # the parent starts a fresh worker for what is left
        for i, (problem, case) in enumerate(items):
            if case.kind == "test":
                w.test_item(i, problem, case)
                if w.broken:
                    return 3
        return 0
    finally:
        send({"event": "phases", "phases": PHASES.as_dict()})


def aot_backend(name: str, variant: str):
    """The backend, with the environment its tool needs to compile ahead of time set before the
    tool is first imported (a DSL that reads its target when imported)."""
    backend = backends.get(name, variant)
    os.environ.update(backend.aot_environment())
    return backend


def export_cases(backend, problem, cases) -> list[dict]:
    """Compile each case ahead of time for the backend's target (no GPU needed): seconds and bytes."""
    done = []
    for case in cases:
        reason = backend.why_not(problem.name, case)
        if reason:
            done.append({"case": case.name, "not_applicable": reason})
            continue
        t0 = time.perf_counter()
        image = backend.export(problem.name, case)
        done.append({"case": case.name, "build_s": time.perf_counter() - t0, "bytes": len(image)})
    return done


def result(obj: dict) -> None:
    """The one JSON line of compile/export/peaks, on the stdout the worker started with (whatever
    a tool prints goes to stderr, see main)."""
    RESULT.write(json.dumps(obj) + "\n")
    RESULT.flush()


RESULT = sys.stdout


def export_all(args) -> int:
    """Compile-only: every test case of one problem, ahead of time; print one JSON line."""
    problem = problems.get(args.problem)
    tests = [c for c in problem.cases() if c.kind == "test"]
    result({"cases": export_cases(aot_backend(args.backend, args.variant), problem, tests)})
    return 0


# beside --jobs workers a worker gets a core before a compile process, except while that one holds the GPU
COMPILE_NICENESS = 5


def compile_once(args) -> int:
    """Time build() and the first call in this (fresh) process, on the problem's compile case or
    else its first test case the implementation takes (or on --case); print one JSON line. With --export, time
    the ahead-of-time compile of that case instead (no GPU: nothing runs)."""
    LOCK.nice_outside_holds(COMPILE_NICENESS)
    LOCK.label = f"{_impl(args)} {args.problem} (compile-time process)"
    searches_share_the_gpu()
    problem = problems.get(args.problem)
    tests = [c for c in problem.cases() if c.kind == "test"]
    candidates = sorted(tests, key=lambda c: c.name != problem.compile_case_name)
    if args.case:
        candidates = [problem.case(args.case)]
    if args.export:
        backend = aot_backend(args.backend, args.variant)
        case = next((c for c in candidates if backend.why_not(problem.name, c) is None), None)
        done = export_cases(backend, problem, [case] if case else [])
        result({"case": case.name, "build_s": done[0]["build_s"], "first_call_s": None} if case
               else {"not_applicable": "no test case applies"})
        return 0
    t0 = time.perf_counter()
    try:
        s = Session(args.backend, args.variant)      # imports the tool, opens the device
    except (ImportError, Unavailable) as exc:        # nothing to time here (its rows say unavailable)
        result({"not_applicable": f"unavailable: {type(exc).__name__}: {exc}"})
        return 0
    import_s = time.perf_counter() - t0 - PHASES.seconds.get(WAIT_PHASE, 0.0)     # beside --jobs workers: their timing
    case = next((c for c in candidates if s.why_not(problem.name, c) is None), None)
    if case is None:
        result({"not_applicable": "no test case applies"})
        return 0
    b = s.prepare(problem, case, case.seed)
    with LOCK.shared():
        _, first_call = s.call(b.run, b.outputs)
    parts = b.parts
    result({"case": case.name, "build_s": b.build_s, "build_cpu_s": b.build_cpu_s, "first_call_s": first_call,
            "parts": parts, "import_s": import_s})
    return 0


def peaks(args) -> int:
    """Device attributes, theoretical peaks and the measured copy bandwidth, as one JSON line."""
    from harness.measure import peaks as peaks_mod
    from harness.measure.device import CudaDevice
    device = CudaDevice()
    props = device.properties()
    result({"device": props, "theoretical": peaks_mod.theoretical(props), **peaks_mod.measure(device)})
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="harness.run.worker")
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run")
    c = sub.add_parser("compile")
    e = sub.add_parser("export")
    sub.add_parser("peaks")
    for p in (r, c, e):
        p.add_argument("--backend", required=True)
        p.add_argument("--variant", default="")
    c.add_argument("--export", action="store_true", help="time the ahead-of-time compile (no GPU)")
    c.add_argument("--case", help="this case instead of the problem's compile case")
    for p in (c, e):
        p.add_argument("--problem", required=True)
    r.add_argument("--items", required=True)
    r.add_argument("--fd", type=int, required=True)
    r.add_argument("--scratch", required=True)
    args = ap.parse_args(argv)
    LOCK.keep_timing_cores_free()          # before a tool starts threads of its own
    if args.mode != "run":
        global RESULT
        RESULT = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)          # a tool's prints go to the log, never into the result line
    return {"run": run_items, "compile": compile_once, "export": export_all, "peaks": peaks}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
