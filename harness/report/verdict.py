"""The verdict a README leads with: the run's overview figure, a line a problem, then per problem its
headline bench case (the problem's first), every implementation's cold % of the problem's ceiling,
sorted, those at VERDICT_PCT or more marked, with time, lines of code and cold compile time. Generated
from one named results file and kept between markers in the README (`ways report RESULTS --readme
README.md`), so a test can regenerate it and the README can never disagree with its run."""
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
    return problems.get(problem).headline_case().name


def headline_cases(problem: str) -> list[str]:
    """The problem's headline bench case on a GPU, then on a machine without one."""
    host = problems.get(problem).host_cases()
    return [headline_case(problem), *(host[:1] and [host[0].name])]


def ms(r: dict) -> float | None:
    """A timed row's figure: its cold device time, or on a run without a GPU its host time."""
    t = r.get("timing") or {}
    return t.get("device_ms_cold") or (t.get("host_ms") if t.get("engine") == "host-timer" else None)


def headline_rows(doc: dict) -> list[tuple[str, str, list[dict]]]:
    """Per problem: its headline case that this run timed, and that case's timed rows, best first."""
    out = []
    for problem in sorted({r["problem"] for r in doc["records"]}):
        for case in headline_cases(problem):
            rows = [r for r in doc["records"] if r["problem"] == problem and r["case"] == case and ms(r)]
            on_gpu = [r for r in rows if r["timing"].get("device_ms_cold")]     # a host row beside them: no %
            rows = sorted(on_gpu, key=lambda r: -(r["timing"].get("pct_of_peak") or 0.0)) if on_gpu else \
                sorted(rows, key=ms)
            if rows:
                out.append((problem, case, rows))
                break
    return out


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
    for problem, case, rows in headline_rows(doc):
        on_host = all(r["timing"].get("engine") == "host-timer" for r in rows)
        basis = next((r["timing"].get("peak_basis") for r in rows if r["timing"].get("peak_basis")), "")
        cells = []
        for r in rows:
            t, label = r["timing"], impl_label(r)
            pct = t.get("pct_of_peak")
            mark = "✓" if counts(r) and pct is not None and pct >= VERDICT_PCT else ""
            cells.append([label + (f" ({flag(r)})" if flag(r) else ""), fmt(ms(r), ".4g"),
                          fmt(pct, ".1f"), mark, fmt((r.get("loc") or {}).get("total"), "d"),
                          fmt(compile_s.get((problem, label)), ".2g")])
        shows = "host time on the CPU (no GPU: no ceiling)" if on_host else \
            f"% of {basis.split(',')[0] or 'the ceiling'} (cold)"
        out.append((problem, f"{case}: {shows}", cells))
    return out


def canonical_runs() -> list[tuple[str, str]]:
    """The checkout's canonical runs, (folder, GPU): reports/<kind>/ with a manifest (reports/latest*: local)."""
    import json

    from harness import ROOT
    found = []
    for manifest in sorted((ROOT / "reports").glob("*/manifest.json")):
        if not manifest.parent.name.startswith("latest"):
            gpus = json.loads(manifest.read_text()).get("gpus") or [{}]
            found.append((f"reports/{manifest.parent.name}/", gpus[0].get("name") or "?"))
    return found


def _listed(bad: list[dict], at_most: int = 4) -> str:
    """'tool on case (flag), ...' for rows not ok, the first few of them."""
    more = f" and {len(bad) - at_most} more" if len(bad) > at_most else ""
    return ", ".join(f"{impl_label(r)} on {r['case']} ({flag(r)})" for r in bad[:at_most]) + more


