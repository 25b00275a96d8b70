"""Timing method pieces that need no GPU: statistics, the host engine, nvbench's JSON, % of peak."""
import shutil
import time

import pytest

from harness.measure import nvbench_engine, roofline, stopping, timing
from harness.results import records
from tests.conftest import ROOT

SAMPLE = ROOT / "tests" / "fixtures" / "nvbench_h100_sample.json"


def test_summarize_median_iqr_noise():
    s = stopping.summarize([1e-3, 2e-3, 3e-3, 4e-3, 5e-3])
    assert s["median_ms"] == pytest.approx(3.0) and s["samples"] == 5
    assert s["q1_ms"] < s["median_ms"] < s["q3_ms"] and s["noise"] > 0


def test_host_engine_stops_on_its_criterion():
    calls = []
    out = timing.host_engine(lambda: calls.append(1), stopping.Criterion(min_samples=10, min_time_s=0.0,
                                                                       timeout_s=0.5))
    assert out["engine"] == "host-timer" and out["stopped_by"] in ("precision", "timeout")
    assert out["host"]["samples"] >= 5 and len(calls) == out["host"]["samples"] + 1


def test_host_call_costs_separate_dispatch_from_the_synchronized_call():
    import time
    synced = []
    out = timing.host_call_costs(lambda: None, lambda: (time.sleep(0.002), synced.append(1)), budget_s=0.05)
    assert out["host_ms"] >= 2.0 and out["launch_us"] < 1000 and out["host_samples"] >= 5


def test_nvbench_json_from_an_h100_run_parses(tmp_path):
    path = tmp_path / "r.json"
    shutil.copy(SAMPLE, path)
    figures = nvbench_engine.parse(path)
    scale = figures["scale"]
    assert scale["engine"] == "nvbench"
    assert scale["device_ms_cold"] == pytest.approx(8.736000396311284e-06 * 1e3)
    assert scale["cold"]["samples"] == 2282 and scale["cold"]["noise"] == pytest.approx(0.009196741418940226)
    assert scale["device_ms_warm"] == pytest.approx(2.0587520498034906e-05 * 1e3)
    assert 1900 < scale["cold"]["sm_clock_mhz"] < 2000
    assert figures["__device__"]["number_of_sms"] == 132


def _doc(records, refs):
    return {"records": records, "references": refs}


def _rec(problem, case, variant, ms, nbytes, flops, dtype="bfloat16"):
    return {"problem": problem, "case": case, "backend": "array_api", "variant": variant, "status": "ok",
            "dtype": dtype, "work": {"bytes": nbytes, "flops": flops},
            "timing": {"engine": "nvbench", "device_ms_cold": ms, "device_ms_warm": ms, "host_ms": ms}}


def test_percent_of_peak_against_copy_and_vendor():
    refs = {"copy_bytes_per_s": 3.0e12, "theoretical": {"memory_bytes_per_s": 3.35e12,
                                                        "flops_per_s": {"bfloat16": 1.07e15}}}
    seg = _rec("segreduce", "c", "cupy", 1.0, int(2.7e9), 0)
    vendor = _rec("gemm", "g", "torch", 2.0, 0, int(1.4e12))
    other = _rec("gemm", "g", "cupy", 4.0, 0, int(1.4e12))
    doc = _doc([seg, vendor, other], refs)
    roofline.apply(doc)
    assert seg["timing"]["unit"] == "GB/s" and seg["timing"]["pct_of_peak"] == pytest.approx(90.0)
    assert seg["timing"]["pct_of_theoretical"] == pytest.approx(2700 / 3350 * 100)
    assert vendor["timing"]["pct_of_peak"] == pytest.approx(100.0)
    assert other["timing"]["pct_of_peak"] == pytest.approx(50.0) and other["timing"]["unit"] == "TFLOP/s"
    assert other["timing"]["suspect"] is None and seg["timing"]["suspect"] is None


def test_attention_is_judged_against_the_fastest_sdpa_kernel():
    """GEMM takes its first vendor row (cuBLAS through torch); attention the fastest SDPA backend."""
    refs = {"copy_bytes_per_s": 3.0e12, "theoretical": {"flops_per_s": {"bfloat16": 1.07e15}}}
    rows = [dict(_rec("attention", "a", v, ms, 0, int(1e12)), backend=b)
            for b, v, ms in (("torch_sdpa", "cudnn", 2.0), ("torch_sdpa", "flash", 1.6), ("array_api", "torch", 8.0))]
    roofline.apply(_doc(rows, refs))
    assert [r["timing"]["pct_of_peak"] for r in rows] == pytest.approx([80.0, 100.0, 20.0])
    assert rows[2]["timing"]["peak_basis"].startswith("torch_sdpa[flash] on the same case")


