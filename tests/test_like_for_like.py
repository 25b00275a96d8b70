"""Like-for-like timing without a GPU, on a simulated stream: the sustained window of a host-bound
tool queued behind a GPU-side wait, every compute-bound % against the reference timed beside its
row (the same in every lane), a lead in one mode only flagged, and the second timer's comparison."""
import argparse
import contextlib
import math
import time

import pytest

from harness.measure import roofline, second_timer, timing
from harness.results.records import flag, flag_note
from harness.run import timer_check


class Sim:
    """A stream on a virtual clock: each call costs the host `dispatch` s and the device `kernel` s."""

    def __init__(self, dispatch, kernel):
        self.dispatch, self.kernel, self.host, self.free = dispatch, kernel, 0.0, 0.0

    def run(self):
        self.host += self.dispatch
        self.free = max(self.free, self.host) + self.kernel

    def hold(self, seconds):
        self.free = max(self.free, self.host) + seconds


class Event:
    def __init__(self, sim):
        self.sim, self.t = sim, None

    @property
    def is_done(self):
        return self.t <= self.sim.host

    def sync(self):
        self.sim.host = max(self.sim.host, self.t)

    def __sub__(self, other):
        return (self.t - other.t) * 1e3


class Stream:
    def __init__(self, sim):
        self.sim = sim

    def record(self, event):
        event.t = max(self.sim.free, self.sim.host)


class Device:
    def __init__(self, sim):
        self.stream, self.sim = Stream(sim), sim
        self.device = self
        self.pci_bus_id = "0"

    def create_event(self, options):
        return Event(self.sim)


@pytest.fixture
def sim_clock(monkeypatch):
    """The wait loop's sleeps pass the simulated hosts' virtual time, not real time."""
    sims = []

    class Clock:
        why_not = None

        def __init__(self, pci_bus_id):
            pass

        def read(self):
            return 1900.0

    def sleep(seconds):
        for s in sims:
            s.host += seconds
    monkeypatch.setattr(timing, "SmClock", Clock)
    monkeypatch.setattr(timing.time, "sleep", sleep)
    return sims


def test_a_host_bound_tools_sustained_window_waits_behind_the_gate(sim_clock):
    sim = Sim(dispatch=3e-4, kernel=1e-4)
    sim_clock.append(sim)
    bare = timing.sustained(Device(sim), sim.run, call_s=3e-4, seconds=0.05, dispatch_s=3e-4)
    assert bare["host_bound"] and bare["host_hidden"] is None
    assert bare["median_ms"] == pytest.approx(0.3, rel=0.05)        # the host's dispatch, not the kernel
    sim = Sim(dispatch=3e-4, kernel=1e-4)
    sim_clock.append(sim)
    held = timing.sustained(Device(sim), sim.run, call_s=3e-4, seconds=0.05, dispatch_s=3e-4, hold=sim.hold)
    assert held["host_hidden"] == "gate" and held["exposed"] is False
    assert held["median_ms"] == pytest.approx(0.1, rel=1e-6)        # the device's time
    assert held["calls"] <= timing.HELD_CALLS


def test_a_gate_too_short_for_the_dispatch_says_the_window_was_exposed(sim_clock):
    sim = Sim(dispatch=3e-4, kernel=1e-4)
    sim_clock.append(sim)
    row = timing.sustained(Device(sim), sim.run, call_s=3e-4, seconds=0.05, dispatch_s=3e-4,
                           hold=lambda seconds: sim.hold(seconds / 100))
    assert row["exposed"] is True and row["host_hidden"] is None
    record = {"status": "ok", "timing": {"sustained": row}}
    assert flag(record) == "host exposed" and "sustained" in flag_note(record)


def test_a_device_bound_tool_needs_no_gate(sim_clock):
    sim = Sim(dispatch=1e-5, kernel=1e-4)
    sim_clock.append(sim)
    row = timing.sustained(Device(sim), sim.run, call_s=1e-4, seconds=0.05, dispatch_s=1e-5, hold=sim.hold)
    assert not row["host_bound"] and row["host_hidden"] is None and row["exposed"] is None
    assert row["median_ms"] == pytest.approx(0.1, rel=1e-6)


