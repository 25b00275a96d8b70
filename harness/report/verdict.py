"""The verdict a README leads with: per problem, its headline bench case (the problem's first), every
implementation's cold % of the problem's ceiling, sorted, those at VERDICT_PCT or more marked, with
time, lines of code and cold compile time. Generated from one named results file and kept between
markers in the README (`ways report RESULTS --readme README.md`), so a test can regenerate it and
the README can never disagree with its run."""
from __future__ import annotations

import re
from pathlib import Path

import problems
from harness.report.style import fmt
from harness.results.records import counts, flag, impl_label

VERDICT_PCT = 90.0
BEGIN, END = "<!-- verdict from {} -->", "<!-- end of verdict -->"
BLOCK = re.compile(re.escape(BEGIN).replace(r"\{\}", "(.+?)") + r"\n(.*?)" + re.escape(END), re.S)  # source, verdict


def headline_case(problem: str) -> str:
    return next(c.name for c in problems.get(problem).cases() if c.kind == "bench")


HEADER = ["implementation", "ms", "% of ceiling", f"≥ {VERDICT_PCT:.0f}%", "LOC", "compile cold s"]


def compile_cold(doc: dict) -> dict[tuple[str, str], float]:
    """(problem, implementation label) -> its cold compile seconds, where the run measured them."""
    return {(r["problem"], impl_label(r)): r["compile"]["cold_s"] for r in doc["records"]
            if (r.get("compile") or {}).get("cold_s") is not None}


def tables(doc: dict) -> list[tuple[str, str, list[list[str]]]]:
    """Per problem with a timed headline case: the problem, what its table shows, and a row of cells
    (HEADER) per implementation, best first."""
    compile_s = compile_cold(doc)
    out = []
    for problem in sorted({r["problem"] for r in doc["records"]}):
        case = headline_case(problem)
        rows = [r for r in doc["records"] if r["problem"] == problem and r["case"] == case
                and (r.get("timing") or {}).get("device_ms_cold")]
        if not rows:
            continue
        basis = next((r["timing"].get("peak_basis") for r in rows if r["timing"].get("peak_basis")), "")
        rows.sort(key=lambda r: -(r["timing"].get("pct_of_peak") or 0.0))
        cells = []
        for r in rows:
            t, label = r["timing"], impl_label(r)
            pct = t.get("pct_of_peak")
            mark = "✓" if counts(r) and pct is not None and pct >= VERDICT_PCT else ""
            cells.append([label + (f" ({flag(r)})" if flag(r) else ""), fmt(t["device_ms_cold"], ".4g"),
                          fmt(pct, ".1f"), mark, fmt((r.get("loc") or {}).get("total"), "d"),
                          fmt(compile_s.get((problem, label)), ".2g")])
        out.append((problem, f"{case}: % of {basis.split(',')[0] or 'the ceiling'} (cold)", cells))
    return out


def markdown(doc: dict) -> str:
    lines = []
    for problem, shows, cells in tables(doc):
        lines += [f"**{problem}** {shows}", "", "| " + " | ".join(HEADER) + " |", "|---|---:|---:|:---:|---:|---:|"]
        lines += ["| " + " | ".join(row) + " |" for row in cells] + [""]
    return "\n".join(lines).rstrip() + "\n"


def block(doc: dict, source: str) -> str:
    return f"{BEGIN.format(source)}\n{markdown(doc)}{END}"


def in_readme(text: str) -> tuple[str, str] | None:
    """(the results file the README's verdict names, the verdict as it stands there), or None."""
    found = BLOCK.search(text)
    return (found.group(1), found.group(2)) if found else None


def write_into(readme: Path, doc: dict, source: str) -> None:
    """Replace the README's verdict (or append one) with `doc`'s, naming `source`."""
    text = readme.read_text()
    new = block(doc, source)
    text = BLOCK.sub(lambda m: new, text, count=1) if BLOCK.search(text) else text.rstrip() + "\n\n" + new + "\n"
    readme.write_text(text)
