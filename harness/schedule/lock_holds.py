"""What the timers waited behind: a summary of the GPU lock's holds (gpu_lock.py writes one line per
hold: who, doing what (the phase that took most of the hold; `asked_in`: the one it was asked for
in), when it asked, got and released the GPU) for `ways run --jobs`.

A timer waits until every sharer has let go; the sharer that let go last is the one it waited
behind, and the whole wait is put on it (or on "another timer" where the GPU was being timed)."""
from __future__ import annotations

import bisect
import json
from collections import defaultdict
from pathlib import Path

TOP = 12
LOG_NAME = "gpu-lock-holds.jsonl"      # the run folder's copy of every hold


def read(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    holds = []
    for line in path.read_text().splitlines():
        try:
            holds.append(json.loads(line))
        except ValueError:          # a line cut short by a killed worker
            continue
    return holds


def summarize(holds: list[dict]) -> dict | None:
    """Seconds the GPU was held for timing, seconds timers and sharers waited, and the holds the
    timers' waits are put on, grouped by who (implementation, problem) and what it was doing."""
    if not holds:
        return None
    timing = [h for h in holds if h["mode"] == "exclusive"]
    shared = [h for h in holds if h["mode"] == "shared"]
    behind: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0])
    by_release = sorted(holds, key=lambda h: h["released"])
    releases = [h["released"] for h in by_release]
    for t in timing:
        waited = t["got"] - t["asked"]
        if waited <= 0.01:
            continue
        # the hold released last before the timer got the GPU (a full run has tens of thousands)
        k = bisect.bisect_right(releases, t["got"] + 0.01)
        last = next((h for h in reversed(by_release[:k]) if h is not t and h["got"] < t["got"]), None)
        if last is None or last["released"] < t["asked"]:
            key = ("(nothing traced)", "")
        elif last["mode"] == "exclusive":
            key = ("another timer", "")
        else:
            key = (_who(last["who"]), last["doing"] or "(no phase)")
        behind[key][0] += waited
        behind[key][1] += 1
    start = min(h["asked"] for h in holds)
    end = max(h["released"] for h in holds)
    top = sorted(behind.items(), key=lambda kv: -kv[1][0])[:TOP]
    timed = [(h["got"], h["released"]) for h in timing]
    waiting = [(h["asked"], h["got"]) for h in timing]
    return {"span_s": round(end - start, 3),
            "timing_held_s": round(sum(h["released"] - h["got"] for h in timing), 3),
            # wall time with a timer waiting while no timer held the GPU: the sharers' holds kept it out;
            # the rest of the span not timed, no timer was ready (its worker was building or checking)
            "timer_blocked_s": round(_length(_union(waiting + timed)) - _length(_union(timed)), 3),
            "timing_holds": len(timing),
            "timers_waited_s": round(sum(h["got"] - h["asked"] for h in timing), 3),
            "sharers_waited_s": round(sum(h["got"] - h["asked"] for h in shared), 3),
            "longest_shared": [_hold(h) for h in sorted(shared, key=lambda h: h["got"] - h["released"])[:TOP]],
            "shared_by_who": _by_who(shared),
            "timers_waited_behind": [{"who": who, "doing": doing, "s": round(s, 3), "waits": n}
                                     for (who, doing), (s, n) in top]}


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for lo, hi in sorted(sp for sp in spans if sp[1] > sp[0]):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(lo, hi) for lo, hi in out]


def _length(spans: list[tuple[float, float]]) -> float:
    return sum(hi - lo for lo, hi in spans)


def _who(label: str) -> str:
    """The implementation and problem of a worker's label (its case left out, to group the holds);
    a compile-time process's as it is."""
    if label.endswith("(compile-time process)"):
        return label
    return " ".join(label.split()[:2]) or "(unlabelled)"


def _by_who(holds: list[dict]) -> list[dict]:
    """Seconds of GPU held shared per implementation and problem (or compile-time process), most first."""
    total: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for h in holds:
        total[_who(h["who"])][0] += h["released"] - h["got"]
        total[_who(h["who"])][1] += 1
    return [{"who": who, "held_s": round(s, 3), "holds": n}
            for who, (s, n) in sorted(total.items(), key=lambda kv: -kv[1][0])[:TOP]]


def _hold(h: dict) -> dict:
    return {"who": h["who"], "doing": h["doing"], "held_s": round(h["released"] - h["got"], 3)}


def lines(summary: dict) -> list[str]:
    """A few lines for the end of a run."""
    out = [f"GPU lock: held for timing {summary['timing_held_s']:.0f} s of {summary['span_s']:.0f} "
           f"({summary['timing_holds']} holds); timers waited {summary['timers_waited_s']:.0f} s, "
           f"other GPU work {summary['sharers_waited_s']:.0f} s"]
    if "timer_blocked_s" in summary:      # older documents lack it
        idle = summary["span_s"] - summary["timing_held_s"] - summary["timer_blocked_s"]
        out.append(f"  of the wall time not timed: {summary['timer_blocked_s']:.0f} s a timer waited behind "
                   f"other GPU work, {max(idle, 0.0):.0f} s no timer was ready")
    for b in summary["timers_waited_behind"][:5]:
        out.append(f"  timers waited {b['s']:.1f} s ({b['waits']}x) behind {b['who']}"
                   + (f" ({b['doing']})" if b["doing"] else ""))
    held = ", ".join(f"{w['who']} {w['held_s']:.0f} s" for w in summary.get("shared_by_who", [])[:3])
    if held:
        out.append(f"  held shared the longest: {held}")
    return out