def test_a_part_after_a_switch_keeps_its_settling_batches_out_of_its_figure(sim_clock):
    """A window that follows another kernel's: its first SWITCH_SETTLE_S of batches (the clock still
    where the other kernel left it: here 10% slower) are timed, kept apart, and out of the median."""
    from harness.measure.stopping import SWITCH_SETTLE_S
    sim = Sim(dispatch=1e-5, kernel=1.1e-4)
    sim_clock.append(sim)
    settled_at = 0.1                         # device seconds: then the kernel takes its settled 0.1 ms

    def run():
        sim.kernel = 1.0e-4 if sim.free >= settled_at else 1.1e-4
        sim.run()
    row = timing.sustained(Device(sim), run, call_s=1e-4, seconds=0.4, batches=8, dispatch_s=1e-5,
                           settle_s=SWITCH_SETTLE_S)
    assert len(row["settling_batch_ms"]) == 2 and row["batches"] == 8 == len(row["batch_ms"])
    assert row["settling_batch_ms"][0] == pytest.approx(0.11, rel=0.02)
    assert row["median_ms"] == pytest.approx(0.1, rel=1e-6)
    assert timing.pooled([row, row])["settling_batch_ms"] == row["settling_batch_ms"] * 2


CASE = "8192x8192x8192-bfloat16"


def _row(backend, variant, ms, adjacent, sustained_ms=None, mhz=1500.0, case=CASE):
    return {"problem": "gemm", "case": case, "kind": "bench", "dtype": "bfloat16", "backend": backend,
            "variant": variant, "status": "ok", "work": {"bytes": 1, "flops": 2 * 8192**3},
            "timing": {"device_ms_cold": ms, "device_ms_sustained": sustained_ms, "cold": {"sm_clock_mhz": mhz},
                       "adjacent": adjacent}}


def _beside(ms, mhz=1500.0):
    return {"label": "array_api[torch]", "ms": ms, "before_ms": ms, "after_ms": ms, "sm_clock_mhz": mhz}


def test_each_compute_row_is_judged_against_the_reference_timed_beside_it():
    """Two lanes whose cuBLAS rows differ by 6%: each row's % is against its own lane's reference,
    the fastest vendor path (here nvmath's cuBLASLt, 2% ahead of cuBLAS beside it) being 100%."""
    doc = {"references": {"theoretical": {}}, "records": [
        _row("array_api", "torch", 1.60, {"label": "array_api[torch]", "self": True}),     # lane 0
        _row("nvmath", "", 1.60 / 1.02, _beside(1.60)),                                    # lane 0
        _row("triton", "", 1.60, _beside(1.50)),                                           # lane 1: a slower GPU state
        _row("cute_dsl", "", 1.55, _beside(1.70))]}                                        # lane 2
    roofline.apply(doc)
    torch_row, nvmath_row, triton_row, cute_row = (r["timing"] for r in doc["records"])
    assert nvmath_row["pct_of_peak"] == pytest.approx(100.0)
    assert torch_row["pct_of_peak"] == pytest.approx(100 / 1.02)
    assert triton_row["pct_of_peak"] == pytest.approx(100 * (1.50 / 1.60) / 1.02)
    assert cute_row["pct_of_peak"] == pytest.approx(100 * (1.70 / 1.55) / 1.02)
    assert triton_row["reference"] == {"label": "nvmath", "ms": pytest.approx(1.50 / 1.02),
                                       "adjacent": "array_api[torch]", "sm_clock_mhz": 1500.0}
    assert "timed before and after it" in triton_row["peak_basis"]


def test_a_lead_in_one_mode_only_is_flagged():
    doc = {"references": {"theoretical": {}}, "records": [
        _row("array_api", "torch", 1.60, {"label": "array_api[torch]", "self": True}, sustained_ms=1.9),
        _row("triton", "", 1.50, _beside(1.60), sustained_ms=2.0)]}
    roofline.apply(doc)
    t = doc["records"][1]["timing"]
    assert t["pct_of_peak"] == pytest.approx(100 * 1.6 / 1.5) and t["pct_of_peak_sustained"] < 100
    assert flag(doc["records"][1]) == "unconfirmed" and "sustained" in flag_note(doc["records"][1])
    doc["records"][1]["timing"].update(device_ms_sustained=1.8)
    roofline.apply(doc)
    assert doc["records"][1]["timing"]["unconfirmed"] is None       # ahead in both modes and per cycle