def test_both_timing_modes_get_their_own_percent_of_peak():
    refs = {"copy_bytes_per_s": 3.0e12, "copy_bytes_per_s_sustained": 2.9e12,
            "theoretical": {"memory_bytes_per_s": 3.35e12, "flops_per_s": {"bfloat16": 1.07e15}}}
    seg = _rec("segreduce", "c", "cupy", 1.0, int(2.7e9), 0)
    seg["timing"]["device_ms_sustained"] = 1.0
    vendor = _rec("gemm", "g", "torch", 2.0, 0, int(1.4e12))
    vendor["timing"]["device_ms_sustained"] = 2.3           # power-bound: slower back to back
    other = _rec("gemm", "g", "cupy", 4.0, 0, int(1.4e12))
    other["timing"]["device_ms_sustained"] = 4.6
    roofline.apply(_doc([seg, vendor, other], refs))
    assert seg["timing"]["pct_of_peak_sustained"] == pytest.approx(2700 / 2900 * 100)
    assert vendor["timing"]["pct_of_peak_sustained"] == pytest.approx(100.0)
    assert other["timing"]["pct_of_peak_sustained"] == pytest.approx(50.0)
    assert other["timing"]["achieved_sustained"] == pytest.approx(1.4e12 / 4.6e-3 / 1e12)
    assert "sustained" in other["timing"]["peak_basis_sustained"]


def test_faster_than_theoretical_is_flagged_suspect():
    refs = {"copy_bytes_per_s": 3.0e12, "theoretical": {"memory_bytes_per_s": 3.35e12, "flops_per_s": {}}}
    fast = _rec("elementwise", "e", "cupy", 1.0, int(4e9), 0)
    roofline.apply(_doc([fast], refs))
    assert "theoretical" in fast["timing"]["suspect"]


def test_well_beyond_the_measured_copy_is_flagged_suspect():
    """A cached result copied out moves 2/3 of axpy's bytes: 150% of the copy, under the theoretical."""
    refs = {"copy_bytes_per_s": 2.0e12, "theoretical": {"memory_bytes_per_s": 3.35e12, "flops_per_s": {}}}
    cheat = _rec("elementwise", "e", "cupy", 1.0, int(3.0e9), 0)
    honest = _rec("elementwise", "e", "torch", 1.0, int(2.04e9), 0)       # 102%: the best real rows
    roofline.apply(_doc([cheat, honest], refs))
    assert "copy" in cheat["timing"]["suspect"] and honest["timing"]["suspect"] is None


def test_each_memory_bound_problem_is_judged_against_its_own_access_pattern():
    """A row sum reads and barely writes: against a read stream (faster than the copy on an H200) a
    correct 105%-of-the-copy row is fine, while a row beyond the read stream by more is flagged;
    the elementwise problem stays on the copy."""
    refs = {"copy_bytes_per_s": 4.0e12, "read_bytes_per_s": 4.4e12,
            "theoretical": {"memory_bytes_per_s": 4.8e12, "flops_per_s": {}}}
    row_sum = _rec("segreduce", "s", "cupy", 1.0, int(4.2e9), 0)           # 105% of the copy, 95.5% of the read
    too_fast = _rec("segreduce", "s", "torch", 1.0, int(4.7e9), 0)         # 106.8% of the read stream
    axpy = _rec("elementwise", "e", "cupy", 1.0, int(4.08e9), 0)
    roofline.apply(_doc([row_sum, too_fast, axpy], refs))
    assert row_sum["timing"]["pct_of_peak"] == pytest.approx(4.2 / 4.4 * 100)
    assert row_sum["timing"]["peak_basis"].startswith("read stream") and row_sum["timing"]["suspect"] is None
    assert "read stream" in too_fast["timing"]["suspect"]
    assert axpy["timing"]["peak_basis"].startswith("device-to-device copy")
    assert axpy["timing"]["pct_of_peak"] == pytest.approx(102.0)
    older = _rec("segreduce", "s", "cupy", 1.0, int(2.7e9), 0)              # a run with no read stream
    roofline.apply(_doc([older], {"copy_bytes_per_s": 3.0e12, "theoretical": {}}))
    assert "no read stream in this run" in older["timing"]["peak_basis"]


