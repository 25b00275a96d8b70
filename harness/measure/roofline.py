"""Achieved rate and % of peak for each timed record, computed once the whole run is in:
memory-bound problems against the ceiling of their access pattern measured in the run (a copy for
read + write, a read stream for a reduction; Problem.ceiling), or a vendor's own kernel of that pattern
where it was faster (Problem.ceiling_rows), compute-bound ones against the
fastest vendor path for the same case (each row and each vendor row against the reference timed
beside it in the same mode, adjacent.py; without one, the vendor rows of the run, sustained those
whose batches agree); both also against
the theoretical peak. A row timed at a clock off its reference's keeps its figure and says so."""
from __future__ import annotations

import problems
from harness.measure.timing import LOW_CLOCK_FRACTION, THROTTLE_FRACTION
from harness.results.records import impl_label

MODES = {"cold": "device_ms_cold", "sustained": "device_ms_sustained"}
SUFFIX = {"cold": "", "sustained": "_sustained"}
# A memory-bound kernel moves at least its bytes: beyond the ceiling of its access pattern measured
# in the same run by more than this, its timing or its output deserves a second look (the best real
# rows reach 102-104% of the copy).
COPY_MARGIN_PCT = 105.0
CEILING_BASIS = {"copy": "device-to-device copy", "read": "read stream", "triad": "two-read one-write stream"}
# A row whose cold samples ran at an SM clock further than this from its reference's (the ceiling's
# samples, or the vendor row's) was timed in another GPU state: its figure stands and says so.
CLOCK_TOLERANCE = 0.03
# A vendor row whose sustained batches spread more than this (stdev / mean) is no sustained ceiling: on
# the H200, XLA's 8192^3 GEMM window spread 8.8% (its calls hand off between JAX's stream and the lab's)
# and its median was 3.9% under cuBLAS's while the second timer had them equal (1.645 / 1.638 ms); the
# power-bound rows' settled windows spread 0.7-4.2% (cuDNN's attention 3.1%). The row a case's others
# are timed beside (adjacent.py) is its reference whatever its spread.
CEILING_NOISE = 0.05


def memory_ceilings(refs: dict) -> dict[str, dict[str, float | None]]:
    """Per ceiling and mode, GB/s. A reduction's read stream is at least the copy (a run that
    measured none, made before there was one, judges on the copy and says so)."""
    out = {}
    for name in CEILING_BASIS:
        out[name] = {m: (refs.get(f"{name}_bytes_per_s{SUFFIX[m]}") or 0) / 1e9 or None for m in MODES}
    for m in MODES:
        for pattern in ("read", "triad"):      # a stream that writes less is at least as fast as the copy
            if out["copy"][m] and out[pattern][m]:
                out[pattern][m] = max(out[pattern][m], out["copy"][m])
    return out


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


def rates(doc: dict, vendor_only: bool = False) -> dict[str, dict[tuple, float]]:
    """Per mode, (problem, case, label) -> achieved rate of each ok row (the vendor rows alone)."""
    out = {m: {} for m in MODES}
    for r in doc["records"]:
        if r["status"] != "ok" or (vendor_only and impl_label(r) not in problems.get(r["problem"]).vendor):
            continue
        for m in MODES:
            if a := achieved(r, m):
                out[m][(r["problem"], r["case"], impl_label(r))] = a[0]
    return out