def test_without_adjacent_references_the_runs_vendor_rows_judge():
    doc = {"references": {"theoretical": {}}, "records": [_row("array_api", "torch", 1.6, None),
                                                          _row("triton", "", 1.5, None)]}
    roofline.apply(doc)
    assert doc["records"][1]["timing"]["pct_of_peak"] == pytest.approx(100 * 1.6 / 1.5)
    assert doc["records"][1]["timing"]["peak_basis"].startswith("array_api[torch] on the same case, same run")


def test_the_second_timer_times_host_synchronized_batches():
    synced = []
    out = second_timer.host_batches(lambda: time.sleep(2e-3), lambda: synced.append(1), batch_s=0.01, batches=3,
                                     min_calls=3)
    assert out["median_ms"] == pytest.approx(2.0, rel=0.5) and out["batches"] == 3
    assert out["calls_per_batch"] >= 3 and len(synced) == 2 + 2 * 3


def test_the_second_timer_reads_the_clock_while_each_batch_runs():
    """The clock is read once a batch, after its calls are queued and before the closing synchronize
    (the device still busy with them), for the row's batches and the reference's alike."""
    events = []

    def clock():
        events.append("clock")
        return 1500.0 + len([e for e in events if e == "clock"])
    row = lambda: events.append("row")               # noqa: E731
    reference = lambda: events.append("reference")   # noqa: E731
    out, ref = second_timer.interleaved(row, reference, lambda: events.append("sync"), batch_s=0.0, batches=2,
                                        min_calls=2, clock=clock, settle_s=0.0)
    assert len(out["batch_sm_clock_mhz"]) == 2 and len(ref["batch_sm_clock_mhz"]) == 3
    assert out["sm_clock_mhz"] == pytest.approx(sum(out["batch_sm_clock_mhz"]) / 2)
    for k, e in enumerate(events):
        if e == "clock":
            assert events[k - 1] in ("row", "reference") and events[k + 1] == "sync"
    assert second_timer.host_batches(row, lambda: None, batch_s=0.0, batches=2, min_calls=1)["sm_clock_mhz"] is None


def test_a_window_scale_lengthens_every_sustained_window_and_the_second_timers_batches(monkeypatch):
    """WAYS_WINDOW_SCALE (ways timer-check --window-scale): a compute-bound row's window, its reference's
    parts beside it and the second timer's batch count, each times the factor; nothing else is a factor."""
    from harness.measure import stopping
    from harness.run import timer_check
    monkeypatch.setenv(stopping.WINDOW_SCALE_VAR, "2")
    out = second_timer.host_batches(lambda: None, lambda: None, batch_s=1e-4, min_calls=1)
    assert out["batches"] == 2 * second_timer.BATCHES
    # a memory-bound row's comparison is precise at scale 1: its windows and batches stay as they are
    assert stopping.window_scale("memory") == 1.0 and second_timer.scaled_batches("memory") == second_timer.BATCHES
    assert stopping.window_scale("compute") == 2.0
    for bad in ("0", "-1", "soon"):
        monkeypatch.setenv(stopping.WINDOW_SCALE_VAR, bad)
        with pytest.raises(ValueError, match="positive"):
            stopping.window_scale()
    ap = argparse.ArgumentParser()
    timer_check.add_arguments(ap)
    assert ap.parse_args(["--out", "x", "--window-scale", "3"]).window_scale == 3.0
    with pytest.raises(SystemExit):
        ap.parse_args(["--out", "x", "--window-scale", "0"])


def test_the_second_timer_alternates_a_rows_batches_with_its_references():
    """R, B, R, ..., B, R: each of the row's batches between two of its reference's, the reference's
    inside its own context (its stream), each side's figure the median of its own batches."""
    calls, contexts = [], []

    @contextlib.contextmanager
    def reference_stream():
        contexts.append(1)
        yield

    def row():
        calls.append("row")
        time.sleep(2e-3)

    def reference():
        calls.append("reference")
        time.sleep(1e-3)
    out, ref = second_timer.interleaved(row, reference, lambda: None, reference_stream, batch_s=0.01, batches=3,
                                        min_calls=3)
    assert out["median_ms"] == pytest.approx(2.0, rel=0.5) and ref["median_ms"] == pytest.approx(1.0, rel=0.5)
    assert out["batches"] == 3 and ref["batches"] == 4 and len(contexts) == 1 + 4
    timed = [c for k, c in enumerate(calls) if k >= 2]          # after the two sizing calls
    runs = [timed[0]] + [c for k, c in enumerate(timed[1:], 1) if c != timed[k - 1]]
    assert runs == ["reference"] + ["row", "reference"] * 3