def test_a_clock_far_from_its_references_keeps_its_cold_figure_and_says_so():
    """Relative, not absolute: cuBLAS's own row at 1755 MHz is not flagged; cuPy's at 1290 MHz beside
    it is (its figure stands, with its % per cycle)."""
    refs = {"copy_bytes_per_s": 3.0e12, "device": {"sm_clock_khz": 1980000},
            "theoretical": {"memory_bytes_per_s": 3.35e12, "flops_per_s": {"bfloat16": 1.07e15}}}
    vendor = _rec("gemm", "g", "torch", 2.0, 0, int(1.4e12))
    slow = _rec("gemm", "g", "cupy", 2.1, 0, int(1.4e12))
    vendor["timing"]["cold"] = {"sm_clock_mhz": 1755.0}
    slow["timing"]["cold"] = {"sm_clock_mhz": 1290.0}
    roofline.apply(_doc([vendor, slow], refs))
    assert vendor["timing"]["clock_off"] is None and vendor["timing"]["low_clock"] is None
    assert "1290 MHz, -26.5% from its reference's 1755 MHz (array_api[torch])" in slow["timing"]["clock_off"]
    assert slow["timing"]["pct_of_peak"] == pytest.approx(2 / 2.1 * 100)
    assert slow["timing"]["pct_of_peak_per_cycle"] == pytest.approx(2 / 2.1 * 100 * 1755 / 1290)
    assert records.flag(slow) == "clock off" and records.counts(slow)


def test_no_time_on_the_labs_stream_is_flagged_suspect():
    """Work launched on a stream of its own: the GPU timer measures nothing (nvbench: 0 or NaN)."""
    refs = {"copy_bytes_per_s": 3.0e12, "theoretical": {"memory_bytes_per_s": 3.35e12, "flops_per_s": {}}}
    hidden = _rec("segreduce", "s", "cupy", 0.0, int(1e9), 0)
    gone = _rec("segreduce", "s", "torch", None, int(1e9), 0)
    roofline.apply(_doc([hidden, gone], refs))
    assert all("no time on the lab's stream" in r["timing"]["suspect"] for r in (hidden, gone))


def test_quick_runs_time_the_cold_mode_alone(monkeypatch):
    """`ways run --quick` sets WAYS_TIMING_MODES=cold for its workers: on_gpu then skips the
    sustained mode (its lead and samples), leaving that figure empty rather than made up."""
    class Device:
        def sync(self):
            pass
    monkeypatch.setattr(timing, "sustained", lambda *a, **k: pytest.fail("sustained mode ran"))
    monkeypatch.setenv(timing.MODES_VAR, "cold")
    assert not timing.sustained_wanted()
    out = timing.on_gpu(Device(), lambda: None, lambda run: {"device_ms_cold": 1.0}, "memory", warmup_s=0.0,
                        with_sustained=timing.sustained_wanted())
    assert out["device_ms_cold"] == 1.0 and out["sustained"] is None and out["device_ms_sustained"] is None
    monkeypatch.delenv(timing.MODES_VAR)
    assert timing.sustained_wanted()


def test_timing_cost_adds_up_each_part_of_the_method_from_the_records():
    from harness.measure.timing import cost
    from harness.report.terminal import cost_line
    gemm = {"timing": {"device_ms_cold": 1.5, "device_ms_sustained": 2.0, "warmup_calls": 250, "host_samples": 100,
                       "host_ms": 2.0, "cold": {"walltime_s": 3.0},
                       "sustained": {"lead_s": 1.0, "calls": 300, "median_ms": 2.0}}}
    throttled = {"timing": {"device_ms_cold": None, "device_ms_sustained": 1.0, "warmup_calls": 100,
                            "cold": {"walltime_s": 16.5}, "sustained": {"lead_s": 1.0, "calls": 500, "median_ms": 1.0}}}
    c = cost([gemm, throttled, {"timing": None, "status": "not_applicable"}])
    assert c == {"rows": 2, "cold_s": 19.5, "sustained_s": 3.1, "warm_up_s": 0.6, "host_s": 0.2,
                 "no_cold_sample": 1, "no_cold_sample_s": 16.5}
    assert "23 s over 2 timed rows" in cost_line(c) and "1 row(s) sampled 16 s cold and kept no sample" in cost_line(c)
    assert cost([{"timing": None}]) is None


