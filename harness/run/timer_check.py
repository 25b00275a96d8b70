"""The lab's headline figures against a second, independent timer, on every problem's headline case
and every implementation (their vendor rows with them): a `ways run` of those cases in which each
worker also times each row with host-synchronized batches (measure/second_timer.py), the
compute-bound rows' adjacent reference too.

    ways timer-check --out DIR [-b B ...] [--jobs N]     (GPU; DIR/results.json, crosscheck.json and .md)

Per row, the lab's headline figure beside the second timer's: a memory-bound row's rate (bytes over
the cold time, against the second timer's batches), a compute-bound row's % of the fastest vendor
path (against the reference timed beside it by each timer). The exit status is 1 where a row
differs by more than --tolerance (2%).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import problems
from harness.measure import second_timer
from harness.measure.roofline import adjacent_speed
from harness.results.records import impl_label
from harness.run.plan import Options
from harness.run.runner import Run

TOLERANCE = 0.02


def second_speed(r: dict) -> float | None:
    """As roofline.adjacent_speed, by the second timer: the row's speed against its reference's."""
    t = r.get("timing") or {}
    adj, own = t.get("adjacent") or {}, (t.get("second_timer") or {}).get("median_ms")
    if r["status"] != "ok" or not own or not adj:
        return None
    return 1.0 if adj.get("self") else (adj["second_timer_ms"] / own if adj.get("second_timer_ms") else None)


def compare(doc: dict) -> list[dict]:
    """Per timed row: the lab's headline figure, the second timer's, and how far apart (lab / second - 1)."""
    rows = []
    for r in doc["records"]:
        t = r.get("timing") or {}
        if r["status"] != "ok" or not t.get("device_ms_cold") or not t.get("second_timer"):
            continue
        problem = problems.get(r["problem"])
        row = {"problem": r["problem"], "case": r["case"], "implementation": impl_label(r),
               "lab_cold_ms": t["device_ms_cold"], "second_timer_ms": t["second_timer"]["median_ms"],
               "lab_sm_mhz": (t.get("cold") or {}).get("sm_clock_mhz")}
        if problem.roofline == "memory":
            row.update(figure="GB/s", lab=r["work"]["bytes"] / t["device_ms_cold"] / 1e6,
                       second=r["work"]["bytes"] / t["second_timer"]["median_ms"] / 1e6)
        else:
            vendor = [second_speed(v) for v in doc["records"] if v["problem"] == r["problem"]
                      and v["case"] == r["case"] and impl_label(v) in problem.vendor]
            best, own = max((x for x in vendor if x), default=None), second_speed(r)
            row.update(figure="% of the fastest vendor path", lab=t.get("pct_of_peak"),
                       second=100 * own / best if best and own and adjacent_speed(r) else None,
                       reference=(t.get("reference") or {}).get("label"))
        row["difference"] = row["lab"] / row["second"] - 1 if row["lab"] and row["second"] else None
        rows.append(row)
    return sorted(rows, key=lambda x: (x["problem"], x["case"], x["implementation"]))


def markdown(rows: list[dict], tolerance: float) -> str:
    lines = ["| problem | case | implementation | figure | lab (cold, gated) | second timer | difference |",
             "|---|---|---|---|---:|---:|---:|"]
    for x in rows:
        diff = x["difference"]
        mark = "" if diff is None or abs(diff) <= tolerance else " **over**"
        lines.append(f"| {x['problem']} | {x['case']} | {x['implementation']} | {x['figure']} | "
                     f"{x['lab'] or 0:.1f} | {x['second'] or 0:.1f} | "
                     + (f"{100 * diff:+.1f}%{mark} |" if diff is not None else "no second figure |"))
    return "\n".join(lines) + "\n"


def add_arguments(ap) -> None:
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("-b", "--backend", action="append", default=[],
                    help="only these (default: every default backend)")
    ap.add_argument("--jobs", type=int, default=1, help="implementations at once, as `ways run --jobs`")
    ap.add_argument("--tolerance", type=float, default=TOLERANCE,
                    help=f"largest |lab / second timer - 1| (default {TOLERANCE})")


def main(args) -> int:
    os.environ[second_timer.ENABLED_VAR] = "1"           # the workers inherit it
    names = problems.names()
    doc = Run(Options(problems=names, backends=args.backend, kinds=("bench",), jobs=args.jobs, out=args.out,
                      case_names=tuple(problems.get(p).headline_case().name for p in names), measure_compile=False)).execute()
    rows = compare(doc)
    (args.out / "crosscheck.json").write_text(json.dumps(rows, indent=1) + "\n")
    text = markdown(rows, args.tolerance)
    (args.out / "crosscheck.md").write_text(text)
    print(text)
    return 1 if not rows or any(x["difference"] is None or abs(x["difference"]) > args.tolerance for x in rows) else 0
