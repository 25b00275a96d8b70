"""Timing engines that need no nvbench: CUDA events through cuda.core (same method as nvbench's
cold/batch measurement) and a host timer for CPU variants; the sustained mode, whatever engine
measured the cold one; plus the host-side call costs.

Two modes, because they differ where a kernel is power-bound (a large GEMM): cold samples each
start on a flushed L2 after a gap, so the GPU rests between them and boosts its clock; sustained
calls run back to back, as a loop in an application runs them, and the GPU settles at the clock its
power limit allows. Each mode records the mean SM clock it ran at.

Works as follows (on_gpu; both GPU engines):
1. A warm-up of back-to-back calls (WARMUP_S by roofline; a compute-bound one on until its calls settle,
   WARMUP_MAX_S at most: a compute-bound kernel runs into the power
   limit and needs longer to settle than a memory-bound one, whose time does not follow the clock).
2. The sustained window right after it, the warm-up as its lead (SUSTAINED_S, SUSTAINED_BATCHES).
3. A compute-bound row's cold lead (COLD_LEAD_S): untimed cold samples until the GPU's power average
   has left the window's limit.
4. Cold samples, each after an L2 flush (a memset of twice the L2 size, outside the timed window),
   until the median's 95% interval is within `precision` of it after `min_samples` and `min_time` of
   device time and the samples no longer drift (a drifting lead is dropped: unsettled()), or at
   `timeout` (which one is recorded). Samples under THROTTLE_FRACTION of the maximum SM clock are
   dropped; a row whose samples ran under LOW_CLOCK_FRACTION keeps its figure, flagged `low clock`.

Constraints: cold-only runs (`--quick`) skip steps 1-2 where the lead settles the GPU instead;
docs/METHOD.md gives the figures each constant was chosen from.
"""
from __future__ import annotations

import math
import os
import statistics
import time

from harness.measure.phases import PHASES
from harness.measure.stopping import Criterion, done, settling, summarize, window_scale

# Cold samples under this fraction of the maximum SM clock are dropped (a GPU that slow is idling or
# broken); between it and LOW_CLOCK_FRACTION they are kept and the row says its clock was low (a
# power-bound GEMM may run there from its first millisecond; its vendor rows are timed the same way).
THROTTLE_FRACTION = 0.5
LOW_CLOCK_FRACTION = 0.75


# Back-to-back calls before anything is timed, by the problem's roofline: every case starts from a GPU
# at its working clocks and temperature rather than from whatever the previous case left. A
# power-bound kernel (a GEMM) runs into its power limit and needs seconds to settle there, so a
# compute-bound warm-up goes on past WARMUP_S until the last SETTLE_WINDOW_S of calls ran as fast as
# the window before it, within SETTLE_TOLERANCE, or until WARMUP_MAX_S. One second was not enough on
# the H200: windows timed right after it ran 2-4% faster than the same calls seconds later (cute_dsl
# attention 1.730 ms a call after it, 1.803 ms by the second timer; cuDNN's windows 0.75 s apart 1.820
# and 1.920 ms, settled 1.825). A memory-bound kernel's time does not move with the SM clock.
WARMUP_S = {"compute": 1.0, "memory": 0.25}
WARMUP_MAX_S = {"compute": 4.0, "memory": 0.25}
SETTLE_WINDOW_S = 0.5
SETTLE_TOLERANCE = 0.005
SYNC_EVERY_S = 0.05        # the host synchronizes at least this often (every 8 calls at most), its marks
SYNC_CALLS = 8             # timing the windows; one synchronize's gap is then under 0.1% of the calls


def settled(marks: list[tuple[float, int]], window_s: float = SETTLE_WINDOW_S,
            tolerance: float = SETTLE_TOLERANCE) -> bool:
    """Whether the last `window_s` of back-to-back calls took as long a call as the `window_s` before
    them, within `tolerance`; `marks` are (seconds, calls done) at each synchronize."""
    end_s, end_calls = marks[-1]

    def at(t):      # the last mark at or before t
        return next(((s, c) for s, c in reversed(marks) if s <= t), None)
    mid, first = at(end_s - window_s), at(end_s - 2 * window_s)
    if first is None or mid is None or not (first[1] < mid[1] < end_calls):
        return False
    later = (end_s - mid[0]) / (end_calls - mid[1])
    earlier = (mid[0] - first[0]) / (mid[1] - first[1])
    return abs(later / earlier - 1) <= tolerance


