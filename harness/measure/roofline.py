"""Achieved rate and % of peak for each timed record, computed once the whole run is in:
memory-bound problems against the copy bandwidth measured in the run, compute-bound ones against
the vendor library's row for the same case; both also against the theoretical peak."""
from __future__ import annotations

import problems
from harness.measure.timing import THROTTLE_FRACTION
from harness.results.records import impl_label

MODES = {"cold": "device_ms_cold", "sustained": "device_ms_sustained"}
SUFFIX = {"cold": "", "sustained": "_sustained"}
# A memory-bound kernel moves at least its bytes: beyond the copy measured in the same run by more
# than this, its timing or its output deserves a second look (the best real rows reach 102%).
COPY_MARGIN_PCT = 105.0


def _seconds(timing: dict, mode: str = "cold") -> float | None:
    ms = timing.get(MODES[mode]) or (timing.get("host_ms") if mode == "cold" else None)
    return ms / 1e3 if ms else None


def achieved(record: dict, mode: str = "cold") -> tuple[float, str] | None:
    t, work = record.get("timing") or {}, record.get("work") or {}
    secs = _seconds(t, mode)
    if not secs or not work:
        return None
    if problems.get(record["problem"]).roofline == "compute":
        return work["flops"] / secs / 1e12, "TFLOP/s"
    return work["bytes"] / secs / 1e9, "GB/s"


def apply(doc: dict) -> None:
    """Fill achieved rate, % of peak and % of theoretical in both timing modes, and the suspect
    flag, on every timed ok record."""
    refs = doc.get("references") or {}
    theo = refs.get("theoretical") or {}
    copy_gbs = {"cold": refs.get("copy_bytes_per_s"), "sustained": refs.get("copy_bytes_per_s_sustained")}
    copy_gbs = {m: v / 1e9 if v else None for m, v in copy_gbs.items()}
    rates = {m: {} for m in MODES}
    for r in doc["records"]:
        for m in MODES:
            a = achieved(r, m) if r["status"] == "ok" else None
            if a:
                rates[m][(r["problem"], r["case"], impl_label(r))] = a[0]
    for r in doc["records"]:
        t = r.get("timing")
        if r["status"] == "ok" and t and t.get("engine") != "host-timer" and not t.get("device_ms_cold"):
            t["suspect"] = no_cold_time(t)
            continue
        a = achieved(r) if r["status"] == "ok" and t else None
        if not a:
            continue
        problem = problems.get(r["problem"])
        t.update(unit=a[1], suspect=None)
        for m in MODES:
            value = (achieved(r, m) or (None,))[0]
            fields = {"achieved": value, "pct_of_peak": None, "peak_basis": None, "pct_of_theoretical": None}
            t.update({k + SUFFIX[m]: v for k, v in fields.items()})
            if value is None:
                continue
            if t.get(MODES[m]) is None:
                t["peak_basis"] = "host timer: no GPU peak applies"
                continue
            if problem.roofline == "compute":
                vendor = next(((label, rates[m][(r["problem"], r["case"], label)]) for label in problem.vendor
                               if (r["problem"], r["case"], label) in rates[m]), None)
                if vendor:
                    t["pct_of_peak" + SUFFIX[m]] = 100 * value / vendor[1]
                    t["peak_basis" + SUFFIX[m]] = f"{vendor[0]} on the same case, same run, {m}"
                peak = (theo.get("flops_per_s") or {}).get(r["dtype"])
                if peak:
                    t["pct_of_theoretical" + SUFFIX[m]] = 100 * value * 1e12 / peak
            else:
                if copy_gbs[m]:
                    t["pct_of_peak" + SUFFIX[m]] = 100 * value / copy_gbs[m]
                    t["peak_basis" + SUFFIX[m]] = f"device-to-device copy, same run, {m}"
                if theo.get("memory_bytes_per_s"):
                    t["pct_of_theoretical" + SUFFIX[m]] = 100 * value * 1e9 / theo["memory_bytes_per_s"]
        t["suspect"] = suspect(problem.roofline, t)


def suspect(roofline: str, t: dict) -> str | None:
    """Why a timed ok result is not believable, or None. Judged on the cold figures (L2 flushed),
    and on the sustained ones for compute-bound cases (an unflushed L2 lets a small memory-bound
    case beat DRAM honestly)."""
    theo = [t.get("pct_of_theoretical")] + ([t.get("pct_of_theoretical_sustained")] if roofline == "compute" else [])
    over = max((p for p in theo if p is not None), default=None)
    if over is not None and over > 100:
        return f"{over:.0f}% of the theoretical peak: timing or correctness needs a second look"
    if roofline == "memory" and (t.get("pct_of_peak") or 0) > COPY_MARGIN_PCT:
        return (f"{t['pct_of_peak']:.0f}% of the copy measured in the same run: a kernel that moves these bytes "
                "cannot beat it by that much")
    return None


def no_cold_time(t: dict) -> str:
    """Why a timed record has no cold figure."""
    cold, clock = t.get("cold") or {}, (t.get("sustained") or {}).get("sm_clock_mhz")
    if cold.get("stopped_by") == "timeout" and not cold.get("samples"):
        return (f"no cold sample before the timeout: samples taken below {THROTTLE_FRACTION:.0%} of the maximum "
                "SM clock are dropped as throttled" + (f" (back to back it ran at {clock:.0f} MHz)" if clock else ""))
    return "the GPU timer saw no time on the lab's stream: the work ran on another stream, or not at all"
