"""Slide figures: per problem, every backend's implementation file side by side on one 16:9 figure,
syntax-highlighted (pygments tokens, monospace), headed in its tool family's colour, with its LOC,
compile time and best % of peak under it (PNG and SVG: slides/<problem>.png, .svg)."""
from __future__ import annotations

import math
from pathlib import Path

from harness.report.scorecard import rows as scorecard_rows
from harness.report.style import family_colour, plt as _plt, save as _save
TOKEN_COLOURS = {"Keyword": "#7d3c98", "Name.Function": "#1f618d", "Name.Class": "#1f618d",
                 "Name.Builtin": "#117a65", "Literal.String": "#b03a2e", "Literal.Number": "#af601a",
                 "Comment": "#839192", "Operator": "#2c3e50"}


def _colour(token_type) -> str:
    """The colour of a pygments token type: that of its nearest listed ancestor."""
    from pygments import token
    for name, colour in TOKEN_COLOURS.items():
        if token_type in token.string_to_tokentype(name):
            return colour
    return "#212f3d"


def _panel(ax, source: str, title: str, caption: str, colour: str) -> None:
    from pygments.lexers import PythonLexer
    lines = source.splitlines() or [""]
    ax.set_axis_off()
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.add_patch(_rect((0, 0.93), 1, 0.07, colour))
    ax.text(0.02, 0.965, title, color="white", fontsize=8, fontweight="bold", va="center")
    ax.text(0.02, -0.04, caption, fontsize=6.5, va="top")
    box = ax.get_window_extent()
    height, width = (v / ax.figure.dpi * 72 for v in (box.height * 0.9, box.width * 0.96))   # points
    longest = max(len(line) for line in lines) or 1
    # monospace glyphs are about 0.6 em wide: the size that fits every line and every column
    size = max(0.5, min(5.0, height / (len(lines) * 1.2), width / (longest * 0.6)))
    step = size * 1.2 / (box.height / ax.figure.dpi * 72)          # a line's height, in axes units
    char = size * 0.6 / (box.width / ax.figure.dpi * 72)           # a column's width
    row, col = 0, 0
    for ttype, text in PythonLexer().get_tokens(source):
        for k, part in enumerate(text.split("\n")):
            if k:
                row, col = row + 1, 0
            if part.strip():
                ax.text(0.02 + col * char, 0.915 - row * step, part, fontsize=size, family="monospace",
                        color=_colour(ttype), va="top", clip_on=True)
            col += len(part)


def _rect(xy, w, h, colour):
    from matplotlib.patches import Rectangle
    return Rectangle(xy, w, h, facecolor=colour, edgecolor="none")


def caption(doc: dict, stats: dict, name: str, problem: str) -> str:
    """Under a backend's source: its LOC, fastest cold compile and best % of peak (on any GPU of the
    document) over its variants; `stats`: the scorecard's rows by implementation."""
    labels = [s for label, s in stats.items() if label == name or label.startswith(f"{name}[")]
    pct = max((v for s in labels for k, v in s["per problem"].items() if k.split()[0] == problem), default=0) or None
    colds = [s["compile cold s"] for s in labels if s["compile cold s"] is not None]
    loc = next((r["loc"]["total"] for r in doc["records"]
                if r["backend"] == name and r["problem"] == problem and r.get("loc")), None)
    return (f"{loc} LOC" if loc else "") + (f" · compile {min(colds):.3g} s" if colds else "") + \
        (f" · {pct:.1f}% of peak" if pct else "")


def write(doc: dict, out: Path) -> list[Path]:
    """One figure per problem of `doc`; the paths written."""
    import backends
    plt = _plt()
    stats = {r["implementation"]: r for r in scorecard_rows(doc)}
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for problem in sorted({r["problem"] for r in doc["records"]}):
        names = sorted({r["backend"] for r in doc["records"] if r["problem"] == problem})
        names = [n for n in names if n in backends.names() and backends.source_path(n, problem).is_file()]
        if not names:
            continue
        cols = math.ceil(math.sqrt(len(names) * 16 / 9))
        rows = math.ceil(len(names) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(13.33, 7.5), squeeze=False)
        fig.subplots_adjust(left=0.01, right=0.99, top=0.93, bottom=0.05, wspace=0.04, hspace=0.22)
        for ax in axes.flat[len(names):]:
            ax.set_axis_off()
        for ax, name in zip(axes.flat, names, strict=False):
            backend = backends.get(name)
            _panel(ax, backends.source_path(name, problem).read_text(), f"{name} ({backend.family or 'other'})",
                   caption(doc, stats, name, problem), family_colour(name))
        fig.suptitle(f"{problem}: every implementation, its lines, compile time and best % of peak (colour: tool "
                     f"family)", fontsize=11)
        paths += _save(fig, out, problem)
    return paths
