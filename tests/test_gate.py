"""Like-for-like timing without a GPU: the gated cold loop's bookkeeping (exposed samples dropped,
a host-bound tool's kept and named), the clock flag relative to each row's reference, and
elementwise judged against a stream of its own pattern."""
import copy

import pytest

from harness.measure import gate, roofline
from harness.measure.stopping import Criterion
from harness.results.records import flag, flag_note


class FakeClock:
    max_mhz = 1980.0

    def __init__(self, mhz=1900.0):
        self.mhz = mhz

    def read(self):
        return self.mhz

    def power_w(self):
        return 500.0


def engine(samples):
    """A GatedEngine whose samples are `samples`, (ms, exposed) pairs, then the last one again."""
    e = gate.GatedEngine.__new__(gate.GatedEngine)
    e.crit, e.gate_s, e.clock = Criterion(min_samples=5, min_time_s=0.0, timeout_s=0.5), gate.GATE_S, FakeClock()
    queue = list(samples)
    e._sample = lambda run: queue.pop(0) if len(queue) > 1 else queue[0]
    return e


def test_exposed_samples_are_dropped_and_counted():
    cold = engine([(1.0, True), (1.0, False), (1.0, False), (9.0, True), (1.0, False), (1.0, False),
                   (1.0, False)]).cold(lambda: None)
    assert cold["median_ms"] == pytest.approx(1.0) and cold["exposed"] == 2 and not cold["host_exposed"]
    assert cold["gate_ms"] == gate.GATE_S * 1e3 and cold["power_w"] == 500.0
    assert cold["cycles"] == pytest.approx(1.0 * 1e3 * 1900.0)       # ms x MHz: thousands of cycles x 1e3


def test_a_tool_that_waits_inside_its_call_keeps_its_samples_and_says_so():
    cold = engine([(2.0, True)]).cold(lambda: None)
    assert cold["host_exposed"] and cold["samples"] > 0 and cold["median_ms"] == pytest.approx(2.0)
    row = {"status": "ok", "timing": {"cold": cold}}
    assert flag(row) == "host exposed" and "waits for the GPU inside its call" in flag_note(row)


def test_the_default_engine_is_the_gated_one(monkeypatch):
    monkeypatch.delenv(gate.ENGINE_VAR, raising=False)
    assert gate.cold_engine() == "gated"
    monkeypatch.setenv(gate.ENGINE_VAR, "nvbench")
    assert gate.cold_engine() == "nvbench"


def _doc(candidate_mhz: float, vendor_mhz: float = 1500.0) -> dict:
    def row(backend, variant, ms, mhz):
        return {"problem": "gemm", "case": "8192x8192x8192-bfloat16", "kind": "bench", "dtype": "bfloat16",
                "backend": backend, "variant": variant, "status": "ok", "work": {"bytes": 1, "flops": 2 * 8192**3},
                "timing": {"device_ms_cold": ms, "device_ms_sustained": None, "cold": {"sm_clock_mhz": mhz}}}
    return {"references": {"theoretical": {}}, "records": [row("array_api", "torch", 1.6, vendor_mhz),
                                                          row("triton", "", 1.5, candidate_mhz)]}


def test_a_row_timed_at_another_clock_than_its_reference_is_flagged_either_way():
    for mhz, off in ((1700.0, True), (1300.0, True), (1520.0, False)):
        doc = _doc(mhz)
        roofline.apply(doc)
        t = doc["records"][1]["timing"]
        assert t["reference"] == {"label": "array_api[torch]", "ms": 1.6, "sm_clock_mhz": 1500.0}
        assert t["pct_of_peak"] == pytest.approx(100 * 1.6 / 1.5)
        assert t["pct_of_peak_per_cycle"] == pytest.approx(t["pct_of_peak"] * 1500.0 / mhz)
        assert bool(t["clock_off"]) is off and (flag(doc["records"][1]) == "clock off") is off
        assert t["low_clock"] is None                      # the absolute threshold gives way to the reference's


def test_elementwise_is_judged_against_its_own_pattern():
    ceiling = {"cold": {"device_ms_cold": 0.25, "cold": {"sm_clock_mhz": 1900.0}}}
    refs = {"copy_bytes_per_s": 4.0e12, "triad_bytes_per_s": 4.2e12, "triad_by": "triad",
            "triad_timing": ceiling["cold"], "theoretical": {}}
    rec = {"problem": "elementwise", "case": "268435456-float32", "kind": "bench", "dtype": "float32",
           "backend": "triton", "variant": "", "status": "ok", "work": {"bytes": 3 * 4 * 2**28, "flops": 2**28},
           "timing": {"device_ms_cold": 3 * 4 * 2**28 / 4.1e12 * 1e3, "device_ms_sustained": None,
                      "cold": {"sm_clock_mhz": 1900.0}}}
    doc = {"references": refs, "records": [copy.deepcopy(rec)]}
    roofline.apply(doc)
    t = doc["records"][0]["timing"]
    assert t["peak_basis"].startswith("two-read one-write stream") and t["pct_of_peak"] == pytest.approx(100 * 4.1 / 4.2)
    assert t["reference"]["label"] == "triad" and t["clock_off"] is None


def test_a_lead_still_settling_from_the_sustained_window_is_dropped():
    """A cold loop whose clock still recovers: 40 samples from 2.01 ms down to 1.85 (an H200's tilelang
    attention after the sustained window), then the settled 1.85; the figure is the settled one."""
    ramp = [(2.01 - 0.16 * k / 40, False) for k in range(40)]
    fast = [(1.85 + 0.001 * (k % 3), False) for k in range(80)]
    e = engine(ramp + fast)
    e.crit = Criterion(min_samples=20, min_time_s=0.0, timeout_s=5.0)
    cold = e.cold(lambda: None)
    assert cold["stopped_by"] == "precision" and cold["median_ms"] == pytest.approx(1.85, abs=0.005)
    assert cold["settling_dropped"] >= 20


def test_the_lead_runs_gated_untimed_samples_for_its_seconds():
    e = engine([(1.0, False)])
    calls, held = [], []
    e.flush = type("Flush", (), {"fill": lambda self, v, stream: None})()
    e.stream = type("Stream", (), {"sync": lambda self: None})()
    e.hold = held.append
    lead = e.lead(lambda: calls.append(1), 0.02)
    assert calls and len(held) == len(calls) and held[0] == gate.GATE_S
    assert lead["samples"] == len(calls) and lead["sm_clock_last_mhz"] == 1900.0 and lead["settled_after_s"] == 0.0


def test_noise_without_drift_is_not_taken_for_settling():
    from harness.measure.stopping import unsettled
    noisy = [1.0 + 0.02 * ((7 * k) % 11) for k in range(60)]             # stationary, 20% spread
    assert unsettled(noisy, 0.005) == 0
    assert unsettled([2.0] * 30 + [1.8] * 30, 0.005) == 30               # a drift
    assert unsettled([1.0] * 30 + [1.003] * 30, 0.005) == 0              # apart, but within the precision
