"""One self-contained HTML file for a results document: environment, figures (inline SVG),
sortable tables, and per problem each backend's implementation source side by side (escaped and
highlighted by pygments) with its LOC, compile time and speed. Opens without a network."""
from __future__ import annotations

import html
import re
from collections import defaultdict
from pathlib import Path

from harness import ROOT
from harness.measure import loc
from harness.report import verdict
from harness.report.markdown import per_impl, title
from harness.report.style import fmt
from harness.results.records import QUICK_NOTE, flag, flag_note, impl_label, loud, quick_runs

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1400px; padding: 0 1em; color: #222; }
h1, h2, h3 { line-height: 1.2; } table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.sortable th { cursor: pointer; background: #f3f3f3; user-select: none; }
th[aria-sort=ascending]::after { content: " \\25B2"; } th[aria-sort=descending]::after { content: " \\25BC"; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
.sources { display: flex; gap: 12px; overflow-x: auto; align-items: flex-start; padding-bottom: 8px; }
.source { flex: 0 0 560px; border: 1px solid #ccc; border-radius: 4px; }
.source header { background: #f3f3f3; padding: 6px 8px; font-size: 13px; }
.source .highlight { margin: 0; max-height: 640px; overflow: auto; font-size: 12px; }
.source pre { margin: 0; padding: 6px 8px; } .file { color: #666; font-family: monospace; }
.flag { background: #c0392b; color: #fff; border-radius: 3px; padding: 0 5px; font-weight: 600; }
.quick { background: #7f8c8d; color: #fff; border-radius: 3px; padding: 0 5px; }
"""

SORT_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
      var key = function (row) {
        var text = row.cells[col].textContent.trim(), x = parseFloat(text.replace(/[^0-9eE+.-]/g, ""));
        return text === "" ? null : (isNaN(x) || !/^[-+.0-9]/.test(text) ? text.toLowerCase() : x);
      };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === null || y === null) return (x === null) - (y === null);
        if (typeof x !== typeof y) return typeof x === "number" ? -1 : 1;
        return (x < y ? -1 : x > y ? 1 : 0) * dir;
      });
      rows.forEach(function (row) { body.appendChild(row); });
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    });
  });
});
"""


class Markup(str):
    """A table cell that is HTML already (not escaped)."""


def _cell(c) -> str:
    return c if isinstance(c, Markup) else html.escape(str(c))


def _badge(r: dict) -> Markup:
    """The row's integrity flag as a badge, its reason as the tooltip; a grey "quick" badge for a
    row of a quick run."""
    badges = [f"<span class=flag title='{html.escape(flag_note(r), quote=True)}'>{html.escape(loud(flag(r)))}</span>"
              if flag(r) else "",
              f"<span class=quick title='{html.escape(QUICK_NOTE, quote=True)}'>quick</span>" if r.get("quick") else ""]
    return Markup(" ".join(b for b in badges if b))


def _scorecard(doc: dict) -> str:
    """report/scorecard.py's table, sortable."""
    from harness.report import scorecard
    header, body, numeric = scorecard.table(doc)
    return _table(header, body, numeric=set(range(1, numeric + 1)))


def _strong(text: str) -> str:
    """A finding's Markdown bold (**problem**) as HTML, the rest escaped."""
    return re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(text))


def _table(header: list[str], rows: list[list], numeric: set[int] = frozenset()) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td class=num>{_cell(c)}</td>" if i in numeric
                                    else f"<td>{_cell(c)}</td>" for i, c in enumerate(row)) + "</tr>"
                   for row in rows)
    return f"<table class=sortable><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _svg(path: Path) -> str:
    """An SVG file's markup without its XML prolog, to inline in HTML."""
    text = path.read_text()
    return text[text.index("<svg"):]


def _environment(doc: dict) -> str:
    env = doc["environment"]
    gpus = env.get("gpus") or []
    rows = [["GPU", ", ".join(g["name"] for g in gpus) or "none"],
            ["driver", ", ".join(f"{g['driver']} (CUDA {g['driver_cuda']})" for g in gpus) or "-"],
            ["Python", env.get("python", "")], ["platform", env.get("platform", "")],
            ["commit", env.get("git_commit") or "not recorded"]]
    rows += [[name, version] for name, version in sorted(env.get("versions", {}).items())]
    for m in doc["run"].get("merged_from") or []:
        rows.append([f"merged run {m['id']}", f"{m['file']}: {m['gpu']}, {m['started']}, commit {m['commit']}"])
    return _table(["what", "value"], rows)


def _timed_table(rows: list[dict]) -> str:
    timed = sorted((r for r in rows if r.get("timing")),
                   key=lambda r: (r["case"], r["timing"].get("device_ms_cold") or float("inf")))
    def cells(t):       # one sortable number a column: cold and sustained apart
        cold, sus = t.get("cold") or {}, t.get("sustained") or {}
        return [fmt(t.get("device_ms_cold"), ".4g"), fmt(t.get("device_ms_sustained"), ".4g"),
                fmt(t.get("host_ms"), ".4g"), f"{fmt(t.get('achieved'), '.4g')} {t.get('unit') or ''}",
                fmt(t.get("pct_of_peak"), ".1f"), fmt(t.get("pct_of_peak_sustained"), ".1f"),
                fmt(cold.get("sm_clock_mhz"), ".0f"), fmt(sus.get("sm_clock_mhz"), ".0f")]
    body = [[r["case"], impl_label(r), *cells(r["timing"]), _badge(r)] for r in timed]
    return _table(["case", "implementation", "cold ms", "sustained ms", "host ms", "achieved (cold)",
                   "% of peak cold", "% of peak sustained", "SM MHz cold", "SM MHz sustained", "flag"], body,
                  set(range(2, 10))) if body else ""


def _impl_table(rows: list[dict]) -> str:
    body = []
    for (_, label), s in sorted(per_impl(rows).items()):
        c, comp, size = s["counts"], s["compile"], s["loc"]
        body.append([label, c["ok"], c["compile_only"], c["not_applicable"], c["wrong"] + c["failed"] + c["skipped"],
                     c["unavailable"], fmt(s["worst"], ".2e"), fmt(comp.get("cold_s")), fmt(comp.get("warm_s")),
                     fmt(size.get("total"), "d"), fmt(size.get("kernel"), "d")])
    return _table(["implementation", "ok", "compile only", "n/a", "wrong, failed or skipped", "unavailable",
                   "worst rel err", "compile cold s", "compile warm s", "LOC", "kernel LOC"], body, set(range(1, 11)))


def _sources(problem: str, rows: list[dict], formatter) -> str:
    """Each backend's file for the problem (and the private helpers it imports), side by side."""
    from pygments import highlight
    from pygments.lexers import PythonLexer
    stats = per_impl(rows)
    cards = []
    for backend in sorted({r["backend"] for r in rows}):
        path = ROOT / "backends" / backend / f"{problem}.py"
        if not path.is_file():
            continue
        labels = [label for (_, label) in stats if label.split("[")[0].split(" @ ")[0] == backend]
        lines = []
        for label in labels:
            s = stats[(problem, label)]
            lines.append(f"{label}: compile {fmt(s['compile'].get('cold_s'))} s cold / "
                         f"{fmt(s['compile'].get('warm_s'))} s warm; best {fmt(s['best_pct'], '.1f')}% of peak")
        size = loc.count_implementation(path)
        variants = [label.split("[")[1].split("]")[0] for label in labels if "[" in label.split(" @ ")[0]]
        files = [path, *loc.private_imports(path), *loc.variant_modules(path, variants)]
        code = "".join(f"<div class=file>{html.escape(str(f.relative_to(ROOT)))}</div>"
                       + highlight(f.read_text(), PythonLexer(), formatter) for f in files)
        cards.append(f"<div class=source><header><b>{html.escape(backend)}</b> · {size.total} LOC "
                     f"({size.kernel} kernel)<br>{'<br>'.join(html.escape(x) for x in lines)}</header>{code}</div>")
    return f"<div class=sources>{''.join(cards)}</div>"


def render(doc: dict, figures: list[Path], slides: list[Path] = ()) -> str:
    """The page; `slides`: the slides' PNGs, relative to the page (linked, not embedded)."""
    from pygments.formatters import HtmlFormatter
    formatter = HtmlFormatter(cssclass="highlight")
    heading = title(doc)
    by_problem = defaultdict(list)
    for r in doc["records"]:
        by_problem[r["problem"]].append(r)
    svgs = {p.stem: p for p in figures if p.suffix == ".svg"}
    found, tables = verdict.findings(doc), verdict.tables(doc)
    parts = [f"<h1>{html.escape(heading)}</h1>",
             *(["<h2 id=found>What this run found</h2><ul>", *(f"<li>{_strong(x)}</li>" for x in found), "</ul>"]
               if found else []),
             *([f"<figure id=fig-overview>{_svg(svgs['overview'])}</figure>"] if "overview" in svgs else []),
             f"<p>Run {html.escape(doc['run']['id'])}, started {html.escape(doc['run'].get('started') or '')}"
             f"{'' if doc['run'].get('complete') else ' (incomplete)'}.</p>",
             *([f"<p>Rows marked quick come from a {html.escape(QUICK_NOTE)}.</p>"] if quick_runs(doc) else []),
             *(["<h2 id=verdict>Verdict</h2>"] if tables else [])]
    for problem, shows, cells in tables:        # who reaches the ceiling, at what cost
        parts += [f"<h3>{html.escape(f'{problem} {shows}')}</h3>", _table(verdict.HEADER, cells, {1, 2, 4, 5})]
    if slides:
        links = [f"<li><a href='{html.escape(p.as_posix())}'>{html.escape(p.stem)}</a></li>" for p in slides]
        parts += ["<h2 id=slides>Slides</h2><ul>", *links, "</ul>"]
    parts += ["<h2>Overview</h2>"]
    parts += [f"<figure id='fig-{name}'>{_svg(svgs[name])}</figure>"
              for name in ("scorecard", "loc-vs-peak", "compile-times", "crosscheck") if name in svgs]
    parts += ["<h2>Scorecard</h2>", _scorecard(doc)]
    for problem in sorted(by_problem):
        rows = by_problem[problem]
        parts += [f"<h2 id='{problem}'>{problem}</h2>", _timed_table(rows), _impl_table(rows)]
        parts += [f"<figure>{_svg(path)}</figure>" for name, path in sorted(svgs.items())
                  if re.match(rf"{re.escape(problem)}-", name)]
        parts += ["<h3>Source, side by side</h3>", _sources(problem, rows, formatter)]
    parts += ["<h2 id=environment>Environment</h2>", _environment(doc)]
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            f"<title>{html.escape(heading)}</title><style>{STYLE}{formatter.get_style_defs('.highlight')}</style>"
            f"</head><body>{''.join(parts)}<script>{SORT_SCRIPT}</script></body></html>")