@PHASES.timed("warm-up")
def warm_up(run, sync, seconds: float, max_seconds: float | None = None) -> dict:
    """Back-to-back calls for `seconds`, then on until they have settled (settled()) or `max_seconds`,
    so every case starts sampling from a GPU at its working clocks and temperature: the calls, the
    seconds, whether they settled, and the median seconds one call takes to return on the host (its
    dispatch)."""
    max_seconds = max(seconds, max_seconds or seconds)
    started, calls, dispatch, marks, every = time.perf_counter(), 0, [], [(0.0, 0)], 1
    done = False
    while not done:
        t0 = time.perf_counter()
        run()
        dispatch.append(time.perf_counter() - t0)
        calls += 1
        if calls % every == 0:
            sync()
            marks.append((time.perf_counter() - started, calls))
            (s0, c0), (s1, c1) = marks[-2], marks[-1]
            every = max(1, min(SYNC_CALLS, int(SYNC_EVERY_S / max((s1 - s0) / (c1 - c0), 1e-7))))
            done = s1 >= seconds and (s1 >= max_seconds or settled(marks))
    return {"calls": calls, "seconds": marks[-1][0], "settled": settled(marks) if max_seconds > seconds else None,
            "dispatch_s": statistics.median(dispatch)}


@PHASES.timed("host timing")
def host_call_costs(run, sync, budget_s: float = 0.05, max_calls: int = 200) -> dict:
    """Wall time of a synchronized call (what a Python caller waits for) and of the dispatch alone
    (run() returning, work still queued): the launch overhead a tool adds. Medians of at least 5
    calls, as many as `budget_s` allows: a few percent of a row's timing, not seconds."""
    sync()
    calls, launches = [], []
    started = time.perf_counter()
    while len(calls) < 5 or (time.perf_counter() - started < budget_s and len(calls) < max_calls):
        t0 = time.perf_counter()
        run()
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        launches.append(t1 - t0)
        calls.append(t2 - t0)
    return {"host_ms": statistics.median(calls) * 1e3, "launch_us": statistics.median(launches) * 1e6,
            "host_samples": len(calls)}


HOST_TIMEOUT_S = 3.0      # a CPU baseline rarely gets under 0.5% noise: do not wait 5 s for it


@PHASES.timed("sampling (cold)")
def host_engine(run, crit: Criterion | None = None) -> dict:
    """CPU variants: wall-clock samples of run(), same stopping rule, shorter time limit."""
    crit = crit or Criterion(timeout_s=HOST_TIMEOUT_S)
    run()
    samples, started, stop = [], time.perf_counter(), None
    while stop is None:
        t0 = time.perf_counter()
        run()
        samples.append(time.perf_counter() - t0)
        stop = done(samples, crit, started)
    s = summarize(samples)
    return {"engine": "host-timer", "device_ms_cold": None, "device_ms_warm": None,
            "cold": None, "warm": None, "host": s, "stopped_by": stop, "host_ms": s["median_ms"]}


class EventEngine:
    """CUDA events through cuda.core on the worker's stream."""
    ENGINE = "cuda-events"      # what a record's `engine` says measured it

    def __init__(self, device, crit: Criterion | None = None):
        from cuda.core import EventOptions
        self.dev = device.device
        self.stream = device.stream
        self.crit = crit or Criterion()
        timing = EventOptions(timing_enabled=True)
        self.start, self.stop = self.dev.create_event(timing), self.dev.create_event(timing)
        self.flush = self.dev.allocate(2 * self.dev.properties.l2_cache_size, stream=self.stream)
        self.clock = SmClock(device.device.pci_bus_id)

    def _elapsed_ms(self) -> float:
        self.stop.sync()
        return self.stop - self.start

    def _untimed(self, run) -> None:
        self.flush.fill(0, stream=self.stream)
        run()
        self.stream.sync()

    def lead(self, run, seconds: float) -> dict:
        """Cold samples, untimed, for `seconds`: the GPU settles into the cold loop's own state. The SM
        clock read after each says how long that took (settling())."""
        started, reads = time.perf_counter(), []
        while time.perf_counter() - started < seconds:
            self._untimed(run)
            reads.append((time.perf_counter() - started, self.clock.read()))
        return settling(reads)

    def cold(self, run, crit: Criterion | None = None) -> dict:
        crit = crit or self.crit
        run()                                        # warm-up: lazy loading, first-call JIT
        samples, throttled, clocks, settling = [], 0, [], []

        def drop(lead):
            settling.append(lead)
            del samples[:lead], clocks[:lead]
        started, stop = time.perf_counter(), None
        while stop is None:
            self.flush.fill(0, stream=self.stream)
            self.stream.record(self.start)
            run()
            self.stream.record(self.stop)
            ms = self._elapsed_ms()
            mhz = self.clock.read()
            if mhz is not None and mhz < THROTTLE_FRACTION * self.clock.max_mhz:
                throttled += 1
                time.sleep(0.05)
            else:
                samples.append(ms / 1e3)
                if mhz is not None:
                    clocks.append(mhz)
            stop = done(samples, crit, started, drop) if samples else (
                "timeout" if time.perf_counter() - started > crit.timeout_s else None)
        s = summarize(samples)
        s.update(stopped_by=stop, throttled_dropped=throttled, settling_dropped=sum(settling),
                 sm_clock_mhz=statistics.fmean(clocks) if clocks else None)
        return s

    def measure(self, run) -> dict:
        cold = self.cold(run)
        return {"engine": self.ENGINE, "cold": cold, "warm": None,
                "device_ms_cold": cold.get("median_ms"), "device_ms_warm": None,
                "stopped_by": cold.get("stopped_by")}