def test_one_warm_up_leads_the_sustained_window_then_the_cold_samples(monkeypatch):
    """on_gpu: the warm-up (back to back, as long as the roofline needs), the sustained window right
    after it with no lead of its own, then the cold samples."""
    class Device:
        def sync(self):
            pass
    order = []
    monkeypatch.setattr(timing, "warm_up", lambda run, sync, seconds, max_seconds=None: order.append(
        ("warm-up", seconds)) or {"calls": 4, "seconds": 1.0, "settled": True, "dispatch_s": 1e-5})
    monkeypatch.setattr(timing, "sustained", lambda device, run, call_s, seconds, batches, dispatch_s, hold, settle_s:
                        order.append(("sustained", seconds, dispatch_s)) or {"median_ms": 2.0})
    out = timing.on_gpu(Device(), lambda: None, lambda run: order.append(("cold",)) or {"device_ms_cold": 1.0},
                        "compute")
    assert order == [("warm-up", timing.WARMUP_S["compute"]), ("sustained", timing.SUSTAINED_S["compute"], 1e-5),
                     ("cold",)]
    assert out["warmup_calls"] == 4 and out["device_ms_sustained"] == 2.0 and out["device_ms_cold"] == 1.0

    def lead(run, seconds):
        order.append(("lead", seconds))
        return stopping.settling([(0.1, 1700.0), (0.5, 1960.0), (0.9, 1965.0)])
    order.clear()
    out = timing.on_gpu(Device(), lambda: None, lambda run: order.append(("cold",)) or {}, "compute", lead=lead)
    lead_s = timing.COLD_LEAD_S["compute"]
    assert order[-2:] == [("lead", lead_s), ("cold",)] and out["cold_lead_s"] == lead_s
    assert out["cold_lead"] == {"samples": 3, "sm_clock_first_mhz": 1700.0, "sm_clock_last_mhz": 1965.0,
                                "settled_after_s": 0.1}                 # how long the clock took to recover
    order.clear()                    # cold figures alone: the lead is their settling, no warm-up before it
    timing.on_gpu(Device(), lambda: None, lambda run: order.append(("cold",)) or {}, "compute", lead=lead,
                  with_sustained=False)
    assert order == [("lead", timing.QUICK_COLD_LEAD_S["compute"]), ("cold",)]
    assert 0 < timing.QUICK_COLD_LEAD_S["compute"] < lead_s     # nothing to recover from: a shorter one
    order.clear()                    # a memory-bound row keeps its clock: its warm-up, no lead
    timing.on_gpu(Device(), lambda: None, lambda run: order.append(("cold",)) or {}, "memory", lead=lead,
                  with_sustained=False)
    assert order == [("warm-up", timing.WARMUP_S["memory"]), ("cold",)]


def test_sampling_stops_on_the_medians_precision_whatever_an_outlier_does():
    """The median's distribution-free 95% interval decides: a few samples far out (a preempted
    sample) leave it where it is, where they kept the relative standard deviation over 0.5%."""
    import statistics
    steady = [1.0 + 0.001 * (k % 5) for k in range(40)]
    outliers = steady + [3.0, 3.0]
    assert statistics.stdev(outliers) / statistics.fmean(outliers) > 0.05
    low, high = stopping.median_interval(outliers)
    assert low <= statistics.median(outliers) <= high and high - low <= 0.005
    crit = stopping.Criterion(min_samples=20, min_time_s=0.0, timeout_s=60.0)
    assert stopping.done(outliers, crit, time.perf_counter()) == "precision"
    spread = [1.0 + 0.05 * (k % 7) for k in range(40)]                   # a median known to 5% only
    assert stopping.done(spread, crit, time.perf_counter()) is None
    assert stopping.done(steady[:10], crit, time.perf_counter()) is None   # fewer than min_samples


def test_a_compute_bound_warm_up_runs_on_until_its_calls_settle(monkeypatch):
    """A kernel that slows by 3% over its first 1.5 s of load (a GPU reaching its power limit), then
    holds: the warm-up stops once the last half second is as fast as the one before it, not after a
    fixed second; a kernel that never settles stops at the cap, saying so."""
    clock = {"t": 0.0}
    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock["t"])

    def kernel(slowing_s, by=0.03):
        def run():
            clock["t"] += 1e-3 * (1 + by * min(clock["t"], slowing_s) / slowing_s)
        return run
    out = timing.warm_up(kernel(1.5), lambda: None, 1.0, 4.0)
    assert out["settled"] and 1.5 < out["seconds"] < 4.0
    never = timing.warm_up(kernel(8.0, by=0.2), lambda: None, 1.0, 4.0)
    assert never["settled"] is False and never["seconds"] >= 4.0
    fixed = timing.warm_up(kernel(1.5), lambda: None, 0.25)           # memory-bound: no settling rule
    assert fixed["settled"] is None and 0.25 <= fixed["seconds"] < 0.3
    assert not timing.settled([(0.0, 0), (0.6, 8)])                   # too few marks to judge