def findings(doc: dict) -> list[str]:
    """What the run found, in sentences a page and report.md lead with: one a problem (its headline
    case: who reaches the ceiling, or on a machine without a GPU the host's times), the rows that are
    not ok, and where no GPU ran, what was not measured and where the GPU results are."""
    lines = []
    timed = {problem: (case, rows) for problem, case, rows in headline_rows(doc)}
    for problem in sorted({r["problem"] for r in doc["records"]}):
        bad = [r for r in doc["records"] if r["problem"] == problem and r["status"] in ("wrong", "failed")]
        if problem not in timed:
            if bad:
                lines.append(f"**{problem}**: nothing timed; not ok: " + _listed(bad) + ".")
            else:
                why = sorted({f"{impl_label(r)}: {r['reason']}" for r in doc["records"]
                              if r["problem"] == problem and r.get("reason")})
                lines.append(f"**{problem}** (nothing timed here): " + ("; ".join(why[:2]) or "no row ran") + ".")
            continue
        case, rows = timed[problem]
        good = [r for r in rows if counts(r)]
        best = good[0] if good else rows[0]
        if best["timing"].get("pct_of_peak") is None:
            slowest = max(good or rows, key=ms)
            line = (f"**{problem}** ({case}, host time): {len(rows)} timed on the CPU, fastest {impl_label(best)} "
                    f"{fmt(ms(best), '.3g')} ms, slowest {impl_label(slowest)} {fmt(ms(slowest), '.3g')} ms")
        else:
            at = sum(counts(r) and (r["timing"].get("pct_of_peak") or 0) >= VERDICT_PCT for r in rows)
            basis = (best["timing"].get("peak_basis") or "the ceiling").split(",")[0]
            line = (f"**{problem}** ({case}, cold): {at} of {len(rows)} implementations reach {VERDICT_PCT:.0f}% of "
                    f"{basis}; fastest {impl_label(best)} {fmt(ms(best), '.4g')} ms "
                    f"({fmt(best['timing']['pct_of_peak'], '.1f')}%)")
        lines.append(line + ("; not ok: " + _listed(bad) if bad else "") + ".")
    if not (doc.get("environment") or {}).get("gpus"):
        ran = sorted({impl_label(r) for r in doc["records"] if r["status"] in ("ok", "wrong", "failed")})
        aot = sorted({impl_label(r) for r in doc["records"] if r["status"] == "compile_only"})
        unrun = sorted({impl_label(r) for r in doc["records"]} - set(ran) - set(aot))
        where = ", ".join(f"{folder} ({gpu})" for folder, gpu in canonical_runs()) or "a GPU machine's run"
        lines.append(f"No GPU here: {len(ran)} implementation{'s' * (len(ran) != 1)} ran on the CPU ({', '.join(ran)})"
                     + (f", {len(aot)} compiled their test cases ahead of time" if aot else "")
                     + f", {len(unrun)} did not run (each row says why). The GPU verdict comes from a run on a "
                       f"GPU: {where}.")
    return lines


def overview_figure(readme: Path, source: str) -> str | None:
    """The run's overview figure (its folder's figures/overview.png, of the first results file named),
    as a path from the README's folder, where the run has one."""
    import os
    figure = Path(source.split(" + ")[0]).parent / "figures" / "overview.png"
    found = figure if figure.is_absolute() else Path.cwd() / figure
    return Path(os.path.relpath(found, readme.resolve().parent)).as_posix() if found.is_file() else None


def readme_text(doc: dict, figure: str | None = None) -> str:
    """The README's verdict: the overview figure (where given), a line a problem (findings), the tables."""
    lead = [f"![overview: every implementation's % of its ceiling]({figure})", ""] if figure else []
    return "\n".join([*lead, *(f"- {line}" for line in findings(doc)), "", markdown(doc)])


def markdown(doc: dict) -> str:
    """Each problem's table (HEADER), best first."""
    lines = []
    for problem, shows, cells in tables(doc):
        lines += [f"**{problem}** {shows}", "", "| " + " | ".join(HEADER) + " |", "|---|---:|---:|:---:|---:|---:|"]
        lines += ["| " + " | ".join(row) + " |" for row in cells] + [""]
    return "\n".join(lines).rstrip() + "\n"


def block(doc: dict, source: str, figure: str | None = None) -> str:
    return f"{BEGIN.format(source)}\n{readme_text(doc, figure)}{END}"


def in_readme(text: str) -> tuple[str, str] | None:
    """(the results file the README's verdict names, the verdict as it stands there), or None."""
    found = BLOCK.search(text)
    return (found.group(1), found.group(2)) if found else None


def write_into(readme: Path, doc: dict, source: str) -> None:
    """Replace the README's verdict (or append one) with `doc`'s, naming `source`."""
    text = readme.read_text()
    new = block(doc, source, overview_figure(readme, source))
    text = BLOCK.sub(lambda m: new, text, count=1) if BLOCK.search(text) else text.rstrip() + "\n\n" + new + "\n"
    readme.write_text(text)