def test_a_full_run_times_its_headline_rows_by_the_second_timer_too(monkeypatch):
    import problems
    gemm = problems.get("gemm")
    headline, other = gemm.headline_case(), next(c for c in gemm.cases() if c.name != gemm.headline_case().name)
    monkeypatch.setenv(second_timer.ENABLED_VAR, second_timer.HEADLINE)
    assert second_timer.wanted(gemm, headline) and not second_timer.wanted(gemm, other)
    monkeypatch.setenv(second_timer.ENABLED_VAR, "1")
    assert second_timer.wanted(gemm, other)
    monkeypatch.delenv(second_timer.ENABLED_VAR)
    assert not second_timer.wanted(gemm, headline)


def test_timer_check_compares_each_rows_headline_figure_with_the_second_timers():
    """Same mode: the lab's sustained figures (rate, or % of the reference beside the row) against the
    second timer's; the cold headline beside them; a host-bound row shown, not checked."""
    def second(r, ms, ref_ms=None):
        r["timing"]["second_timer"] = {"median_ms": ms}
        if ref_ms:
            r["timing"]["adjacent"]["second_timer_ms"] = ref_ms
        return r
    doc = {"references": {"theoretical": {}}, "records": [
        second(_row("array_api", "torch", 1.60, {"label": "array_api[torch]", "self": True}, sustained_ms=1.80),
               1.80),
        second(_row("triton", "", 1.60, _beside(1.50), sustained_ms=1.92), 1.90, ref_ms=1.80)]}

    def memory(backend, dispatch_us, second_ms):
        return {"problem": "elementwise", "case": "268435456-float32", "status": "ok", "backend": backend,
                "variant": "", "work": {"bytes": 3 * 4 * 2**28},
                "timing": {"device_ms_cold": 0.75, "device_ms_sustained": 0.74,
                           "second_timer": {"median_ms": second_ms},
                           "sustained": {"dispatch_us": dispatch_us}}}
    doc["records"] += [memory("triton", 20.0, 0.745), memory("jax_pallas", 600.0, 0.80)]
    roofline.apply(doc)
    rows = {r["implementation"] + r["problem"]: r for r in timer_check.compare(doc)}
    gemm = rows["tritongemm"]
    assert gemm["lab"] == pytest.approx(100 * 1.80 / 1.92) and gemm["second"] == pytest.approx(100 * 1.8 / 1.9)
    assert gemm["difference"] == pytest.approx((1.80 / 1.92) / (1.8 / 1.9) - 1)
    assert gemm["headline"] == pytest.approx(100 * 1.5 / 1.6)
    assert rows["tritonelementwise"]["difference"] == pytest.approx(0.745 / 0.74 - 1)
    assert rows["jax_pallaselementwise"]["host_bound"] and not rows["tritonelementwise"]["host_bound"]
    assert timer_check.disagreeing(list(rows.values()), 0.02) == []          # the host-bound row is not checked
    text = timer_check.markdown(list(rows.values()), 0.02)
    assert "| gemm |" in text and "host-bound: not checked" in text


def test_a_check_stopped_before_its_ceiling_row_puts_each_row_against_its_adjacent_reference():
    row = _row("triton", "", 2.0, {**_beside(1.6), "sustained_ms": 1.8, "second_timer_ms": 1.85},
               sustained_ms=2.25)
    row["timing"]["second_timer"] = {"median_ms": 2.3}
    doc = {"references": {"theoretical": {}}, "records": [row]}        # no vendor row: no % of a ceiling
    roofline.apply(doc)
    (x,) = timer_check.compare(doc)
    assert "array_api[torch] beside it" in x["figure"] and x["reference"] == "array_api[torch]"
    assert (x["lab"], x["second"], x["headline"]) == pytest.approx((80.0, 100 * 1.85 / 2.3, 80.0))
    assert x["difference"] == pytest.approx(0.8 / (1.85 / 2.3) - 1)


