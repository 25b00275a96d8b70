"""Two results documents side by side: per implementation x timed case, is B faster, slower, the
same, or is it ambiguous? Decided on both runs' spread (the interquartile range of the cold
samples), not on a bare ratio. On the same GPU the device times are compared; across GPUs only
the % of peak is (each run's own copy or cuBLAS measured on its own GPU).

With a repeat of the baseline (`ways compare A B --repeat A2`), whether B agrees with A as well as A
agrees with itself (`equivalence`): over the cases timed in all three, the cases not "same" between A
and B are at most those between A and A2 plus EXTRA_NOT_SAME, and no case's % of peak moves from A to
B more than PCT_POINTS beyond what it moved from A to A2 (how lanes are judged against one GPU). With
`--same-chip`, over the cases B timed on the GPU (UUID) that timed them in A: lanes are several chips,
and a one-GPU run, repeated on its own chip, says how one chip agrees with itself."""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.results.merge import gpu_name
from harness.results.records import counts, impl_label


@dataclass
class Verdict:
    problem: str
    case: str
    implementation: str
    a: float
    b: float
    change: float          # B / A - 1 of the compared quantity (positive: B takes longer / reaches less)
    verdict: str           # faster | slower | same | ambiguous
    regression: bool
    gpus: tuple = (None, None)     # the GPU index that measured it in A and B, where records name one (--gpus)
    same_chip: bool | None = None  # the same GPU (UUID) in both; None where a record names none


def _timed(doc: dict) -> dict[tuple[str, str, str], dict]:
    """Timed rows that count: ok and not flagged suspect."""
    return {(r["problem"], r["case"], impl_label(r)): r for r in doc["records"]
            if counts(r) and (r.get("timing") or {}).get("device_ms_cold")}


def _interval(timing: dict) -> tuple[float, float, float]:
    """(low, median, high) of the cold device time; a single median counts as its own interval."""
    cold = timing.get("cold") or {}
    median = timing["device_ms_cold"]
    return cold.get("q1_ms", median), median, cold.get("q3_ms", median)


def comparable(doc_a: dict, doc_b: dict) -> dict[str, bool]:
    """Which quantities mean the same thing in both runs."""
    same_gpu = gpu_name(doc_a) == gpu_name(doc_b)
    return {"device time": same_gpu, "host time": same_gpu, "achieved (GB/s, TFLOP/s)": same_gpu,
            "% of peak": True, "correctness": True, "LOC": True,
            "compile time": same_gpu and doc_a["environment"].get("platform") == doc_b["environment"].get("platform")}


def compare(doc_a: dict, doc_b: dict, threshold: float = 0.05) -> list[Verdict]:
    """A verdict for every implementation x case timed in both. `threshold`: the relative change
    beyond which a clear slowdown counts as a regression (and below which overlapping spreads
    count as the same)."""
    same_gpu = comparable(doc_a, doc_b)["device time"]
    a_rows, b_rows = _timed(doc_a), _timed(doc_b)
    out = []
    for key in sorted(a_rows.keys() & b_rows.keys()):
        ta, tb = a_rows[key]["timing"], b_rows[key]["timing"]
        if same_gpu:
            (lo_a, a, hi_a), (lo_b, b, hi_b) = _interval(ta), _interval(tb)
        else:       # % of peak, higher is better: compare its inverse so "positive change = worse" holds
            pa, pb = ta.get("pct_of_peak"), tb.get("pct_of_peak")
            if not pa or not pb:
                continue
            (lo_a, ma, hi_a), (lo_b, mb, hi_b) = _interval(ta), _interval(tb)
            a, b = 100 / pa, 100 / pb
            lo_a, hi_a, lo_b, hi_b = a * lo_a / ma, a * hi_a / ma, b * lo_b / mb, b * hi_b / mb
        change = b / a - 1
        overlap = lo_b <= hi_a and lo_a <= hi_b
        if overlap:
            verdict = "same" if abs(change) <= threshold else "ambiguous"
        else:
            verdict = "slower" if change > 0 else "faster"
        shown = (a, b) if same_gpu else (ta["pct_of_peak"], tb["pct_of_peak"])
        gpus = tuple((rows[key].get("gpu") or {}).get("index") for rows in (a_rows, b_rows))
        uuids = [(rows[key].get("gpu") or {}).get("uuid") for rows in (a_rows, b_rows)]
        out.append(Verdict(*key, *shown, change, verdict, verdict == "slower" and change > threshold, gpus,
                           uuids[0] == uuids[1] if all(uuids) else None))
    return out


EXTRA_NOT_SAME = 1        # cases B may call other than "same" beyond those the repeat did
PCT_POINTS = 3.0          # points of % of peak B may move beyond the repeat's move, per case