def apply(doc: dict, borrowed: dict[str, dict[tuple, tuple[float, str]]] | None = None) -> None:
    """Fill achieved rate, % of peak and % of theoretical in both timing modes, and the suspect
    flag, on every timed ok record. `borrowed`: per mode, (problem, case, vendor label) -> (rate,
    where it was measured) for the vendor rows this run lacks (a lane of `--gpus` that timed none
    of its own takes its sibling GPUs'), the basis saying where each came from."""
    refs = doc.get("references") or {}
    theo = refs.get("theoretical") or {}
    ceilings = memory_ceilings(refs)
    max_mhz = ((refs.get("device") or {}).get("sm_clock_khz") or 0) / 1e3
    timed_rates = rates(doc)
    vendor_rows = {(r["problem"], r["case"], impl_label(r)): r["timing"] for r in doc["records"]
                   if r["status"] == "ok" and r.get("timing")}
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
            adjacent = adjacent_ceiling(r, doc, m) if problem.roofline == "compute" else None
            if adjacent:
                t["pct_of_peak" + SUFFIX[m]], t["peak_basis" + SUFFIX[m]], reference = adjacent
                if m == "cold":
                    t["reference"] = reference
                peak = (theo.get("flops_per_s") or {}).get(r["dtype"])
                t["pct_of_theoretical" + SUFFIX[m]] = 100 * value * 1e12 / peak if peak else None
            elif problem.roofline == "compute":
                lent, timed = (borrowed or {}).get(m) or {}, []       # (label, rate, where it was measured)
                for label in problem.vendor:
                    key = (r["problem"], r["case"], label)
                    if key in timed_rates[m] and not (m == "sustained" and noisy(vendor_rows[key])):
                        timed.append((label, timed_rates[m][key], None))
                    elif key in lent:
                        timed.append((label, *lent[key]))
                fastest = problem.vendor_reference == "fastest"
                vendor = (max(timed, key=lambda x: x[1]) if fastest else timed[0]) if timed else None
                if vendor:
                    t["pct_of_peak" + SUFFIX[m]] = 100 * value / vendor[1]
                    t["peak_basis" + SUFFIX[m]] = f"{vendor[0]} on the same case, same run, {m}" + (
                        f" (measured on {vendor[2]}: none on this GPU)" if vendor[2] else "")
                    if m == "cold":
                        t["reference"] = reference_of(vendor[0], vendor_rows.get((r["problem"], r["case"], vendor[0])))
                peak = (theo.get("flops_per_s") or {}).get(r["dtype"])
                if peak:
                    t["pct_of_theoretical" + SUFFIX[m]] = 100 * value * 1e12 / peak
            else:
                name = problem.ceiling if ceilings[problem.ceiling][m] else "copy"
                rows = [(label, timed_rates[m][key]) for label in problem.ceiling_rows
                        if (key := (r["problem"], r["case"], label)) in timed_rates[m]]
                faster = max(rows, key=lambda x: x[1], default=None)
                if faster and ceilings[name][m] and faster[1] > ceilings[name][m]:
                    t["pct_of_peak" + SUFFIX[m]] = 100 * value / faster[1]
                    t["peak_basis" + SUFFIX[m]] = f"{faster[0]} (faster than the {CEILING_BASIS[name]}), same run, {m}"
                    if m == "cold":
                        t["reference"] = reference_of(faster[0], vendor_rows[(r["problem"], r["case"], faster[0])])
                elif ceilings[name][m]:
                    t["pct_of_peak" + SUFFIX[m]] = 100 * value / ceilings[name][m]
                    t["peak_basis" + SUFFIX[m]] = f"{CEILING_BASIS[name]}, same run, {m}" + (
                        "" if name == problem.ceiling else f" (no {CEILING_BASIS[problem.ceiling]} in this run)")
                    if m == "cold":
                        t["reference"] = reference_of(refs.get(f"{name}_by") or name, refs.get(f"{name}_timing"))
                if theo.get("memory_bytes_per_s"):
                    t["pct_of_theoretical" + SUFFIX[m]] = 100 * value * 1e9 / theo["memory_bytes_per_s"]
        t["suspect"] = suspect(problem.roofline, t)
        t["clock_off"], t["pct_of_peak_per_cycle"] = against_reference_clock(t)
        t["low_clock"] = None if t.get("reference") else low_clock(t, max_mhz)
        t["unconfirmed"] = unconfirmed(t) if problem.roofline == "compute" else None


def reference_of(label: str, timing: dict | None) -> dict:
    """What a row's cold % was computed from: the reference's label, cold time and mean SM clock."""
    timing = timing or {}
    return {"label": label, "ms": timing.get("device_ms_cold"),
            "sm_clock_mhz": (timing.get("cold") or {}).get("sm_clock_mhz")}


def noisy(t: dict) -> bool:
    """Whether a row's sustained batches spread too far (CEILING_NOISE) for its median to be a ceiling."""
    return ((t.get("sustained") or {}).get("noise") or 0) > CEILING_NOISE


def adjacent_speed(r: dict, own_ms=lambda t: t.get("device_ms_cold"), reference_key: str = "ms") -> float | None:
    """A timed row's speed relative to the reference timed beside it (1 for the reference's own row):
    by the lab's cold figures, or (`own_ms`, `reference_key`) another timer's of both."""
    t = r.get("timing") or {}
    adj, ms = t.get("adjacent") or {}, own_ms(t)
    if r["status"] != "ok" or not ms or not adj:
        return None
    return 1.0 if adj.get("self") else (adj[reference_key] / ms if adj.get(reference_key) else None)