# Untimed cold samples between the sustained window and the cold figures, by the problem's roofline:
# the GPU's power average (over about a second) still holds the window's power limit, so a
# compute-bound cold loop that stops early runs at a lower clock, by how soon it stopped. On the H200
# every lead recorded settled within 0.33 s (`cold_lead.settled_after_s`); half a second keeps a margin.
# A memory-bound kernel keeps its clock and needs none.
COLD_LEAD_S = {"compute": 0.5, "memory": 0.0}
# Cold figures alone (`--quick`: no window before them) settled at once there: 52 of 55 leads at 0.0 s.
QUICK_COLD_LEAD_S = {"compute": 0.1, "memory": 0.0}   # the slowest of them took 0.06 s

MODES_VAR = "WAYS_TIMING_MODES"     # "cold": `ways run --quick` (a demo in minutes) has no sustained mode


def sustained_wanted() -> bool:
    return "sustained" in os.environ.get(MODES_VAR, "cold,sustained").split(",")


def on_gpu(device, run, measure, roofline: str = "compute", warmup_s: float | None = None,
           with_sustained: bool = True, hold=None, lead=None, beside=None) -> dict:
    """A GPU case's timing: the warm-up, the sustained window right after it (the warm-up is its
    lead: no gap between them), then the cold figures from `measure(run)` (nvbench or events).
    The sustained mode comes first so that one warm-up serves both: after the cold samples' rests
    the sustained mode needed a lead of its own (a second for a GEMM), and the timing of a full run
    spent 0.5 s a GEMM row more. No separate hot batch: the sustained mode is the back-to-back
    figure (device_ms_warm: None). `hold(seconds)` queues a GPU-side wait on the stream (the gated
    engine's), which hides a host-bound tool's dispatch from the sustained window; `lead(run, seconds)`
    (the engine's) runs untimed cold samples for COLD_LEAD_S before the cold ones count, so that
    every row's cold figures come from the cold loop's own state, not the sustained window's.
    `beside(window)` runs the row's window (a function of its seconds and batches) in parts, each
    between two of its reference's (adjacent.py)."""
    default_warmup, warmup_s = warmup_s is None, WARMUP_S[roofline] if warmup_s is None else warmup_s
    lead_s = (COLD_LEAD_S if with_sustained else QUICK_COLD_LEAD_S)[roofline] if lead is not None else 0.0
    # cold figures alone (`--quick`): the lead settles the GPU in the cold loop's state, no warm-up first
    warm = warm_up(run, device.sync, warmup_s, WARMUP_MAX_S[roofline] if default_warmup else None) \
        if with_sustained or not lead_s else {"calls": 0, "seconds": 0.0, "settled": None, "dispatch_s": None}
    calls, dispatch_s = warm["calls"], warm["dispatch_s"]

    def row_window(seconds=None, batches=None, settle_s=0.0):
        scale = window_scale(roofline)
        return sustained(device, run, warm["seconds"] / max(calls, 1),
                         seconds=SUSTAINED_S[roofline] * scale if seconds is None else seconds,
                         batches=round(SUSTAINED_BATCHES * scale) if batches is None else batches,
                         dispatch_s=dispatch_s, hold=hold, settle_s=settle_s)
    window = (beside(row_window) if beside else row_window()) if with_sustained else None
    with PHASES("sampling (cold)"):
        lead_state = lead(run, lead_s) if lead_s else None
        timing = measure(run)
    timing["warmup_calls"], timing["cold_lead_s"], timing["cold_lead"] = calls, lead_s, lead_state
    timing["warm_up"] = {k: warm[k] for k in ("seconds", "settled")}
    timing["sustained"] = window
    timing["device_ms_sustained"] = (window or {}).get("median_ms")
    return timing


