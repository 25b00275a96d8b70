"""When a timer has sampled enough, apart from the timers (as pytest-benchmark keeps its statistics):
the stopping rule on the median's distribution-free confidence interval, the drift test that tells
a lead still settling from noise, and the summaries a record keeps. Pure Python, no GPU."""
from __future__ import annotations

import math
import os
import statistics
import time
from dataclasses import dataclass

# Sampling stops once the median is known this well: its distribution-free 95% interval (order
# statistics, so a few outlying samples do not hold it open as they hold a standard deviation) within
# PRECISION of it on either side, after MIN_SAMPLES and MIN_TIME_S of accumulated device time.
PRECISION = 0.005
Z_95 = 1.96
MIN_SAMPLES = 20
MIN_TIME_S = 0.05
# A bound on a row's cold sampling, for a median that never gets precise (a noisy host-bound tool).
TIMEOUT_S = 3.0
@dataclass
class Criterion:
    precision: float = PRECISION
    min_samples: int = MIN_SAMPLES
    min_time_s: float = MIN_TIME_S
    timeout_s: float = TIMEOUT_S


def summarize(samples_s: list[float]) -> dict:
    """Median, quartiles, mean, relative noise of samples in seconds (reported in ms)."""
    if not samples_s:
        return {"samples": 0}
    qs = statistics.quantiles(samples_s, n=4) if len(samples_s) > 1 else [samples_s[0]] * 3
    mean = statistics.fmean(samples_s)
    noise = statistics.stdev(samples_s) / mean if len(samples_s) > 1 and mean > 0 else None
    return {"median_ms": qs[1] * 1e3, "q1_ms": qs[0] * 1e3, "q3_ms": qs[2] * 1e3, "mean_ms": mean * 1e3,
            "min_ms": min(samples_s) * 1e3, "noise": noise, "samples": len(samples_s)}


# After a switch between two kernels at the power limit the clock takes about a tenth of a second to
# settle: in interleaved windows on one H200 the first 50 ms batch after a switch ran 2-11% off its
# part's median, the second 1-3%, the rest settled. Interleaved timing keeps this long after each switch
# out of its figures.
SWITCH_SETTLE_S = 0.1

# A factor on the length of every sustained window and on the second timer's batch count (`ways
# timer-check --window-scale`, which sets it for the workers): a comparison's standard error falls as
# the square root of its batches.
WINDOW_SCALE_VAR = "WAYS_WINDOW_SCALE"


def window_scale(roofline: str = "compute") -> float:
    """WINDOW_SCALE_VAR's factor (1 where unset) for a row of `roofline`; a value that is not a positive
    number is an error. A memory-bound row keeps 1: its timers agree within 0.5% there (51 of 51 rows
    on one H200), and its windows would take a check's device time for no precision it needs."""
    value = os.environ.get(WINDOW_SCALE_VAR, "1")
    try:
        scale = float(value)
    except ValueError:
        scale = 0.0
    if not scale > 0:
        raise ValueError(f"{WINDOW_SCALE_VAR} must be a positive number, not {value!r}")
    return 1.0 if roofline == "memory" else scale


# the standard error of a median of n samples from a normal spread, per unit of its standard deviation
# times sqrt(n): sqrt(pi / 2)
MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2)


def ratio_standard_error(parts: list[tuple[float | None, int | None]]) -> float | None:
    """The relative standard error of a ratio of medians (a row's speed against its reference's, one
    timer against another), from each median's relative noise and sample count: theirs in quadrature.
    None where a part has neither."""
    terms = [(MEDIAN_SE_FACTOR * noise / math.sqrt(n)) ** 2 for noise, n in parts if noise is not None and n]
    return math.sqrt(sum(terms)) if len(terms) == len(parts) else None


def median_interval(samples: list[float]) -> tuple[float, float]:
    """The distribution-free 95% confidence interval of the samples' median: the order statistics
    n/2 -+ Z_95 sqrt(n)/2 (the binomial's normal approximation; needs no model of the noise)."""
    ordered, n = sorted(samples), len(samples)
    half = Z_95 * math.sqrt(n) / 2
    return ordered[max(0, math.floor(n / 2 - half))], ordered[min(n - 1, math.ceil(n / 2 + half))]


def unsettled(samples: list[float], precision: float) -> int:
    """How many leading samples are the GPU still settling into the loop's own state: the first half,
    where its median and the second half's differ by more than `precision` and their 95% intervals
    are apart (a drift, not noise); else 0."""
    half = len(samples) // 2
    first, second = samples[:half], samples[half:]
    if half < 2:
        return 0
    m1, m2 = statistics.median(first), statistics.median(second)
    (lo1, hi1), (lo2, hi2) = median_interval(first), median_interval(second)
    apart = hi1 < lo2 or hi2 < lo1
    return half if apart and abs(m1 - m2) > precision * m2 else 0


SETTLED_FRACTION = 0.01       # a clock within this of the lead's last reading has settled


def settling(reads: list[tuple[float, float | None]]) -> dict:
    """(seconds, MHz) read through a cold lead -> its first and last clock and the seconds after which
    every reading stayed within SETTLED_FRACTION of the last (None without clock readings)."""
    mhz = [(t, m) for t, m in reads if m is not None]
    if not mhz:
        return {"samples": len(reads), "sm_clock_first_mhz": None, "sm_clock_last_mhz": None, "settled_after_s": None}
    last = mhz[-1][1]
    settled = 0.0
    for t, m in mhz:
        if abs(m - last) > SETTLED_FRACTION * last:
            settled = t
    return {"samples": len(reads), "sm_clock_first_mhz": mhz[0][1], "sm_clock_last_mhz": last,
            "settled_after_s": settled}


def done(samples, crit: Criterion, started: float, drop=None) -> str | None:
    """Why sampling stops now ("precision", "timeout"), or None. With `drop`, a GPU loop's: once the
    median is precise, a drifting lead (unsettled()) is given to drop(count) and sampling goes on."""
    if time.perf_counter() - started > crit.timeout_s:
        return "timeout"
    if len(samples) >= max(crit.min_samples, 5) and sum(samples) >= crit.min_time_s:
        low, high = median_interval(samples)
        median = statistics.median(samples)
        if max(median - low, high - median) <= crit.precision * median:
            lead = unsettled(samples, crit.precision) if drop is not None else 0
            if not lead:
                return "precision"
            drop(lead)
    return None