def adjacent_ceiling(r: dict, doc: dict, mode: str = "cold") -> tuple[float, str, dict] | None:
    """A compute-bound row's % against the fastest vendor path in `mode`, every figure taken against
    the reference timed beside it (adjacent.py: cold loops, or sustained windows, before and after the
    row's): (%, basis, reference), or None where the row or every vendor row lacks one. The reference
    is stated as its time in the row's own state. A vendor row whose sustained batches spread (noisy())
    is no sustained ceiling."""
    key, clock = ("ms", "sm_clock_mhz") if mode == "cold" else ("sustained_ms", "sustained_sm_clock_mhz")

    def own_ms(t):
        return t.get(MODES[mode])
    speed, problem = adjacent_speed(r, own_ms, key), problems.get(r["problem"])
    if speed is None:
        return None
    vendor = [(impl_label(v), adjacent_speed(v, own_ms, key)) for v in doc["records"]
              if v["problem"] == r["problem"] and v["case"] == r["case"] and impl_label(v) in problem.vendor
              and not (mode == "sustained" and noisy(v.get("timing") or {})
                       and not ((v.get("timing") or {}).get("adjacent") or {}).get("self"))]
    vendor = [(label, x) for label, x in vendor if x]
    if not vendor:
        return None
    best_label, best = max(vendor, key=lambda v: v[1])
    t = r["timing"]
    adj = t["adjacent"]
    own = adj.get("self")
    ref_ms = own_ms(t) if own else adj[key]
    reference = {"label": best_label, "ms": ref_ms / best, "adjacent": adj["label"],
                 "sm_clock_mhz": (t.get(mode) or {}).get("sm_clock_mhz") if own else adj.get(clock)}
    beside = "the row itself" if own else f"{adj['label']} timed before and after it in its worker"
    return 100 * speed / best, f"{best_label} on the same case, against {beside}, {mode}", reference


def unconfirmed(t: dict) -> str | None:
    """Why a compute-bound row above 100% of its ceiling cold is not so in the sustained mode and
    per cycle too (a lead that holds in one mode only is the GPU state's, not the kernel's), or None."""
    cold, sus, cyc = t.get("pct_of_peak"), t.get("pct_of_peak_sustained"), t.get("pct_of_peak_per_cycle")
    if not cold or cold <= 100:
        return None
    short = [f"{name} {v:.1f}%" for name, v in (("sustained", sus), ("per cycle", cyc)) if v is not None and v <= 100]
    return f"{cold:.1f}% of its ceiling cold, but {' and '.join(short)}" if short else None


def suspect(roofline: str, t: dict) -> str | None:
    """Why a timed ok result is not believable, or None. Judged on the cold figures (L2 flushed),
    and on the sustained ones for compute-bound cases (an unflushed L2 lets a small memory-bound
    case beat DRAM honestly)."""
    theo = [t.get("pct_of_theoretical")] + ([t.get("pct_of_theoretical_sustained")] if roofline == "compute" else [])
    over = max((p for p in theo if p is not None), default=None)
    if over is not None and over > 100:
        return f"{over:.0f}% of the theoretical peak: timing or correctness needs a second look"
    if roofline == "memory" and (t.get("pct_of_peak") or 0) > COPY_MARGIN_PCT:
        basis = (t.get("peak_basis") or "the ceiling").split(",")[0]
        return (f"{t['pct_of_peak']:.0f}% of the {basis} measured in the same run: a kernel that moves these "
                "bytes cannot beat it by that much")
    return None


def against_reference_clock(t: dict) -> tuple[str | None, float | None]:
    """The cold samples' mean SM clock against the reference's (the row's `reference`): why the row
    ran in another GPU state (further than CLOCK_TOLERANCE, whichever way), and its % of peak per
    cycle (time x clock against the reference's), a check beside the headline %."""
    ref, mhz = t.get("reference") or {}, (t.get("cold") or {}).get("sm_clock_mhz")
    if not (mhz and ref.get("sm_clock_mhz") and t.get("pct_of_peak")):
        return None, None
    off = mhz / ref["sm_clock_mhz"] - 1
    per_cycle = t["pct_of_peak"] * ref["sm_clock_mhz"] / mhz
    if abs(off) <= CLOCK_TOLERANCE:
        return None, per_cycle
    return (f"cold samples at {mhz:.0f} MHz, {off:+.1%} from its reference's {ref['sm_clock_mhz']:.0f} MHz "
            f"({ref['label']}): {per_cycle:.1f}% of it per cycle"), per_cycle


def low_clock(t: dict, max_mhz: float) -> str | None:
    """Where the cold samples ran under LOW_CLOCK_FRACTION of the maximum SM clock (a GEMM at the
    power limit from its first ms; its vendor row beside it is timed the same way): the figure
    stands, and says so."""
    mhz = (t.get("cold") or {}).get("sm_clock_mhz")
    if not (mhz and max_mhz) or mhz >= LOW_CLOCK_FRACTION * max_mhz:
        return None
    return f"cold samples at {mhz:.0f} MHz, under {LOW_CLOCK_FRACTION:.0%} of the maximum {max_mhz:.0f} MHz"


def no_cold_time(t: dict) -> str:
    """Why a timed record has no cold figure."""
    cold, clock = t.get("cold") or {}, (t.get("sustained") or {}).get("sm_clock_mhz")
    if cold.get("stopped_by") == "timeout" and not cold.get("samples"):
        return (f"no cold sample before the timeout: samples taken below {THROTTLE_FRACTION:.0%} of the maximum "
                "SM clock are dropped" + (f" (back to back it ran at {clock:.0f} MHz)" if clock else ""))
    return "the GPU timer saw no time on the lab's stream: the work ran on another stream, or not at all"