def test_timer_check_pairs_each_rows_part_with_the_reference_parts_beside_it():
    """R, B, R, ..., B, R under a clock that slows steadily: each part against the mean of the reference's
    parts on either side of it gives the same speed ratio whatever the drift; both timers' pairs."""
    drift = [1.0 + 0.02 * i for i in range(11)]            # each part 2% slower than the one before
    ref = [2.0 * d for d in drift[0::2] for _ in range(2)]         # 6 reference parts of 2 batches
    row = [1.0 * d for d in drift[1::2] for _ in range(2)]         # 5 row parts between them
    assert timer_check.paired_speed(row, ref, 2) == pytest.approx(2.0)
    assert timer_check.paired_speed(row, ref[:-2], 2) is None            # not interleaved
    t = {"sustained": {"batch_ms": row, "parts": 5}, "second_timer": {"batch_ms": [1.0] * 7},
         "adjacent": {"sustained_batch_ms": ref, "second_timer_batch_ms": [1.9] * 8}}
    assert timer_check.paired_difference(t) == pytest.approx(2.0 / 1.9 - 1)
    del t["adjacent"]["second_timer_batch_ms"]
    assert timer_check.paired_difference(t) is None


def test_the_fastest_vendor_row_is_checked_by_its_own_speed_against_its_reference():
    """Its % is 100 in both timers whatever they say, so a paired difference beyond the tolerance makes
    the row disagree (and is marked), as it would move every other row's %; a host-bound row's is shown only."""
    row = {"problem": "gemm", "case": "c", "implementation": "array_api[jax]", "figure": "%", "lab": 100.0,
           "second": 100.0, "difference": 0.0, "paired_difference": 0.024, "headline": 100.0,
           "headline_difference": 0.0, "host_bound": False, "standard_error": 0.007, "standard_error_note": ""}
    assert timer_check.disagreeing([row], 0.02) == [row]
    assert "| +2.4% **over** |" in timer_check.markdown([row], 0.02)
    assert timer_check.disagreeing([{**row, "paired_difference": 0.019}], 0.02) == []
    host = {**row, "host_bound": True}
    assert timer_check.disagreeing([host], 0.02) == [] and "| +2.4% |" in timer_check.markdown([host], 0.02)


def test_timer_check_gives_each_difference_the_standard_error_of_its_windows():
    """The four medians a compute-bound % compares (the row's window and second timer, its reference's
    two), each sqrt(pi/2) noise / sqrt(batches), in quadrature; a difference over the tolerance but within
    two of them is marked so; an older record without the reference's second-timer spread uses its
    window's and says so."""
    t = {"sustained": {"noise": 0.04, "batches": 10}, "second_timer": {"noise": 0.02, "batches": 7},
         "adjacent": {"sustained_noise": 0.03, "sustained_batches": 12, "second_timer_noise": 0.01,
                      "second_timer_batches": 8}}
    se, note = timer_check.standard_error(t, compute_bound=True)
    terms = [(0.04, 10), (0.02, 7), (0.03, 12), (0.01, 8)]
    assert se == pytest.approx(math.sqrt(sum(math.pi / 2 * x**2 / n for x, n in terms))) and note == ""
    assert timer_check.standard_error(t, compute_bound=False)[0] == pytest.approx(
        math.sqrt(sum(math.pi / 2 * x**2 / n for x, n in terms[:2])))
    del t["adjacent"]["second_timer_noise"], t["adjacent"]["sustained_batches"]
    older, note = timer_check.standard_error(t, compute_bound=True)
    assert older == pytest.approx(math.sqrt(sum(math.pi / 2 * x**2 / n for x, n in
                                                [(0.04, 10), (0.02, 7), (0.03, 10), (0.03, 8)])))
    assert "not recorded" in note
    row = {"problem": "gemm", "case": "c", "implementation": "x", "figure": "%", "lab": 97.0, "second": 100.0,
           "difference": -0.03, "headline": 98.0, "headline_difference": -0.02, "host_bound": False,
           "standard_error": 0.02, "standard_error_note": ""}
    assert "**over** (within 2 of its standard error) | 2.0% |" in timer_check.markdown([row], 0.02)
    assert "within" not in timer_check.markdown([{**row, "standard_error": 0.01}], 0.02)
    unreferenced = {**row, "lab": None, "second": None, "difference": None, "headline": None,
                    "headline_difference": None}      # its reference did not run: no % to show, not 0.0
    assert "| none | none | no second figure |" in timer_check.markdown([unreferenced], 0.02)
    assert timer_check.markdown([{**row, "second_timer_mhz": (1844.0, 1777.0)}], 0.02).rstrip().endswith(
        "| 1844 / 1777 |")


