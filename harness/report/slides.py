"""Slides for a talk, from any results document (`ways report --slides`), 1920x1080 PNG and SVG in
slides/, every glyph at least MIN_GLYPH_PX tall, the GPU and date in the footer:
- code-<problem>[-n]: the kernel in each chosen tool (harness/report/code_slides.py); by default one
  tool per family, the family's best at the problem's headline case; `--slide-tools` names them;
- verdict-<problem>: per tool, its best variant's cold % of the problem's ceiling at the headline case,
  sorted, bars in the family's colour, with LOC and cold compile time;
- overview: every tool's % of each problem's ceiling on one slide.
A document of several GPUs gets a verdict slide and an overview per GPU (-<gpu> in the name)."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from harness.report import code_slides
from harness.report.slide_canvas import GAP, MARGIN, TEXT_PX, WIDTH, box, canvas, footer, points, save
from harness.report.style import FAMILY_COLOURS, family_colour
from harness.report.verdict import VERDICT_PCT, compile_cold, headline_case
from harness.results.records import counts, flag, impl_label

FAMILIES = ("no kernel", "SIMT", "tile", "tensor-core DSL", "C++")
ROW_PX = 34                     # a tool's row in the verdict and the overview (TEXT_PX text)


def best_rows(doc: dict, problem: str) -> dict[str | None, dict[str, dict]]:
    """Per GPU tag (None for one GPU), per backend: its best counted row at the headline case."""
    case, out = headline_case(problem), defaultdict(dict)
    for r in doc["records"]:
        pct = (r.get("timing") or {}).get("pct_of_peak")
        if r["problem"] == problem and r["case"] == case and counts(r) and pct is not None:
            best = out[(r.get("source") or {}).get("tag")]
            if r["backend"] not in best or pct > best[r["backend"]]["timing"]["pct_of_peak"]:
                best[r["backend"]] = r
    return out


def _family(name: str) -> str:
    import backends
    return backends.get(name).family if name in backends.names() else ""


def default_tools(bests: dict[str | None, dict[str, dict]]) -> list[str]:
    """One tool per family: the one whose best row at the headline case (`bests`: best_rows) is highest
    (any GPU)."""
    import backends
    best: dict[str, tuple[float, str]] = {}
    for rows in bests.values():
        for name, r in rows.items():
            fam, pct = _family(name), r["timing"]["pct_of_peak"]
            if name in backends.names() and (fam not in best or pct > best[fam][0]):
                best[fam] = (pct, name)
    return [best[f][1] for f in FAMILIES if f in best]


def caption(doc: dict, problem: str, name: str, bests: dict[str | None, dict[str, dict]]) -> str:
    """Under a tool's code: its LOC, fastest cold compile (any variant) and % of the ceiling per GPU."""
    rows = [r for r in doc["records"] if r["backend"] == name and r["problem"] == problem]
    loc = next((r["loc"]["total"] for r in rows if r.get("loc")), None)
    colds = [r["compile"]["cold_s"] for r in rows if (r.get("compile") or {}).get("cold_s") is not None]
    pcts = [f"{f'{tag} ' if tag else ''}{rows[name]['timing']['pct_of_peak']:.1f}%"
            for tag, rows in sorted(bests.items(), key=lambda kv: kv[0] or "") if name in rows]
    return " · ".join([*([f"{loc} LOC"] if loc else []), *([f"compile {seconds(min(colds))}"] if colds else []),
                       *([f"{' '.join(pcts)} of the ceiling"] if pcts else [])])


def seconds(s: float) -> str:
    return f"{s:.0f} s" if s >= 10 else f"{s:.2g} s"


def _ceiling_row(doc: dict, problem: str, tag: str | None, basis: str) -> dict | None:
    """The row the problem's % is of (an implementation's, e.g. cuBLAS through torch), where one is."""
    label = basis.split(" on ")[0]
    return next((r for r in doc["records"] if r["problem"] == problem and r["case"] == headline_case(problem)
                 and (r.get("source") or {}).get("tag") == tag and impl_label({**r, "source": None}) == label
                 and (r.get("timing") or {}).get("pct_of_peak") is not None), None)


