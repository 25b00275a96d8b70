"""A second timer, independent of the lab's events, gate and stream: batches of back-to-back calls
timed on the host's clock with the whole device synchronized around each batch, so a tool that
launches on streams of its own (JAX's) is timed whole, as a user's loop would see it.

Works as follows:
1. One synchronized call sizes a batch to about BATCH_S of calls, at least MIN_CALLS: the first
   call's dispatch, which no batch can hide, is then under 1% of a batch for every tool measured.
2. Each of BATCHES batches: the device synchronized, the host clock read, the batch's calls queued
   back to back, the device synchronized again, the clock read.
3. The figure is the median batch's time over its calls; one synchronize's cost a batch (tens of
   microseconds) is under 0.1% of it.

Constraints: no L2 flush and no gap between calls, so it is the sustained mode's check (a power-bound
kernel runs at another clock cold); a call whose dispatch is slower than its kernel is timed at its
dispatch, since nothing queues ahead of a device-wide synchronize.
"""
from __future__ import annotations

import os
import time

from harness.measure.stopping import summarize

BATCH_S = 0.2
MIN_CALLS = 10
BATCHES = 7
ENABLED_VAR = "WAYS_SECOND_TIMER"     # "1": every timed GPU row is also timed this way (ways timer-check);
HEADLINE = "headline"                 # or "headline": the rows of each problem's headline case (a full run)


def wanted(problem, case) -> bool:
    """Whether this row is also timed by the second timer (ENABLED_VAR)."""
    setting = os.environ.get(ENABLED_VAR)
    return setting == "1" or (setting == HEADLINE and case.name == problem.headline_case().name)


def host_batches(run, sync, batch_s: float = BATCH_S, batches: int = BATCHES, min_calls: int = MIN_CALLS) -> dict:
    """Median seconds a call over `batches` host-timed, device-synchronized batches (in ms)."""
    sync()
    t0 = time.perf_counter()
    run()
    sync()
    per_batch = max(min_calls, round(batch_s / max(time.perf_counter() - t0, 1e-7)))
    samples = []
    for _ in range(batches):
        sync()
        t0 = time.perf_counter()
        for _ in range(per_batch):
            run()
        sync()
        samples.append((time.perf_counter() - t0) / per_batch)
    s = summarize(samples)
    return {"engine": "host-synchronized batches", "median_ms": s["median_ms"], "noise": s["noise"],
            "batches": batches, "calls_per_batch": per_batch}
