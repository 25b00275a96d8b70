"""pytest-benchmark view of the lab: `pytest --benchmark-only` times problem x backend x bench case,
grouped by problem and case, one param per backend. The timed callable synchronizes, so its host
numbers are real; device-time statistics (CUDA events through cuda.core, L2 flushed; nvbench runs
only once per process so it cannot serve a test each), % of peak, compile times and LOC go into
extra_info. Without a GPU every test skips with the reason."""
from __future__ import annotations

import functools
from pathlib import Path

import pytest

import backends
import problems
from harness.measure import loc, roofline
from harness.run import registry, supervise
from tests.conftest import HAS_GPU


def _params():
    out = []
    for impl in registry.implementations():
        for case in problems.get(impl.problem).cases():
            if case.kind == "bench":
                out.append(pytest.param(impl, case, id=f"{impl.problem}-{case.name}-{impl.label}"))
    return out


@functools.cache
def _session(backend: str, variant: str):
    from harness.run.session import Session
    return Session(backend, variant)


@functools.lru_cache(maxsize=1)
def _copy_references() -> dict:
    """The measured copy in both timing modes, as roofline reads it from a run's references."""
    from harness.measure import peaks
    from harness.measure.device import CudaDevice
    found = peaks.measure(CudaDevice(), use_nvbench=False)
    return {k: found[k] for k in ("copy_bytes_per_s", "copy_bytes_per_s_sustained")}


@functools.cache
def _cold_compile_s(backend: str, variant: str, problem: str) -> float | None:
    import tempfile
    with tempfile.TemporaryDirectory() as cache:
        env = supervise.worker_env(backends.get(backend).cache_env(cache))
        log = Path(cache) / "compile.log"
        try:
            return supervise.run_json(["compile", "--backend", backend, "--variant", variant, "--problem", problem],
                                      env, 600, log).get("build_s")
        except RuntimeError:
            return None


def _measure(impl, case):
    """Check, then device-time one implementation in this process; returns (run, sync, timing, record)."""
    from harness.measure import timing as timing_mod
    s = _session(impl.backend, impl.variant)
    problem = problems.get(impl.problem)
    reason = s.why_not(problem.name, case)
    if reason:
        pytest.skip(f"not applicable: {reason}")
    b = s.prepare(problem, case, case.seed)
    got, first_call = s.call(b.run, b.outputs)
    problem.check(s.fetch(got), b.ref, case)
    with s.backend.stream_context(s.stream):
        timing = (timing_mod.on_gpu(s.device, b.run, timing_mod.EventEngine(s.device).measure, problem.roofline)
                  if s.device.kind == "cuda" else timing_mod.host_engine(b.run))
    return s, b.run, b.build_s, first_call, timing


@pytest.mark.skipif(not HAS_GPU, reason="needs an NVIDIA GPU (nvidia-smi lists none)")
@pytest.mark.parametrize("impl,case", _params())
def test_bench(benchmark, impl, case):
    ok, why = backends.get(impl.backend, impl.variant).available()
    if not ok:
        pytest.skip(f"{impl.label}: {why}")
    problem = problems.get(impl.problem)
    s, run, build_s, first_call, timing = _measure(impl, case)
    nbytes, flops = problem.work(case)
    record = {"problem": problem.name, "case": case.name, "backend": impl.backend, "variant": impl.variant,
              "status": "ok", "dtype": case.dtype, "work": {"bytes": nbytes, "flops": flops}, "timing": timing}
    records = [record]
    if problem.roofline == "compute":
        for label in problem.vendor:
            b, v = registry.parse_backend(label)
            if backends.get(b, v).available()[0]:
                vendor = registry.Impl(b, v, problem.name)
                records.append({**record, "backend": b, "variant": v, "timing": _measure(vendor, case)[4]})
                break
    refs = _copy_references() if problem.roofline == "memory" else {}
    roofline.apply({"records": records, "references": refs})
    count = loc.count_implementation(backends.source_path(impl.backend, impl.problem))
    benchmark.group = f"{problem.name} {case.name}"
    cold = timing["cold"] or {}
    benchmark.extra_info.update(
        engine=timing["engine"], device_ms_cold=timing["device_ms_cold"], device_ms_warm=timing["device_ms_warm"],
        cold_q1_ms=cold.get("q1_ms"), cold_q3_ms=cold.get("q3_ms"),
        cold_noise=cold.get("noise"), cold_samples=cold.get("samples"),
        device_ms_sustained=timing.get("device_ms_sustained"),
        sm_clock_mhz_sustained=(timing.get("sustained") or {}).get("sm_clock_mhz"),
        achieved=timing.get("achieved"), unit=timing.get("unit"), pct_of_peak=timing.get("pct_of_peak"),
        pct_of_peak_sustained=timing.get("pct_of_peak_sustained"), suspect=timing.get("suspect"),
        peak_basis=timing.get("peak_basis"), build_s=build_s, first_call_s=first_call,
        compile_cold_s=_cold_compile_s(impl.backend, impl.variant, impl.problem),
        loc=count.total, kernel_loc=count.kernel)

    def call():
        run()
        s.device.sync()

    with s.backend.stream_context(s.stream):
        benchmark(call)
    s.backend.release()
