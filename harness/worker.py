"""One backend variant's work, in a process of its own: check every case, then (bench cases)
time it. Records go to the parent as JSON lines on a pipe; a crash here costs one item, not the run.

    python -m harness.worker run --backend B --variant V --items ITEMS.json --fd N --scratch DIR
    python -m harness.worker compile --backend B --variant V --problem P   (one cold/warm build)
    python -m harness.worker export --backend B --variant V --problem P    (compile-only, no GPU)
    python -m harness.worker peaks                                          (copy bandwidth, peaks)
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import pickle
import re
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import backends
import problems
from backends.base import Unavailable
from harness import nvbench_engine, results
from harness.device import open_device
from harness import timing as timing_mod
from harness.timing import EventEngine, host_call_costs, host_engine
from problems.base import Case, CheckError, decode, poison

N_SEEDS = 3


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


def why_not(backend, variant: str, module, problem: str, case: Case) -> str | None:
    """None, or why the implementation cannot take the case (the backend's reason, else its file's)."""
    reason = backend.supports(problem, case, variant)
    supports = getattr(module, "supports", None)
    return reason or (supports(case) if supports else None)


class Session:
    """A backend variant loaded in this process, with its device and stream."""

    def __init__(self, backend_name: str, variant: str):
        self.backend = backends.get(backend_name)
        self.variant = variant
        self.backend.load(variant)       # imports the tool; raises Unavailable with the reason
        self.device = open_device(self.backend.device(variant))
        self.stream = self.backend.stream(self.device.handle, variant)
        self.modules: dict[str, object] = {}

    def module(self, problem: str):
        if problem not in self.modules:
            self.modules[problem] = backends.implementation(self.backend.name, problem)
        return self.modules[problem]

    def why_not(self, problem: str, case: Case) -> str | None:
        return why_not(self.backend, self.variant, self.module(problem), problem, case)

    def upload(self, host: dict, dtype: str) -> dict:
        return {k: self.backend.to_device(v, dtype, self.variant) if isinstance(v, np.ndarray) else v
                for k, v in host.items()}

    def prepare(self, problem, case: Case, seed: int, cache: Path | None = None) -> Built:
        """Fresh inputs, the reference, poisoned outputs, and the implementation built on them."""
        host_inputs, ref = case_data(problem, case, seed, cache)
        inputs = self.upload(host_inputs, case.dtype)
        outputs = {name: self.backend.to_device(poison(shape, dt), dt, self.variant)
                   for name, (shape, dt) in problem.output_spec(case).items()}
        self.device.sync()
        with self.backend.stream_context(self.stream, self.variant):
            t0 = time.perf_counter()
            build = self.module(problem.name).build
            # a backend with variants tells its implementation which one through `variant`
            extra = {"variant": self.variant} if "variant" in inspect.signature(build).parameters else {}
            run = build(case, inputs, outputs, self.stream, **extra)
            self.device.sync()
            build_s = time.perf_counter() - t0
        return Built(run, host_inputs, inputs, outputs, ref, build_s)

    def call(self, run, outputs: dict) -> tuple[dict, float]:
        """One call, the whole device synchronized before and after; the outputs it wrote (or
        returned) and its wall time."""
        self.device.sync()
        with self.backend.stream_context(self.stream, self.variant):
            t0 = time.perf_counter()
            returned = run()
            self.device.sync()
            elapsed = time.perf_counter() - t0
        return (returned if returned is not None else outputs), elapsed

    def negate_inputs(self, problem, case: Case, b: Built) -> dict:
        """Write the negated inputs into the arrays `b.run` was built on; their reference."""
        host, ref = problem.negated(case, b.host_inputs, b.ref)
        self.device.sync()
        for name in problem.linear_inputs:
            self.backend.overwrite(b.inputs[name], host[name], case.dtype, self.variant)
        self.device.sync()
        b.host_inputs, b.ref = host, ref
        return ref

    def changed_inputs(self, b: Built) -> str | None:
        """None, or which input arrays a call modified (an implementation must leave them be)."""
        changed = []
        for name, dev in b.inputs.items():
            if isinstance(b.host_inputs[name], np.ndarray):
                now = self.backend.to_host(dev, self.variant)
                if not np.array_equal(now, b.host_inputs[name]):
                    changed.append(f"{name!r} ({int(np.sum(now != b.host_inputs[name]))} elements)")
        return f"run() modified its input {', '.join(changed)}" if changed else None

    def fetch(self, arrays: dict) -> dict:
        return {k: self.backend.to_host(v, self.variant) for k, v in arrays.items()}


@dataclass
class Built:
    """An implementation built on one set of inputs: its run(), the inputs (host and device),
    the poisoned outputs, the reference and the build time."""
    run: object
    host_inputs: dict
    inputs: dict
    outputs: dict
    ref: dict
    build_s: float


def case_data(problem, case: Case, seed: int, cache: Path | None):
    """Host inputs and reference for (case, seed): made once a run and shared by its workers,
    since a 1 GiB input and its float64 reference take longer to make than to time."""
    if cache is None:
        inputs = problem.make_inputs(case, seed)
        return inputs, problem.reference(case, inputs)
    path = cache / "case-data" / problem.name / f"{case.name}.seed{seed}.pkl"
    if path.is_file():
        with open(path, "rb") as f:
            return pickle.load(f)
    inputs = problem.make_inputs(case, seed)
    data = inputs, problem.reference(case, inputs)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        pickle.dump(data, f, protocol=5)
    os.replace(tmp, path)
    return data


def checked(s: Session, problem, case: Case, rec: dict, got: dict, ref: dict, when: str) -> dict | None:
    """Compare outputs with the reference: on a mismatch mark `rec` wrong (saying when) and return
    None; else keep the worst errors, mark it ok and return the outputs on the host."""
    host = s.fetch(got)
    try:
        res = problem.check(host, ref, case)
    except CheckError as bad:
        rec.update(status="wrong", error=f"{when}: {bad}",
                   max_abs_err=results.finite(bad.result.max_abs_err),
                   max_rel_err=results.finite(bad.result.max_rel_err))
        return None
    rec.update(status="ok", max_abs_err=max(rec["max_abs_err"] or 0.0, res.max_abs_err),
               max_rel_err=max(rec["max_rel_err"] or 0.0, res.max_rel_err))
    return host


def follows_new_inputs(s: Session, problem, case: Case, rec: dict, b: Built, when: str) -> bool:
    """Negate the inputs in place under the built implementation and check one more call: a
    result computed once and replayed (or a stale cache) comes out wrong here."""
    ref = s.negate_inputs(problem, case, b)
    got, _ = s.call(b.run, b.outputs)
    return checked(s, problem, case, rec, got, ref, f"{when}, on new values written into the same input arrays") \
        is not None


def check_case(s: Session, problem, case: Case, rec: dict, scratch: Path | None) -> None:
    """Every seed: fresh inputs, poisoned outputs, build, one call, compare; on the first seed also
    that the call left its inputs alone and that a second call follows new input values."""
    seeds = [case.seed + i for i in range(N_SEEDS if case.kind == "test" else 1)]
    for i, seed in enumerate(seeds):
        b = s.prepare(problem, case, seed, scratch)
        got, first_call = s.call(b.run, b.outputs)
        if i == 0:
            rec["build_s"], rec["first_call_s"] = b.build_s, first_call
        rec["seeds"].append(seed)
        host = checked(s, problem, case, rec, got, b.ref, f"seed {seed}")
        if host is None:
            return
        if i == 0:
            if scratch is not None:
                save_for_crosscheck(scratch, problem, case, s, host)
            changed = s.changed_inputs(b)
            if changed:
                rec.update(status="wrong", error=f"seed {seed}: {changed}")
                return
            if not follows_new_inputs(s, problem, case, rec, b, f"seed {seed}"):
                return


def save_for_crosscheck(scratch: Path, problem, case: Case, s: Session, host: dict) -> None:
    folder = scratch / "outputs" / problem.name / case.name
    folder.mkdir(parents=True, exist_ok=True)
    label = s.backend.label(s.variant)
    for name, (_, dt) in problem.output_spec(case).items():
        if name in host and np.asarray(host[name]).dtype == np.dtype(problems.base.DTYPES[dt].storage):
            np.save(folder / f"{label}.{name}.npy", decode(host[name], dt, np.float32))


class Worker:
    """Checks test cases, then checks and times bench cases, reporting each on the event pipe."""

    def __init__(self, args, send):
        self.args, self.send = args, send
        self.scratch = Path(args.scratch)
        self.s: Session | None = None
        self.broken = False        # after a failure the CUDA context may be unusable

    def record(self, problem, case) -> dict:
        return results.new_record(problem.name, case, self.args.backend, self.args.variant)

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
            b = s.prepare(problem, case, case.seed, self.scratch)
            got, first_call = s.call(b.run, b.outputs)
            rec.update(build_s=b.build_s, first_call_s=first_call, seeds=[case.seed])
            if checked(s, problem, case, rec, got, b.ref, "before timing") is None:
                return rec
            last = {}

            def timed():
                last["out"] = b.run()

            with s.backend.stream_context(s.stream, s.variant):
                timing = timing_mod.on_gpu(s.device, timed, measure) if s.device.kind == "cuda" else measure(timed)
                if "host_ms" not in timing:
                    timing.update(host_call_costs(timed, s.device.sync))
            s.device.sync()
            rec["timing"] = timing
            if checked(s, problem, case, rec, last["out"] if last.get("out") is not None else b.outputs,
                       b.ref, "after timing") is not None:
                follows_new_inputs(s, problem, case, rec, b, "after timing")
            return rec
        except Exception:
            rec.update(status="failed", error=failure_text())
            self.broken = True
            return rec
        finally:
            s.backend.release(s.variant)

    def run_bench(self, bench) -> None:
        if self.s.device.kind == "cpu":
            for i, problem, case in bench:
                self.send({"event": "done", "item": i, "record": self.bench_item(i, problem, case, host_engine)})
                if self.broken:
                    return
            return
        why_not_nvbench = nvbench_engine.available()
        if why_not_nvbench is None:
            return self.run_nvbench(bench)
        engine = EventEngine(self.s.device)
        for i, problem, case in bench:
            rec = self.bench_item(i, problem, case, engine.measure)
            if rec.get("timing"):
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
                    state.exec(lambda launch: timed())
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


def run_items(args) -> int:
    out = os.fdopen(args.fd, "w", buffering=1)

    def send(obj):
        out.write(json.dumps(results.finite(obj), allow_nan=False) + "\n")

    items = [(problems.get(it["problem"]), Case(**it["case"])) for it in json.loads(Path(args.items).read_text())]
    w = Worker(args, send)
    try:
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
    for i, (problem, case) in enumerate(items):
        if case.kind == "test":
            w.test_item(i, problem, case)
            if w.broken:
                return 3      # the parent starts a fresh worker for what is left
    w.run_bench([(i, p, c) for i, (p, c) in enumerate(items) if c.kind != "test"])
    return 3 if w.broken else 0


def aot_backend(name: str, variant: str):
    """The backend, with the environment its tool needs to compile ahead of time set before the
    tool is first imported (a DSL that reads its target when imported)."""
    backend = backends.get(name)
    os.environ.update(backend.aot_environment(variant))
    return backend


def export_cases(backend, variant: str, problem, cases) -> list[dict]:
    """Compile each case ahead of time for the backend's target (no GPU needed): seconds and bytes."""
    module = backends.implementation(backend.name, problem.name)
    done = []
    for case in cases:
        reason = why_not(backend, variant, module, problem.name, case)
        if reason:
            done.append({"case": case.name, "not_applicable": reason})
            continue
        t0 = time.perf_counter()
        image = backend.export(problem.name, case, variant)
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
    result({"cases": export_cases(aot_backend(args.backend, args.variant), args.variant, problem, tests)})
    return 0