def _verdict(doc: dict, problem: str, tag: str | None, rows: dict[str, dict], compiles: dict, out: Path) -> list:
    ranked = sorted(rows.values(), key=lambda r: -r["timing"]["pct_of_peak"])
    basis = (ranked[0]["timing"].get("peak_basis") or "the ceiling").split(",")[0]
    ceiling = _ceiling_row(doc, problem, tag, basis)
    if ceiling is not None and all(r is not ceiling for r in ranked):    # shown beside its tool's best
        ranked = sorted([*ranked, ceiling], key=lambda r: -r["timing"]["pct_of_peak"])
    fig, top, bottom = canvas(f"{problem}: % of {basis} at {headline_case(problem)} (cold)"
                              f"{f' on {tag}' if tag else ''}", footer(doc))
    ax = box(fig, MARGIN, top, WIDTH - 2 * MARGIN, bottom - top)
    label_w, bar_w = 560, 900                      # px: the tools' names, the bars at 100%
    scale = bar_w / max(110.0, max(r["timing"]["pct_of_peak"] for r in ranked))
    row_px = min(2 * ROW_PX, (bottom - top - GAP) / max(len(ranked), 1))
    for k, r in enumerate(ranked):
        y, pct = GAP + k * row_px, r["timing"]["pct_of_peak"]
        label = impl_label({**r, "source": None}) + (f" ({flag(r)})" if flag(r) else "")
        ax.text(label_w - 12, y + row_px / 2, label, ha="right", va="center", fontsize=points(TEXT_PX),
                color=family_colour(r["backend"]), fontweight="bold")
        ax.barh(y + row_px / 2, pct * scale, height=row_px * 0.7, left=label_w, color=family_colour(r["backend"]))
        cold = compiles.get((problem, impl_label(r)))
        loc = (r.get("loc") or {}).get("total")
        note = " · ".join([f"{pct:.1f}%", *([f"{loc} LOC"] if loc else []),
                           *([f"compile {seconds(cold)}"] if cold else [])])
        ax.text(label_w + pct * scale + 10, y + row_px / 2, note, va="center", fontsize=points(TEXT_PX))
    for mark in (VERDICT_PCT, 100.0):
        ax.plot([label_w + mark * scale] * 2, [GAP / 2, GAP + len(ranked) * row_px], color="#566573",
                linestyle=":" if mark < 100 else "-", linewidth=1)
        ax.text(label_w + mark * scale, GAP / 2, f"{mark:.0f}%", ha="center", va="bottom", fontsize=points(TEXT_PX))
    _legend(ax, WIDTH - 2 * MARGIN - 340, bottom - top - 5 * ROW_PX - GAP)
    return save(fig, out, f"verdict-{problem}{f'-{tag}' if tag else ''}")


def _legend(ax, left: float, top: float) -> None:
    from matplotlib.patches import Rectangle
    for k, fam in enumerate(FAMILIES):
        y = top + k * ROW_PX
        ax.add_patch(Rectangle((left, y + 6), 24, ROW_PX - 12, color=FAMILY_COLOURS[fam]))
        ax.text(left + 34, y + ROW_PX / 2, fam, va="center", fontsize=points(TEXT_PX))


def _overview(doc: dict, tag: str | None, per_problem: dict[str, dict[str, dict]], out: Path) -> list:
    from matplotlib.patches import Rectangle
    problems = sorted(per_problem)
    names = sorted({n for rows in per_problem.values() for n in rows},
                   key=lambda n: (FAMILIES.index(_family(n)) if _family(n) in FAMILIES else len(FAMILIES), n))
    fig, top, bottom = canvas(f"Every tool's best % of each problem's ceiling (cold){f' on {tag}' if tag else ''}",
                              footer(doc))
    ax = box(fig, MARGIN, top, WIDTH - 2 * MARGIN, bottom - top)
    label_w = 300
    cell_w = (WIDTH - 2 * MARGIN - label_w) / max(len(problems), 1)
    row_px = min(2 * ROW_PX, (bottom - top - 2 * ROW_PX) / max(len(names), 1))
    for j, problem in enumerate(problems):
        ax.text(label_w + (j + 0.5) * cell_w, ROW_PX / 2, problem, ha="center", va="center",
                fontsize=points(TEXT_PX), fontweight="bold")
        ax.text(label_w + (j + 0.5) * cell_w, 1.4 * ROW_PX, headline_case(problem), ha="center", va="center",
                fontsize=points(TEXT_PX), color="#566573")
    for k, name in enumerate(names):
        y = 2 * ROW_PX + k * row_px
        ax.text(label_w - 12, y + row_px / 2, name, ha="right", va="center", fontsize=points(TEXT_PX),
                color=family_colour(name), fontweight="bold")
        for j, problem in enumerate(problems):
            r = per_problem[problem].get(name)
            pct = r["timing"]["pct_of_peak"] if r else None
            shade = "#f2f3f4" if pct is None else "#abebc6" if pct >= VERDICT_PCT else "#f9e79f" if pct >= 60 \
                else "#f5b7b1"
            ax.add_patch(Rectangle((label_w + j * cell_w + 2, y + 2), cell_w - 4, row_px - 4, color=shade))
            ax.text(label_w + (j + 0.5) * cell_w, y + row_px / 2, "—" if pct is None else f"{pct:.1f}%",
                    ha="center", va="center", fontsize=points(TEXT_PX))
    return save(fig, out, f"overview{f'-{tag}' if tag else ''}")


def write(doc: dict, out: Path, tools: list[str] | None = None) -> list[Path]:
    """Every slide of `doc` into `out`; `tools`: the code slides' tools (default: one per family)."""
    import backends
    compiles = compile_cold(doc)
    bests = {problem: best_rows(doc, problem) for problem in sorted({r["problem"] for r in doc["records"]})}
    paths = []
    by_tag: dict = defaultdict(dict)
    for problem, best in bests.items():
        chosen = [n for n in (tools or default_tools(best))
                  if n in backends.names() and backends.source_path(n, problem).is_file()]
        panels = [code_slides.tool(n, _family(n), backends.source_path(n, problem).read_text(),
                                   caption(doc, problem, n, best)) for n in chosen]
        paths += code_slides.write(problem, panels, footer(doc), out)
        for tag, rows in sorted(best.items(), key=lambda kv: kv[0] or ""):
            paths += _verdict(doc, problem, tag, rows, compiles, out)
            by_tag[tag][problem] = rows
    for tag, per_problem in sorted(by_tag.items(), key=lambda kv: kv[0] or ""):
        paths += _overview(doc, tag, per_problem, out)
    return paths