# The timed window: 10 batches; a memory-bound kernel's batches agree closely (its time does not move
# with the SM clock), so a quarter second of them is enough, and the full run's GPU time is shorter.
SUSTAINED_S = {"compute": 0.5, "memory": 0.25}
SUSTAINED_BATCHES = 10
# A call whose dispatch takes at least this share of its device time is host-bound back to back: its
# window is queued behind a GPU-side wait that lasts the dispatch of the whole window (times
# HOLD_MARGIN), in at most HELD_CALLS calls, which a stream's queue takes without blocking the host.
HOST_BOUND_SHARE = 0.5
HOLD_MARGIN = 1.5
HELD_CALLS = 200
PROBE_HOLD_S = 2e-3       # the one call that sizes the window, behind a wait as long as a cold sample's gate


@PHASES.timed("sampling (sustained)")
def sustained(device, run, call_s: float, seconds: float = SUSTAINED_S["compute"],
              batches: int = SUSTAINED_BATCHES, dispatch_s: float | None = None, hold=None,
              settle_s: float = 0.0) -> dict:
    """Back-to-back calls (no L2 flush, no gap) right after on_gpu's warm-up, which is their lead:
    about `seconds` timed as `batches` consecutive batches by events on the stream; the SM clock is
    read while they run. `call_s` is the measured wall time of one call, so a launch-bound call
    does not run for minutes. Where the host's dispatch (`dispatch_s`) keeps up with the device
    less than HOST_BOUND_SHARE allows and `hold` is given, the window waits behind it while the host
    queues every call (`host_hidden`); `exposed` says the wait ended before the last was queued.
    `settle_s`: batches covering this long run first, timed but out of the figure (`settling_batch_ms`),
    where the window follows another kernel's (an interleaved part: the clock settles after a switch)."""
    from cuda.core import EventOptions
    stream, opts = device.stream, EventOptions(timing_enabled=True)
    events = [device.device.create_event(opts) for _ in range(batches + 1)]
    if hold is not None:         # the probe behind a wait too: a tool on a stream of its own (JAX) is
        hold(PROBE_HOLD_S)       # otherwise timed from its host's dispatch, and never found host-bound
    stream.record(events[0])
    run()
    stream.record(events[1])
    events[1].sync()
    one_s = max((events[1] - events[0]) / 1e3, 1e-7)
    host_bound = dispatch_s is not None and dispatch_s >= HOST_BOUND_SHARE * one_s
    held = host_bound and hold is not None
    per_batch = max(1, int(seconds / batches / max(one_s, call_s)))
    if held:
        per_batch = max(1, min(int(seconds / batches / one_s), HELD_CALLS // batches))
    settle = math.ceil(settle_s / (seconds / batches) - 1e-9) if settle_s > 0 else 0
    batches += settle
    events += [device.device.create_event(opts) for _ in range(settle)]
    if held:
        hold(HOLD_MARGIN * dispatch_s * per_batch * batches)
    clock, mhz = SmClock(device.device.pci_bus_id), []
    stream.record(events[0])
    for k in range(batches):
        for _ in range(per_batch):
            run()
        stream.record(events[k + 1])
        if not held:
            mhz.append(clock.read())
    exposed = held and events[0].is_done
    while not events[-1].is_done:
        mhz.append(clock.read())
        time.sleep(0.01)
    settling_s = [(events[k + 1] - events[k]) / 1e3 / per_batch for k in range(settle)]
    batch_s = [(events[k + 1] - events[k]) / 1e3 / per_batch for k in range(settle, batches)]
    s = summarize(batch_s)
    read = [m for m in mhz[settle:] if m is not None]
    s.update(batch_ms=[b * 1e3 for b in batch_s], calls=per_batch * batches, batches=batches - settle,
             window_s=seconds, settling_batch_ms=[b * 1e3 for b in settling_s],
             l2_flushed=False,
             dispatch_us=None if dispatch_s is None else dispatch_s * 1e6, host_bound=host_bound,
             host_hidden="gate" if held and not exposed else None, exposed=exposed if held else None,
             sm_clock_mhz=statistics.fmean(read) if read else None,
             sm_clock_note=None if read else clock.why_not)
    return s


def pooled(parts: list[dict]) -> dict:
    """One sustained figure from the windows of its parts (each `sustained()`'s): the statistics of all
    their batches, the clock of all, the calls summed; host-hidden only where every part was."""
    batch_ms = [b for p in parts for b in p["batch_ms"]]
    clocks = [p["sm_clock_mhz"] for p in parts if p.get("sm_clock_mhz")]
    dispatch = [p["dispatch_us"] for p in parts if p.get("dispatch_us") is not None]
    exposed = [p["exposed"] for p in parts if p.get("exposed") is not None]
    s = summarize([b / 1e3 for b in batch_ms])
    s.update(batch_ms=batch_ms, calls=sum(p["calls"] for p in parts), batches=len(batch_ms),
             settling_batch_ms=[b for p in parts for b in p.get("settling_batch_ms") or []],
             window_s=sum(p["window_s"] for p in parts), parts=len(parts), l2_flushed=False,
             dispatch_us=max(dispatch) if dispatch else None, host_bound=any(p.get("host_bound") for p in parts),
             host_hidden="gate" if all(p.get("host_hidden") for p in parts) else None,
             exposed=any(exposed) if exposed else None,
             sm_clock_mhz=statistics.fmean(clocks) if clocks else None,
             sm_clock_note=None if clocks else parts[0].get("sm_clock_note"))
    return s


class SmClock:
    """The current SM clock of one GPU (by PCI bus id) from NVML, where nvidia-ml-py is installed."""

    def __init__(self, pci_bus_id: str):
        self.max_mhz, self.why_not, self._nvml = None, None, None
        try:
            import pynvml
            pynvml.nvmlInit()
            self._handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id.encode())
            self.max_mhz = pynvml.nvmlDeviceGetMaxClockInfo(self._handle, pynvml.NVML_CLOCK_SM)
            self._nvml = pynvml
        except Exception as exc:
            self.why_not = f"no SM clock: NVML unusable ({type(exc).__name__}: {exc})"

    def read(self) -> float | None:
        if self._nvml is None:
            return None
        return float(self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_SM))

    def power_w(self) -> float | None:
        """The same GPU's board power now, watts."""
        return None if self._nvml is None else self._nvml.nvmlDeviceGetPowerUsage(self._handle) / 1e3


