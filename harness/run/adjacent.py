"""The reference timed beside each compute-bound row, in the row's own worker and GPU state: its
cold samples right before and right after the row's (A, B, A), by the same engine on the same
stream, so a row's % is against a reference measured in the state it was (roofline.py).

Works as follows:
1. For a compute-bound problem, the first of its `adjacent_reference` implementations that loads
   here and takes the case is built on its own inputs of the same case, in this worker.
2. Its cold samples (REFERENCE_CRIT: a short run of the same stopping rule) are taken right before
   and after the row's, all three after the row's cold lead; with the second timer on, the host-timed
   batches follow them, the row's alternating with its reference's (second_timer.interleaved).
3. The sustained mode interleaved too (beside()): after the row's warm-up has settled
   (timing.warm_up), its window in SUSTAINED_PARTS parts, each between two of the reference's, so
   the sustained % is over the same seconds of load for both, as the second timer's is; each part's
   first SWITCH_SETTLE_S out of its figure (the clock settling after the switch); a host-bound
   reference's parts behind the engine's GPU-side wait, as a host-bound row's window is.
4. The row's timing keeps the figures and their mean SM clock under `adjacent` (the reference's
   own row: `{"self": True}`).

Constraints: a reference that cannot load, build or run here (no torch) leaves the row without one
(never fails it): roofline then judges it on the vendor rows of the run.
"""
from __future__ import annotations

import statistics

from harness.measure import second_timer, timing as timing_mod
from harness.measure.stopping import SWITCH_SETTLE_S, Criterion, window_scale
from harness.run import registry
from harness.run.session import Session

REFERENCE_CRIT = Criterion(min_samples=10, min_time_s=0.05, timeout_s=1.0)
# The row's sustained window in this many parts, each between two of its reference's parts of the same
# length: at the power limit the clock moves by percents within a second (the H200's windows of a
# quarter second each side of a row's read up to 7% apart), and alternating tenths of a second put
# that drift into the row's figure and its reference's alike (a part's two batches stay over 10 ms
# each on every headline case).
SUSTAINED_PARTS = 5
REFERENCE_PROBE_S = 0.05    # the reference's calls that measure its dispatch before its first part
SELF = "self"       # the row is its case's reference: its own samples are the reference's