def compile_once(args) -> int:
    """Time build() and the first call in this (fresh) process, on the problem's compile case or
    else its first test case the implementation takes; print one JSON line. With --export, time
    the ahead-of-time compile of that case instead (no GPU: nothing runs)."""
    problem = problems.get(args.problem)
    tests = [c for c in problem.cases() if c.kind == "test"]
    candidates = sorted(tests, key=lambda c: c.name != problem.compile_case_name)
    if args.export:
        backend = aot_backend(args.backend, args.variant)
        module = backends.implementation(backend.name, problem.name)
        case = next((c for c in candidates if why_not(backend, args.variant, module, problem.name, c) is None), None)
        done = export_cases(backend, args.variant, problem, [case] if case else [])
        result({"case": case.name, "build_s": done[0]["build_s"], "first_call_s": None} if case
               else {"not_applicable": "no test case applies"})
        return 0
    s = Session(args.backend, args.variant)
    case = next((c for c in candidates if s.why_not(problem.name, c) is None), None)
    if case is None:
        result({"not_applicable": "no test case applies"})
        return 0
    b = s.prepare(problem, case, case.seed)
    _, first_call = s.call(b.run, b.outputs)
    # an implementation may name parts of its build time (e.g. Triton's autotuning) on its run()
    parts = getattr(b.run, "build_parts", {})
    result({"case": case.name, "build_s": b.build_s, "first_call_s": first_call, "parts": parts})
    return 0


def peaks(args) -> int:
    """Device attributes, theoretical peaks and the measured copy bandwidth, as one JSON line."""
    from harness import peaks as peaks_mod
    from harness.device import CudaDevice
    device = CudaDevice()
    props = device.properties()
    result({"device": props, "theoretical": peaks_mod.theoretical(props), **peaks_mod.measure(device)})
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="harness.worker")
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run")
    c = sub.add_parser("compile")
    e = sub.add_parser("export")
    sub.add_parser("peaks")
    for p in (r, c, e):
        p.add_argument("--backend", required=True)
        p.add_argument("--variant", default="")
    c.add_argument("--export", action="store_true", help="time the ahead-of-time compile (no GPU)")
    for p in (c, e):
        p.add_argument("--problem", required=True)
    r.add_argument("--items", required=True)
    r.add_argument("--fd", type=int, required=True)
    r.add_argument("--scratch", required=True)
    args = ap.parse_args(argv)
    if args.mode != "run":
        global RESULT
        RESULT = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)          # a tool's prints go to the log, never into the result line
    return {"run": run_items, "compile": compile_once, "export": export_all, "peaks": peaks}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
