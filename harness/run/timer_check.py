"""The lab's headline figures against a second, independent timer, on every problem's headline case
and every implementation (their vendor rows with them): a `ways run` of those cases in which each
worker also times each row with host-synchronized batches (measure/second_timer.py), the
compute-bound rows' adjacent reference too.

    ways timer-check --out DIR [-p P ...] [-b B ...] [--jobs N] [--window-scale K]
                                                   (GPU; DIR/results.json, crosscheck.json, .md)

    ways timer-check --out DIR --resume ...      (GPU: go on with the run a stopped call left in DIR)
    ways timer-check --from DIR/results.json --out DIR2    (no GPU: the comparison of a run made so)

Per row, the second timer's figure beside the lab's in the same mode (sustained: back to back, no
flush; a memory-bound row's rate, a compute-bound row's % of the fastest vendor path, each timer
against the reference it timed beside the row), and the lab's cold headline beside both (a
power-bound reference runs at another clock cold, so the modes' %s differ where a row draws less
power than its reference). The exit status is 1 where a device-bound row differs by more than
--tolerance (2%), in its % or in its paired difference (below); a host-bound row (its dispatch half
its device time or more) is shown, not checked: the second timer, synchronizing around each batch,
times its host. Beside each difference, its own
precision: the standard error of the ratio of the medians it compares (the row's sustained window and
second timer, and for a compute-bound row its adjacent reference's two), from their batches' spread;
and the same difference with each of the row's parts paired with the reference's parts on either side
of it (paired_speed: the drift within a pair cancels), where the record keeps the reference's batches;
at the power limit a clock that moves by percents within a second makes it 1.8-5.9% for a compute-bound
row on one H200, so a difference within 2 of them is the timers agreeing as far as their windows can tell.
"""
from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

import problems
from harness.measure import gpu, roofline, second_timer
from harness.measure.roofline import adjacent_speed
from harness.measure.stopping import WINDOW_SCALE_VAR, ratio_standard_error
from harness.measure.timing import HOST_BOUND_SHARE
from harness.results import merge
from harness.results.records import host_exposed, impl_label
from harness.run import resume
from harness.run.plan import Options
from harness.run.runner import Run

TOLERANCE = 0.02
SE_MULTIPLE = 2              # a difference within this many standard errors is inside its 95% interval


def second_speed(r: dict) -> float | None:
    """roofline.adjacent_speed by the second timer: the row's speed against its reference's."""
    return adjacent_speed(r, lambda t: (t.get("second_timer") or {}).get("median_ms"), "second_timer_ms")


def standard_error(t: dict, compute_bound: bool) -> tuple[float | None, str]:
    """The relative standard error of lab sustained / second timer, and a note where a reference's
    spread was not recorded (older runs: its sustained window's spread and the row's batch count in
    its place)."""
    sus, sec, adj = t.get("sustained") or {}, t.get("second_timer") or {}, t.get("adjacent") or {}
    parts = [(sus.get("noise"), sus.get("batches")), (sec.get("noise"), sec.get("batches"))]
    note = ""
    if compute_bound and adj.get("sustained_noise") is not None:
        window_batches = adj.get("sustained_batches") or sus.get("batches")
        second_noise = adj.get("second_timer_noise")
        if second_noise is None or not adj.get("sustained_batches"):
            note = "the reference's second-timer spread not recorded: its sustained window's in its place"
        parts += [(adj["sustained_noise"], window_batches),
                  (adj["sustained_noise"] if second_noise is None else second_noise,
                   adj.get("second_timer_batches") or window_batches)]
    return ratio_standard_error(parts), note


def paired_speed(row_ms: list[float], ref_ms: list[float], per_part: int) -> float | None:
    """The row's speed against its reference's from interleaved batches (R, B, R, ..., B, R): each part
    of `per_part` row batches against the mean of the reference's parts on either side of it, the median
    of those ratios; the clock's drift within a pair cancels. None where the batches do not interleave."""
    parts = len(row_ms) // per_part if per_part else 0
    if not parts or len(row_ms) != parts * per_part or len(ref_ms) != (parts + 1) * per_part:
        return None
    def medians(batches, n):
        return [statistics.median(batches[i * per_part:(i + 1) * per_part]) for i in range(n)]
    rows, refs = medians(row_ms, parts), medians(ref_ms, parts + 1)
    return statistics.median((refs[i] + refs[i + 1]) / 2 / rows[i] for i in range(parts))