@dataclass
class Equivalence:
    cases: int                       # timed in all three runs (with same_chip: on A's chip in B)
    not_same_repeat: int             # not "same" between A and its repeat
    not_same: int                    # not "same" between A and B
    worst: list = field(default_factory=list)     # (excess points, problem, case, implementation), worst first
    same_chip: bool = False          # only the cases B timed on the chip that timed them in A

    @property
    def holds(self) -> bool:
        return self.not_same <= self.not_same_repeat + EXTRA_NOT_SAME and not any(
            excess > PCT_POINTS for excess, *_ in self.worst)


def equivalence(doc_a: dict, doc_repeat: dict, doc_b: dict, threshold: float = 0.05,
                same_chip: bool = False) -> Equivalence:
    """Does B agree with A as well as A's repeat does (the module's docstring)?"""
    repeat = {(v.problem, v.case, v.implementation): v for v in compare(doc_a, doc_repeat, threshold)}
    cand = {(v.problem, v.case, v.implementation): v for v in compare(doc_a, doc_b, threshold)}
    keys = sorted(k for k in repeat.keys() & cand.keys() if cand[k].same_chip or not same_chip)
    a_rows, r_rows, b_rows = _timed(doc_a), _timed(doc_repeat), _timed(doc_b)
    worst = []
    for key in keys:
        pcts = [rows[key]["timing"].get("pct_of_peak") for rows in (a_rows, r_rows, b_rows)]
        if None not in pcts:
            excess = abs(pcts[2] - pcts[0]) - abs(pcts[1] - pcts[0])
            worst.append((round(excess, 3), *key))
    worst.sort(reverse=True)
    return Equivalence(len(keys), sum(repeat[k].verdict != "same" for k in keys),
                       sum(cand[k].verdict != "same" for k in keys), worst, same_chip)


def render_equivalence(e: Equivalence) -> str:
    where = " (those B timed on A's GPU)" if e.same_chip else ""
    lines = [f"equivalence over {e.cases} case(s) timed in all three runs{where}: not same, A vs its repeat: "
             f"{e.not_same_repeat}; A vs B: {e.not_same} (allowed {e.not_same_repeat + EXTRA_NOT_SAME})"]
    if e.worst:
        excess, problem, case, impl = e.worst[0]
        lines.append(f"largest move of % of peak beyond the repeat's: {excess:+.1f} points ({impl}, {problem} {case}; "
                     f"allowed {PCT_POINTS:.0f})")
    lines.append(f"B agrees with A as well as A agrees with itself: {'yes' if e.holds else 'no'}")
    return "\n".join(lines)


def render(doc_a: dict, doc_b: dict, verdicts: list[Verdict], threshold: float) -> str:
    same_gpu = comparable(doc_a, doc_b)["device time"]
    unit = "cold device ms" if same_gpu else "% of peak"
    named = any(g is not None for v in verdicts for g in v.gpus)     # which GPU of a --gpus run measured it
    lines = [f"A: run {doc_a['run']['id']} on {gpu_name(doc_a)}", f"B: run {doc_b['run']['id']} on {gpu_name(doc_b)}",
             "comparable: " + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in comparable(doc_a, doc_b).items()),
             f"compared: {unit} (spread: interquartile range of the cold samples; threshold {threshold:.0%})", "",
             f"| problem | case | implementation | A {unit} | B {unit} | change | verdict |"
             + (" GPU A / B |" if named else ""),
             "|---|---|---|---:|---:|---:|---|" + ("---|" if named else "")]
    for v in verdicts:
        flag = " (regression)" if v.regression else ""
        gpus = " / ".join("-" if g is None else str(g) for g in v.gpus)
        lines.append(f"| {v.problem} | {v.case} | {v.implementation} | {v.a:.4g} | {v.b:.4g} | "
                     f"{v.change:+.1%} | {v.verdict}{flag} |" + (f" {gpus} |" if named else ""))
    lines += ["", _tally(verdicts) + f"; {sum(v.regression for v in verdicts)} regression(s) beyond {threshold:.0%}"]
    # runs of several GPUs of one kind (--gpus): chips differ, so say apart what one chip measured twice
    for same, where in ((True, "on the same GPU (UUID) in both"), (False, "on different GPUs")):
        part = [v for v in verdicts if v.same_chip is same]
        if part and any(v.same_chip is not None for v in verdicts):
            lines.append(f"{where}: {len(part)} case(s): {_tally(part)}")
    return "\n".join(lines)


def _tally(verdicts: list[Verdict]) -> str:
    counts = {k: sum(v.verdict == k for v in verdicts) for k in ("faster", "slower", "same", "ambiguous")}
    return ", ".join(f"{n} {k}" for k, n in counts.items())
