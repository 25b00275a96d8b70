"""What the tuning sweeps share: a candidate built by the lab's Session on a bench case, checked
against the float64 reference from poisoned outputs and timed cold (L2 flushed, CUDA events: the
lab's EventEngine); the reference measured the same way: cuBLAS (torch.matmul) for GEMM, a 1 GiB
device copy for the memory-bound problems; and the table a sweep prints per case.
"""
from __future__ import annotations

import contextlib
import time

import problems
from harness.measure.stopping import Criterion
from harness.measure.timing import EventEngine, warm_up
from problems.base import poison

CRIT = Criterion(min_samples=10, min_time_s=0.2, timeout_s=4.0)


def reference_ms(problem: str, case, session, sessions: dict) -> tuple[str, float]:
    """The reference's cold time, after 2 s of it as the GPU's warm-up. `sessions` keeps the torch
    sessions a GEMM or attention reference needs; the copy runs on `session`'s device."""
    from harness.run.session import Session
    if problem == "gemm":
        if "torch" not in sessions:
            sessions["torch"] = Session("array_api", "torch")
        s = sessions["torch"]
        label, run = "cuBLAS (torch.matmul)", s.prepare(problems.get(problem), case, 0).run
    elif problem == "attention":        # cuDNN's: the fastest of PyTorch's SDPA kernels on every bench case
        if "sdpa" not in sessions:
            sessions["sdpa"] = Session("torch_sdpa", "cudnn")
        s = sessions["sdpa"]
        label, run = "PyTorch SDPA (cuDNN)", s.prepare(problems.get(problem), case, 0).run
    else:
        s = session
        src, dst = (s.device.device.allocate(1 << 30, stream=s.device.stream) for _ in range(2))
        src.fill(1, stream=s.device.stream)
        label, run = "1 GiB copy", lambda: src.copy_to(dst, stream=s.device.stream)
    with s.backend.stream_context(s.stream):
        warm_up(run, s.device.sync, 2.0)
        return label, EventEngine(s.device, CRIT).cold(run)["median_ms"]


def build_and_check(session, problem: str, case, arrays, options: dict, gpu=contextlib.nullcontext, build=None):
    """A candidate's run() built on `arrays` (Session.arrays: host inputs, inputs, outputs,
    reference; outputs poisoned first) by the session's implementation or by `build` (same
    signature), checked once (inside `gpu()`: a lock where other processes time meanwhile); and its
    build time in seconds."""
    s, prob = session, problems.get(problem)
    _, inputs, outputs, ref = arrays
    for name, (shape, dt) in prob.output_spec(case).items():
        s.backend.overwrite(outputs[name], poison(shape, dt), dt)
    t0 = time.perf_counter()
    with s.backend.stream_context(s.stream):
        run = (build or s.backend.module(problem).build)(case, inputs, outputs, s.stream,
                                      **({"variant": s.variant} if s.variant else {}), **options)
        s.device.sync()
    build_s = time.perf_counter() - t0
    with gpu():
        got, _ = s.call(run, outputs)
    prob.check(s.fetch(got), ref, case)
    return run, build_s


def timed(session, problem: str, case, run, ref_ms: float | None, warm_s: float = 0.0) -> dict:
    """Cold time of `run` and its rate, as % of the reference if its time is given."""
    s = session
    with s.backend.stream_context(s.stream):
        if warm_s:
            warm_up(run, s.device.sync, warm_s)
        t = EventEngine(s.device, CRIT).cold(run)
    nbytes, flops = problems.get(problem).work(case)
    return dict(status="ok", cold_ms=t["median_ms"], noise=t["noise"], sm_clock_mhz=t["sm_clock_mhz"],
                tflops=flops / t["median_ms"] / 1e9, gb_per_s=nbytes / t["median_ms"] / 1e6,
                pct_of_reference=pct_of_reference(problem, case, t["median_ms"], ref_ms) if ref_ms else None)


def pct_of_reference(problem: str, case, ms: float, ref_ms: float) -> float:
    """Compute-bound (GEMM, attention): time against the vendor's; memory-bound: bandwidth against the
    copy's (read + written)."""
    if problems.get(problem).roofline == "compute":
        return 100 * ref_ms / ms
    return 100 * (problems.get(problem).work(case)[0] / ms) / ((2 << 30) / ref_ms)


def failed(exc: BaseException) -> dict:
    return dict(status="failed", error=f"{type(exc).__name__}: {str(exc)[:300]}")


def print_case(rows, key):
    """One line per candidate, fastest first; `key(row)` names the candidate."""
    for r in sorted(rows, key=lambda r: r.get("cold_ms") or 1e9):
        if r["status"] != "ok":
            print(f"  {key(r)}: {r['error'][:160]}")
        else:
            built = f"  build {r['build_s']:.0f} s" if "build_s" in r else ""
            print(f"  {r['cold_ms']:9.4f} ms {r['tflops']:7.1f} TFLOP/s {r['gb_per_s']:7.0f} GB/s "
                  f"{r['pct_of_reference']:6.1f}%  {key(r)}{built}", flush=True)