class Adjacent:
    """The adjacent references of one worker: a Session per reference on the worker's device."""

    def __init__(self, device, scratch):
        self.device, self.scratch = device, scratch
        self.sessions: dict[str, Session | None] = {}
        self.built: dict[tuple[str, str], object] = {}
        self.windows: tuple[dict, dict] | None = None     # the reference's sustained windows, this row's

    def _session(self, label: str) -> Session | None:
        if label not in self.sessions:
            try:
                name, variant = registry.parse_backend(label)
                self.sessions[label] = Session(name, variant or "", device=self.device)
            except Exception:
                self.sessions[label] = None
        return self.sessions[label]

    def reference(self, problem, case, own_label: str):
        """(label, its session, its run) for this case; SELF where the row is the reference (the first
        of them that takes the case); None where none loads here or takes the case."""
        if problem.roofline != "compute":
            return None
        for label in problem.adjacent_reference:
            if label == own_label:
                return SELF
            s = self._session(label)
            try:                            # its file's imports too: one that cannot load here is skipped
                if s is None or s.why_not(problem.name, case):
                    continue
            except Exception:
                continue
            key = (label, case.name)
            if key not in self.built:
                self.built.clear()          # one case's reference at a time: its inputs' memory
                try:
                    b = s.prepare(problem, case, case.seed, self.scratch)
                    s.call(b.run, b.outputs)
                except Exception:           # the row is not failed for its reference's fault
                    s.device.sync()
                    continue
                self.built[key] = b.run
            return label, s, self.built[key]
        return None

    def beside(self, problem, case, own_label: str, hold=None):
        """A function of the row's sustained window that runs it in SUSTAINED_PARTS parts, each between
        two of its reference's (R, B, R, ..., B, R), keeping the reference's pooled parts for around()'s
        summary; None where the row is the reference or has none. `hold` (the engine's GPU-side wait on
        the stream the reference shares) hides a host-bound reference's dispatch as the row's is hidden."""
        self.windows = None
        ref = self.reference(problem, case, own_label)
        if ref is None or ref is SELF:
            return None
        _, s, run = ref
        scale = window_scale()
        seconds = timing_mod.SUSTAINED_S["compute"] * scale / SUSTAINED_PARTS
        batches = max(1, round(timing_mod.SUSTAINED_BATCHES * scale) // SUSTAINED_PARTS)

        def reference_part(dispatch_s):
            with s.backend.stream_context(s.stream):
                return timing_mod.sustained(s.device, run, 0.0, seconds=seconds, batches=batches,
                                            dispatch_s=dispatch_s, hold=hold, settle_s=SWITCH_SETTLE_S)

        def windows(row_window):
            with s.backend.stream_context(s.stream):     # the reference's dispatch, as the row's warm-up measures its
                dispatch_s = timing_mod.warm_up(run, s.device.sync, REFERENCE_PROBE_S)["dispatch_s"]
            refs, rows = [reference_part(dispatch_s)], []
            for _ in range(SUSTAINED_PARTS):
                rows.append(row_window(seconds=seconds, batches=batches, settle_s=SWITCH_SETTLE_S))
                refs.append(reference_part(dispatch_s))
            self.windows = timing_mod.pooled(refs)
            return timing_mod.pooled(rows)
        return windows

    def around(self, problem, case, own_label: str, engine, measure):
        """`measure` with the reference's cold samples before and after it (A, B, A)."""
        self.windows = None
        ref = self.reference(problem, case, own_label)
        if ref is None:
            return measure
        if ref is SELF:
            def itself(engine_run):
                return {**measure(engine_run), "adjacent": {"label": own_label, "self": True}}
            return itself
        label, s, run = ref

        second = second_timer.wanted(problem, case)

        def timed(engine_run):
            # the three cold loops back to back, in the state the row's lead left; the host-timed
            # batches (back to back, at the power limit) only after them, or the row's cold loop would
            # start from the reference's batches instead of from its lead
            with s.backend.stream_context(s.stream):
                before = engine.cold(run, REFERENCE_CRIT)
            timing = measure(engine_run)
            with s.backend.stream_context(s.stream):
                after = engine.cold(run, REFERENCE_CRIT)
            second_reference = None
            if second:               # the row's second figure from batches alternating with its reference's
                timing["second_timer"], second_reference = second_timer.interleaved(
                    engine_run, run, s.device.sync, lambda: s.backend.stream_context(s.stream),
                    clock=timing_mod.SmClock(s.device.device.pci_bus_id).read)
            timing["adjacent"] = summary(label, before, after, second_reference, self.windows)
            return timing
        return timed


def summary(label: str, before: dict, after: dict, second: dict | None = None, window: dict | None = None) -> dict:
    """The reference's two cold figures and their mean, as a row's timing keeps them; the second
    timer's and the sustained window's (its parts pooled) where they were taken."""
    ms = [x["median_ms"] for x in (before, after) if x.get("median_ms")]
    mhz = [x["sm_clock_mhz"] for x in (before, after) if x.get("sm_clock_mhz")]
    watts = [x["power_w"] for x in (before, after) if x.get("power_w")]
    out = {"label": label, "before_ms": before.get("median_ms"), "after_ms": after.get("median_ms"),
           "ms": statistics.fmean(ms) if len(ms) == 2 else None,
           "sm_clock_mhz": statistics.fmean(mhz) if mhz else None,
           "power_w": statistics.fmean(watts) if watts else None}
    if second and second.get("median_ms"):
        out.update(second_timer_ms=second["median_ms"], second_timer_noise=second.get("noise"),
                   second_timer_batches=second.get("batches"), second_timer_batch_ms=second.get("batch_ms"),
                   second_timer_sm_clock_mhz=second.get("sm_clock_mhz"))
    if window and window.get("median_ms"):
        out.update(sustained_ms=window["median_ms"], sustained_noise=window.get("noise"),
                   sustained_batches=window.get("batches") or window.get("samples"),
                   sustained_batch_ms=window.get("batch_ms"),
                   sustained_sm_clock_mhz=window.get("sm_clock_mhz"))
    return out
