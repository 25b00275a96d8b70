"""Achieved rate and % of peak for each timed record, computed once the whole run is in:
memory-bound problems against the copy bandwidth measured in the run, compute-bound ones against
the vendor library's row for the same case; both also against the theoretical peak."""
from __future__ import annotations

import problems
from harness.report import impl_label


def _seconds(timing: dict) -> float | None:
    ms = timing.get("device_ms_cold") or timing.get("host_ms")
    return ms / 1e3 if ms else None


def achieved(record: dict) -> tuple[float, str] | None:
    t, work = record.get("timing") or {}, record.get("work") or {}
    secs = _seconds(t)
    if not secs or not work:
        return None
    if problems.get(record["problem"]).roofline == "compute":
        return work["flops"] / secs / 1e12, "TFLOP/s"
    return work["bytes"] / secs / 1e9, "GB/s"


def apply(doc: dict) -> None:
    refs = doc.get("references") or {}
    theo = refs.get("theoretical") or {}
    copy_gbs = refs["copy_bytes_per_s"] / 1e9 if refs.get("copy_bytes_per_s") else None
    rates = {}
    for r in doc["records"]:
        a = achieved(r) if r["status"] == "ok" else None
        if a:
            rates[(r["problem"], r["case"], impl_label(r))] = a[0]
    for r in doc["records"]:
        t = r.get("timing")
        a = achieved(r) if r["status"] == "ok" and t else None
        if not a:
            continue
        value, unit = a
        on_gpu = t.get("device_ms_cold") is not None
        problem = problems.get(r["problem"])
        t.update(achieved=value, unit=unit, pct_of_peak=None, peak_basis=None, pct_of_theoretical=None)
        if not on_gpu:
            t["peak_basis"] = "host timer: no GPU peak applies"
            continue
        if problem.roofline == "compute":
            vendor = next(((label, rates[(r["problem"], r["case"], label)]) for label in problem.vendor
                           if (r["problem"], r["case"], label) in rates), None)
            if vendor:
                t["pct_of_peak"] = 100 * value / vendor[1]
                t["peak_basis"] = f"{vendor[0]} on the same case, same run"
            peak = (theo.get("flops_per_s") or {}).get(r["dtype"])
            if peak:
                t["pct_of_theoretical"] = 100 * value * 1e12 / peak
        else:
            if copy_gbs:
                t["pct_of_peak"] = 100 * value / copy_gbs
                t["peak_basis"] = "device-to-device copy, same run"
            if theo.get("memory_bytes_per_s"):
                t["pct_of_theoretical"] = 100 * value * 1e9 / theo["memory_bytes_per_s"]
        if t["pct_of_theoretical"] is not None and t["pct_of_theoretical"] > 100:
            t["suspect"] = "faster than the theoretical peak: timing or correctness needs a second look"