def test_the_probe_that_sizes_the_window_waits_behind_the_gate_too(sim_clock):
    """An idle stream times one call from its host's dispatch: behind the wait, from the kernel's start,
    so a dispatch near the kernel's time is found (and the window held) rather than hidden in the probe."""
    sim = Sim(dispatch=2e-4, kernel=2.5e-4)
    sim_clock.append(sim)
    row = timing.sustained(Device(sim), sim.run, call_s=4.5e-4, seconds=0.05, dispatch_s=2e-4, hold=sim.hold)
    assert row["host_bound"] and row["host_hidden"] == "gate"
    assert row["median_ms"] == pytest.approx(0.25, rel=1e-6)


def test_the_report_says_where_a_sustained_window_was_held_or_showed_the_host():
    from harness.report.markdown import held_note
    assert held_note({"sustained": {"host_hidden": "gate", "exposed": False}}) == " (held)"
    assert held_note({"sustained": {"host_hidden": None, "exposed": True}}) == " (host)"
    assert held_note({"sustained": {"host_bound": False}}) == "" and held_note({}) == ""


NO_NVML_DEVICE = type("Device", (), {"pci_bus_id": "0000:00:00.0"})()   # NVML finds no such GPU: no clock


def test_the_reference_is_timed_cold_beside_the_row_and_its_batches_only_after(monkeypatch):
    """A, B, A with nothing between the cold loops: the back-to-back batches of the second timer (at the
    power limit) come after all three, or the row's cold loop would start from them, not its lead."""
    from types import SimpleNamespace

    import problems
    from harness.run.adjacent import Adjacent
    order = []
    engine = SimpleNamespace(cold=lambda run, crit: order.append(("cold", run.__name__)) or {"median_ms": 1.0})
    monkeypatch.setattr(second_timer, "batch", lambda run, sync, calls, clock=None: order.append(
        ("batch" if clock else "settle", run.__name__)) or (1.2e-3 if run.__name__ == "reference" else 1.0e-3, None))
    monkeypatch.setattr(second_timer, "calls_per_batch", lambda run, sync, *a: 10)
    monkeypatch.setenv(second_timer.ENABLED_VAR, "1")

    def reference():
        pass

    def row():
        pass
    session = SimpleNamespace(backend=SimpleNamespace(stream_context=lambda stream: contextlib.nullcontext()),
                              stream=None, device=SimpleNamespace(sync=lambda: None, device=NO_NVML_DEVICE))
    adjacent = Adjacent(device=None, scratch=None)
    monkeypatch.setattr(adjacent, "reference", lambda *a: ("array_api[torch]", session, reference))
    gemm = problems.get("gemm")
    timed = adjacent.around(gemm, gemm.headline_case(), "triton", engine,
                            lambda run: order.append(("cold", run.__name__)) or {"median_ms": 0.9})
    timing = timed(row)
    # each timed batch after its untimed settling one (the clock settles after the switch)
    batches = [("settle", "reference"), ("batch", "reference")] + \
        [("settle", "row"), ("batch", "row"), ("settle", "reference"), ("batch", "reference")] * second_timer.BATCHES
    assert order == [("cold", "reference"), ("cold", "row"), ("cold", "reference"), *batches]
    assert timing["adjacent"]["ms"] == 1.0 and timing["adjacent"]["second_timer_ms"] == pytest.approx(1.2)
    assert timing["second_timer"]["median_ms"] == pytest.approx(1.0)
    assert timing["second_timer"]["batches"] == second_timer.BATCHES
    # every batch kept, in order, the reference's too: a later analysis may pair each of the row's with
    # the reference's on either side of it
    assert timing["second_timer"]["batch_ms"] == pytest.approx([1.0] * second_timer.BATCHES)
    assert timing["adjacent"]["second_timer_batch_ms"] == pytest.approx([1.2] * (second_timer.BATCHES + 1))
    assert timing["adjacent"]["second_timer_batches"] == second_timer.BATCHES + 1