def cost(records: list[dict]) -> dict | None:
    """About how long the timed rows held the GPU for each part of the method, from their records
    (seconds): cold sampling (its wall time and its lead), the sustained mode (its timed calls),
    warm-up calls and host timing; and the rows nvbench stopped at its timeout with no cold sample
    (all dropped as throttled), whose sampling bought nothing."""
    timed = [r["timing"] for r in records if r.get("timing")]
    if not timed:
        return None
    out = {"rows": len(timed), "cold_s": 0.0, "sustained_s": 0.0, "warm_up_s": 0.0, "host_s": 0.0,
           "no_cold_sample": 0, "no_cold_sample_s": 0.0}
    for t in timed:
        cold, sus = t.get("cold") or {}, t.get("sustained") or {}
        call_ms = t.get("device_ms_sustained") or t.get("device_ms_cold") or 0.0
        out["cold_s"] += (cold.get("walltime_s") or 0.0) + (t.get("cold_lead_s") or 0.0)
        # lead_s: older records, whose sustained mode had a lead of its own
        out["sustained_s"] += (sus.get("lead_s") or 0.0) + (sus.get("calls") or 0) * (sus.get("median_ms") or 0.0) / 1e3
        out["warm_up_s"] += (t.get("warmup_calls") or 0) * call_ms / 1e3
        out["host_s"] += (t.get("host_samples") or 0) * (t.get("host_ms") or 0.0) / 1e3
        if t.get("device_ms_cold") is None and cold.get("walltime_s"):
            out["no_cold_sample"] += 1
            out["no_cold_sample_s"] += cold["walltime_s"]
    return {k: round(v, 1) if isinstance(v, float) else v for k, v in out.items()}