def paired_difference(t: dict) -> float | None:
    """lab / second - 1 of a compute-bound row by paired_speed in both timers (None for a record made
    before the reference's batches were kept)."""
    sus, sec, adj = t.get("sustained") or {}, t.get("second_timer") or {}, t.get("adjacent") or {}
    if not (sus.get("parts") and sus.get("batch_ms") and sec.get("batch_ms")):
        return None
    lab = paired_speed(sus["batch_ms"], adj.get("sustained_batch_ms") or [], len(sus["batch_ms"]) // sus["parts"])
    second = paired_speed(sec["batch_ms"], adj.get("second_timer_batch_ms") or [], 1)
    return lab / second - 1 if lab and second else None


def host_bound(t: dict) -> bool:
    """Whether the tool's dispatch takes HOST_BOUND_SHARE of its device time or more, or the lab saw its
    host through a timing mode (records.flag's "host exposed"): back to back with the device
    synchronized around each batch, the second timer then times its host."""
    sus = t.get("sustained") or {}
    return bool(host_exposed(t) or (sus.get("dispatch_us") and t.get("device_ms_sustained")
                            and sus["dispatch_us"] / 1e3 >= HOST_BOUND_SHARE * t["device_ms_sustained"]))


def against_adjacent(t: dict) -> dict:
    """A compute-bound row's figures as % of the reference timed beside it, each timer's own, where the
    run has no fastest vendor row to put them against (a check stopped before the ceiling's own row)."""
    adj, cold = t["adjacent"], t.get("device_ms_cold")
    second = adj.get("second_timer_ms")
    return {"figure": f"% of {adj['label']} beside it (no ceiling row in this run)", "reference": adj["label"],
            "lab": 100 * adj["sustained_ms"] / t["device_ms_sustained"],
            "second": 100 * second / t["second_timer"]["median_ms"] if second else None,
            "headline": 100 * adj["ms"] / cold if cold and adj.get("ms") else None}


def compare(doc: dict) -> list[dict]:
    """Per timed row: the second timer's figure beside the lab's in the same mode (sustained: back to
    back, no flush), the difference that is checked (lab / second - 1), and the lab's cold headline
    beside them. A memory-bound row's figure is its rate, a compute-bound row's its % of the fastest
    vendor path (each timer against the reference it timed beside the row)."""
    rows = []
    for r in doc["records"]:
        t = r.get("timing") or {}
        if r["status"] != "ok" or not t.get("device_ms_sustained") or not t.get("second_timer"):
            continue
        problem, second_ms = problems.get(r["problem"]), t["second_timer"]["median_ms"]
        row = {"problem": r["problem"], "case": r["case"], "implementation": impl_label(r),
               "lab_cold_ms": t.get("device_ms_cold"), "lab_sustained_ms": t["device_ms_sustained"],
               "second_timer_ms": second_ms, "dispatch_us": (t.get("sustained") or {}).get("dispatch_us"),
               "host_bound": host_bound(t)}
        if problem.roofline == "memory":
            rate = r["work"]["bytes"] / 1e6
            row.update(figure="GB/s", lab=rate / t["device_ms_sustained"], second=rate / second_ms,
                       headline=rate / t["device_ms_cold"] if t.get("device_ms_cold") else None)
        elif t.get("pct_of_peak_sustained") is None and (t.get("adjacent") or {}).get("sustained_ms"):
            row.update(against_adjacent(t))
        else:
            vendor = [second_speed(v) for v in doc["records"] if v["problem"] == r["problem"]
                      and v["case"] == r["case"] and impl_label(v) in problem.vendor]
            best, own = max((x for x in vendor if x), default=None), second_speed(r)
            row.update(figure="% of the fastest vendor path", lab=t.get("pct_of_peak_sustained"),
                       second=100 * own / best if best and own and adjacent_speed(r) else None,
                       headline=t.get("pct_of_peak"), reference=(t.get("reference") or {}).get("label"))
        row["difference"] = row["lab"] / row["second"] - 1 if row["lab"] and row["second"] else None
        row["standard_error"], row["standard_error_note"] = standard_error(t, problem.roofline != "memory")
        row["paired_difference"] = paired_difference(t) if problem.roofline != "memory" else None
        row["headline_difference"] = row["headline"] / row["second"] - 1 if row["headline"] and row["second"] else None
        row["second_timer_mhz"] = (t["second_timer"].get("sm_clock_mhz"),
                                   (t.get("adjacent") or {}).get("second_timer_sm_clock_mhz"))
        rows.append(row)
    return sorted(rows, key=lambda x: (x["problem"], x["case"], x["implementation"]))


def disagreeing(rows: list[dict], tolerance: float) -> list[dict]:
    """The device-bound rows whose same-mode figures differ by more than `tolerance` (or have none), or
    whose own speed against the reference beside them does (the paired difference): the fastest vendor
    row's % is 100 in both timers by definition, so only its paired difference checks it, and it moves
    every other row's %."""
    return [x for x in rows if not x["host_bound"] and (
        x["difference"] is None or abs(x["difference"]) > tolerance
        or abs(x.get("paired_difference") or 0) > tolerance)]


def figure(value: float | None) -> str:
    """A figure of the table, or "none" where a timer has none (e.g. its reference did not run)."""
    return f"{value:.1f}" if value else "none"


def paired(value: float | None, tolerance: float, host_bound: bool) -> str:
    """A paired difference for the table, marked where it is checked and beyond `tolerance`."""
    if value is None:
        return ""
    return f"{100 * value:+.1f}%" + (" **over**" if abs(value) > tolerance and not host_bound else "")


def clocks(mhz) -> str:
    """The second timer's mean SM clocks, the row's and (compute-bound) its reference's, as recorded."""
    return " / ".join(f"{m:.0f}" for m in (mhz or ()) if m)


def markdown(rows: list[dict], tolerance: float) -> str:
    lines = ["| problem | case | implementation | figure | lab sustained | second timer | difference |"
             " its standard error | paired difference | lab cold (headline) | headline vs second timer |"
             " second timer's MHz, row / reference |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for x in rows:
        diff, head, se = x["difference"], x["headline_difference"], x.get("standard_error")
        mark = " (host-bound: not checked)" if x["host_bound"] else \
            " **over**" if diff is None or abs(diff) > tolerance else ""
        if mark == " **over**" and diff is not None and se and abs(diff) <= SE_MULTIPLE * se:
            mark += f" (within {SE_MULTIPLE} of its standard error)"
        lines.append(f"| {x['problem']} | {x['case']} | {x['implementation']} | {x['figure']} | "
                     f"{figure(x['lab'])} | {figure(x['second'])} | "
                     + (f"{100 * diff:+.1f}%{mark}" if diff is not None else "no second figure") + " | "
                     + (f"{100 * se:.1f}%{'*' if x.get('standard_error_note') else ''}" if se else "") + " | "
                     + paired(x.get("paired_difference"), tolerance, x["host_bound"]) + " | "
                     + f"{figure(x['headline'])} | " + (f"{100 * head:+.1f}% |" if head is not None else " |")
                     + f" {clocks(x.get('second_timer_mhz'))} |")
    if any(x.get("standard_error_note") for x in rows):
        lines.append(f"\n\\* {next(x['standard_error_note'] for x in rows if x.get('standard_error_note'))}")
    return "\n".join(lines) + "\n"


def positive(text: str) -> float:
    """An argparse type: a positive number."""
    value = float(text)
    if not value > 0:
        raise ValueError(text)
    return value


def add_arguments(ap) -> None:
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("-p", "--problem", action="append", default=[], choices=problems.names(),
                    help="only these problems' headline cases (default: every problem's)")
    ap.add_argument("-b", "--backend", action="append", default=[],
                    help="only these (default: every default backend)")
    ap.add_argument("--jobs", type=int, default=1, help="implementations at once, as `ways run --jobs`")
    ap.add_argument("--from", dest="results", type=Path,
                    help="compare the rows of this results.json (a timer-check's run) instead of running")
    ap.add_argument("--window-scale", type=positive, default=1.0,
                    help="a factor on every compute-bound row's sustained window and second-timer batches "
                         "(default 1): a comparison's standard error falls as its square root")
    ap.add_argument("--resume", action="store_true",
                    help="go on with the check in --out that did not finish (the same selection and window scale)")
    ap.add_argument("--tolerance", type=float, default=TOLERANCE,
                    help=f"largest |lab / second timer - 1| of a device-bound row (default {TOLERANCE})")


def main(args) -> int:
    if args.results:
        doc = merge.load(args.results)
        roofline.apply(doc)              # the %s by the lab's rules now, from the run's own timings
    else:
        os.environ[second_timer.ENABLED_VAR] = "1"           # the workers inherit both
        os.environ[WINDOW_SCALE_VAR] = repr(args.window_scale)
        names = args.problem or problems.names()
        opts = Options(problems=names, backends=args.backend, kinds=("bench",), jobs=args.jobs, out=args.out,
                       case_names=tuple(problems.get(p).headline_case().name for p in names),
                       measure_compile=False, resume=args.resume)
        if args.resume:
            resume.check_here(args.out, opts, list(gpu.gpus()))
        doc = Run(opts).execute()
    rows = compare(doc)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "crosscheck.json").write_text(json.dumps(rows, indent=1) + "\n")
    text = markdown(rows, args.tolerance)
    (args.out / "crosscheck.md").write_text(text)
    print(text)
    return 1 if not rows or disagreeing(rows, args.tolerance) else 0