def test_a_vendor_row_whose_sustained_batches_spread_is_no_sustained_ceiling():
    """XLA's window on the H200: median 3.9% under cuBLAS's with its batches 8.8% apart, while the
    second timer had the two equal; the sustained ceiling is the fastest vendor row whose batches agree."""
    xla, torch_row, triton = (_row("array_api", "jax", 1.38, None, sustained_ms=1.58),
                              _row("array_api", "torch", 1.41, None, sustained_ms=1.64),
                              _row("triton", "", 1.51, None, sustained_ms=1.76))
    xla["timing"]["sustained"] = {"noise": 0.088}
    torch_row["timing"]["sustained"] = {"noise": 0.015}
    doc = {"references": {"theoretical": {}}, "records": [xla, torch_row, triton]}
    roofline.apply(doc)
    t = triton["timing"]
    assert t["pct_of_peak_sustained"] == pytest.approx(100 * 1.64 / 1.76)
    assert t["peak_basis_sustained"].startswith("array_api[torch]")
    assert t["pct_of_peak"] == pytest.approx(100 * 1.38 / 1.51)         # cold: the fastest, XLA's
    assert roofline.noisy(xla["timing"]) and not roofline.noisy(torch_row["timing"])


def test_a_reference_whose_file_cannot_load_leaves_the_row_without_one(monkeypatch):
    """On a node without array_api_compat, cuBLAS's file failed to import inside the row's worker and
    every GEMM row of another tool failed with it: the reference is skipped, the row is timed."""
    from types import SimpleNamespace

    import problems
    from harness.run.adjacent import Adjacent

    def why_not(problem, case):
        raise ModuleNotFoundError("No module named 'array_api_compat'")
    adjacent = Adjacent(device=None, scratch=None)
    monkeypatch.setattr(adjacent, "_session", lambda label: SimpleNamespace(why_not=why_not))
    gemm = problems.get("gemm")
    assert adjacent.reference(gemm, gemm.headline_case(), "gluon") is None

    def measure(run):
        return {"median_ms": 1.0}
    assert adjacent.around(gemm, gemm.headline_case(), "gluon", None, measure) is measure


def _stream_row(backend, ms, case="268435456-float32"):
    return {"problem": "elementwise", "case": case, "kind": "bench", "dtype": "float32", "backend": backend,
            "variant": "", "status": "ok", "work": {"bytes": 3 * 2**30, "flops": 0},
            "timing": {"device_ms_cold": ms, "device_ms_sustained": ms, "cold": {"sm_clock_mhz": 1980.0}}}


def test_a_vendor_kernel_of_the_pattern_faster_than_the_stream_is_the_ceiling():
    """On the H200 CUB's transform (cuda_compute) moved two reads and a write 1.3% faster than the lab's
    triad stream: where it is faster it is the elementwise ceiling; where it is slower, the stream is."""
    stream = 3 * 2**30 / 1e-3                       # bytes a second: 1 ms for the case
    refs = {"theoretical": {}, "triad_bytes_per_s": stream, "triad_bytes_per_s_sustained": stream}
    cub, nvrtc = _stream_row("cuda_compute", 0.987), _stream_row("nvrtc", 0.993)
    doc = {"references": refs, "records": [cub, nvrtc]}
    roofline.apply(doc)
    assert cub["timing"]["pct_of_peak"] == pytest.approx(100.0)
    assert nvrtc["timing"]["pct_of_peak"] == pytest.approx(100 * 0.987 / 0.993)
    assert nvrtc["timing"]["peak_basis"].startswith("cuda_compute (faster than the two-read one-write stream)")
    assert nvrtc["timing"]["reference"]["label"] == "cuda_compute"
    slow = {"references": refs, "records": [_stream_row("cuda_compute", 1.2), _stream_row("nvrtc", 0.993)]}
    roofline.apply(slow)
    assert slow["records"][1]["timing"]["pct_of_peak"] == pytest.approx(100 / 0.993)
    assert slow["records"][1]["timing"]["peak_basis"].startswith("two-read one-write stream, same run")


