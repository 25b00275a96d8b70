"""A second timer, independent of the lab's events, gate and stream: batches of back-to-back calls
timed on the host's clock with the whole device synchronized around each batch, so a tool that
launches on streams of its own (JAX's) is timed whole, as a user's loop would see it.

Works as follows:
1. One synchronized call sizes a batch to about BATCH_S of calls, at least MIN_CALLS: the first
   call's dispatch, which no batch can hide, is then under 1% of a batch for every tool measured.
2. Each of BATCHES batches: the device synchronized, the host clock read, the batch's calls queued
   back to back, the device synchronized again, the clock read.
3. The figure is the median batch's time over its calls; one synchronize's cost a batch (tens of
   microseconds) is under 0.1% of it. Where a clock is given (the SM clock from NVML), it is read
   once a batch, after its calls are queued and before the closing synchronize, while they run:
   at the power limit a row's % of its reference moves with the clock each ran at.
4. A compute-bound row's batches alternate with its reference's (interleaved()), each of the row's
   between two of the reference's: the % of the reference is taken over the same seconds of load.
   Each batch after a switch follows an untimed one of SWITCH_SETTLE_S: a 0.2 s batch right after
   the other kernel's ran 2-4% off, the clock still where that kernel had left it.

Constraints: no L2 flush and no gap between calls, so it is the sustained mode's check (a power-bound
kernel runs at another clock cold); a call whose dispatch is slower than its kernel is timed at its
dispatch, since nothing queues ahead of a device-wide synchronize.
"""
from __future__ import annotations

import contextlib
import os
import time

from harness.measure.stopping import SWITCH_SETTLE_S, summarize, window_scale

BATCH_S = 0.2
MIN_CALLS = 10
BATCHES = 7
ENABLED_VAR = "WAYS_SECOND_TIMER"     # "1": every timed GPU row is also timed this way (ways timer-check);
HEADLINE = "headline"                 # or "headline": the rows of each problem's headline case (a full run)


def wanted(problem, case) -> bool:
    """Whether this row is also timed by the second timer (ENABLED_VAR)."""
    setting = os.environ.get(ENABLED_VAR)
    return setting == "1" or (setting == HEADLINE and case.name == problem.headline_case().name)


def calls_per_batch(run, sync, batch_s: float = BATCH_S, min_calls: int = MIN_CALLS) -> int:
    """How many calls take about `batch_s`, from one synchronized call (at least `min_calls`)."""
    sync()
    t0 = time.perf_counter()
    run()
    sync()
    return max(min_calls, round(batch_s / max(time.perf_counter() - t0, 1e-7)))


def batch(run, sync, calls: int, clock=None) -> tuple[float, float | None]:
    """Seconds a call over one batch (the device synchronized, `calls` calls back to back, again
    synchronized) and `clock()` read as the batch runs (None without a clock)."""
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        run()
    mhz = clock() if clock else None
    sync()
    return (time.perf_counter() - t0) / calls, mhz


def figure(batches: list[tuple[float, float | None]], calls: int) -> dict:
    """The median batch's ms a call, the batches' spread and every batch; the mean SM clock where read."""
    samples, mhz = [b for b, _ in batches], [m for _, m in batches if m is not None]
    s = summarize(samples)
    return {"engine": "host-synchronized batches", "median_ms": s["median_ms"], "noise": s["noise"],
            "batches": len(samples), "calls_per_batch": calls, "batch_ms": [x * 1e3 for x in samples],
            "sm_clock_mhz": sum(mhz) / len(mhz) if mhz else None, "batch_sm_clock_mhz": mhz or None}


def scaled_batches(roofline: str = "compute") -> int:
    """BATCHES times the lab's window scale for a row of `roofline` (stopping.window_scale), at least one."""
    return max(1, round(BATCHES * window_scale(roofline)))


def host_batches(run, sync, batch_s: float = BATCH_S, batches: int | None = None, min_calls: int = MIN_CALLS,
                 clock=None) -> dict:
    """Median seconds a call over `batches` (scaled_batches()) host-timed, device-synchronized batches (in ms)."""
    batches = scaled_batches() if batches is None else batches
    calls = calls_per_batch(run, sync, batch_s, min_calls)
    return figure([batch(run, sync, calls, clock) for _ in range(batches)], calls)


def interleaved(run, reference, sync, reference_context=contextlib.nullcontext, batch_s: float = BATCH_S,
                batches: int | None = None, min_calls: int = MIN_CALLS, clock=None,
                settle_s: float = SWITCH_SETTLE_S) -> tuple[dict, dict]:
    """The row's figure and its reference's from alternating batches, each of the row's between two of
    the reference's (R, B, R, ..., B, R): both from the same seconds of load, so the GPU's drift
    between them (its clock moves by percents over seconds at the power limit) is in neither's ratio.
    `reference_context()` is entered around each of the reference's batches (its stream)."""
    def settled_batch(fn, calls, settle):
        if settle:
            batch(fn, sync, settle)          # untimed: the clock settles after the switch
        return batch(fn, sync, calls, clock)

    def reference_batch(calls=None, settle=0):
        with reference_context():
            return settled_batch(reference, calls, settle) if calls else \
                calls_per_batch(reference, sync, batch_s, min_calls)
    batches = scaled_batches() if batches is None else batches
    ref_calls, row_calls = reference_batch(), calls_per_batch(run, sync, batch_s, min_calls)
    ref_settle, row_settle = (max(1, round(calls * settle_s / batch_s)) if settle_s else 0
                              for calls in (ref_calls, row_calls))
    ref, row = [reference_batch(ref_calls, ref_settle)], []
    for _ in range(batches):
        row.append(settled_batch(run, row_calls, row_settle))
        ref.append(reference_batch(ref_calls, ref_settle))
    return figure(row, row_calls), figure(ref, ref_calls)