def test_the_rows_sustained_window_alternates_with_its_references(monkeypatch):
    """R, B, R, ..., B, R after the row's warm-up: the row's window in parts, each between two of its
    reference's, so the clock's drift over the window is in both figures alike; each side's parts pooled."""
    from types import SimpleNamespace

    import problems
    from harness.run import adjacent as adjacent_mod
    from harness.measure import stopping
    monkeypatch.setenv(stopping.WINDOW_SCALE_VAR, "2")      # every part twice as long, twice the batches
    order = []
    parts = adjacent_mod.SUSTAINED_PARTS
    seconds = 2 * timing.SUSTAINED_S["compute"] / parts
    batches = 2 * timing.SUSTAINED_BATCHES // parts

    def part(ms, mhz):
        return {"median_ms": ms, "batch_ms": [ms] * batches, "calls": batches, "window_s": seconds,
                "sm_clock_mhz": mhz}

    def reference():
        pass
    drift = iter(range(100))             # the clock drifts: each part slower than the one before
    holds = []

    def sustained(device, run, call_s, seconds, batches, dispatch_s, hold, settle_s):
        holds.append((dispatch_s, hold))
        assert settle_s == stopping.SWITCH_SETTLE_S       # each part after a switch: the clock settles first
        order.append((run.__name__, seconds, batches))
        return part(2.0 + 0.01 * next(drift), 1700.0)
    monkeypatch.setattr(timing, "sustained", sustained)
    monkeypatch.setattr(timing, "warm_up", lambda run, sync, seconds: {"dispatch_s": 3e-5})
    session = SimpleNamespace(backend=SimpleNamespace(stream_context=lambda stream: contextlib.nullcontext()),
                              stream=None, device=SimpleNamespace(sync=lambda: None, device=NO_NVML_DEVICE))
    adjacent = adjacent_mod.Adjacent(device=None, scratch=None)
    monkeypatch.setattr(adjacent, "reference", lambda *a: ("array_api[torch]", session, reference))
    gemm = problems.get("gemm")
    gate = object()                      # the engine's hold: the reference's host hidden as the row's is
    beside = adjacent.beside(gemm, gemm.headline_case(), "triton", gate)

    def row_window(seconds, batches, settle_s):
        assert settle_s == stopping.SWITCH_SETTLE_S
        order.append(("row", seconds, batches))
        return part(2.5 + 0.01 * next(drift), 1650.0)
    window = beside(row_window)
    assert order == [("reference", seconds, batches)] + [("row", seconds, batches),
                                                         ("reference", seconds, batches)] * parts
    assert window["parts"] == parts and window["batches"] == 2 * timing.SUSTAINED_BATCHES
    assert holds == [(3e-5, gate)] * (parts + 1)
    assert window["median_ms"] == pytest.approx(2.55) and window["sm_clock_mhz"] == 1650.0
    summary = adjacent_mod.summary("array_api[torch]", {"median_ms": 1.0}, {"median_ms": 1.0}, window=adjacent.windows)
    assert summary["sustained_ms"] == pytest.approx(2.05) and summary["sustained_sm_clock_mhz"] == 1700.0
    assert summary["sustained_batches"] == (parts + 1) * batches == len(summary["sustained_batch_ms"])
    monkeypatch.setattr(adjacent, "reference", lambda *a: adjacent_mod.SELF)
    assert adjacent.beside(gemm, gemm.headline_case(), "array_api[torch]") is None and adjacent.windows is None


def test_the_sustained_percent_is_against_the_reference_windows_beside_the_row():
    """Two rows whose own windows ran at other moments than cuBLAS's row: each is judged on the windows
    of cuBLAS timed before and after it; a noisy vendor row (XLA's) is no sustained ceiling."""
    torch_row = _row("array_api", "torch", 1.41, {"label": "array_api[torch]", "self": True}, sustained_ms=1.64)
    triton = _row("triton", "", 1.51, {**_beside(1.41), "sustained_ms": 1.70, "sustained_sm_clock_mhz": 1600.0},
                  sustained_ms=1.80)
    xla = _row("array_api", "jax", 1.38, {**_beside(1.41), "sustained_ms": 1.70}, sustained_ms=1.55)
    xla["timing"]["sustained"] = {"noise": 0.088}
    torch_row["timing"]["sustained"] = {"noise": 0.088}          # the reference: whatever its spread
    doc = {"references": {"theoretical": {}}, "records": [torch_row, triton, xla]}
    roofline.apply(doc)
    t = triton["timing"]
    assert t["pct_of_peak_sustained"] == pytest.approx(100 * 1.70 / 1.80)
    assert "timed before and after it" in t["peak_basis_sustained"] and t["peak_basis_sustained"].endswith("sustained")
    assert t["pct_of_peak"] == pytest.approx(100 * (1.41 / 1.51) / (1.41 / 1.38))    # cold: XLA is the fastest
    assert torch_row["timing"]["pct_of_peak_sustained"] == pytest.approx(100.0)
