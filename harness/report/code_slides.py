"""Code slides: a problem's kernel in each chosen tool (harness/report/kernel_source.py finds it in the
implementation file), at most MAX_PANELS a slide at CODE_PX, syntax-highlighted, each panel headed in
its tool family's colour and captioned with how many lines the whole file has, its LOC, cold compile
time and % of the problem's ceiling. Each slide takes the layout with the most panels in which every
panel's code fits (its lines, and their code before any trailing comment); a kernel longer than the
tallest panel is cut, saying how many lines are left out. More tools than fit: several slides."""
from __future__ import annotations

import itertools

from harness.report import kernel_source
from harness.report.slide_canvas import (CODE_PX, FOOTER_BAND, GAP, HEADING_PX, HEIGHT, MARGIN, TEXT_PX,
                                         TITLE_BAND, WIDTH, box, canvas, points, save)
from harness.report.style import family_colour

LAYOUTS = ((3, 2), (2, 2), (3, 1), (2, 1), (1, 1))     # (columns, rows), most panels first
MAX_PANELS = max(c * r for c, r in LAYOUTS)
LINE_PX = CODE_PX * 1.25
ADVANCE_EM = 0.6                     # a monospace glyph's width, in em
HEADER_PX, CAPTION_PX, PAD = 40, 34, 12
TOKEN_COLOURS = {"Keyword": "#7d3c98", "Name.Function": "#1f618d", "Name.Class": "#1f618d",
                 "Name.Builtin": "#117a65", "Literal.String": "#b03a2e", "Literal.Number": "#af601a",
                 "Comment": "#839192", "Operator": "#2c3e50", "Keyword.Type": "#7d3c98"}


def _colour(token_type) -> str:
    """The colour of a pygments token type: that of its nearest listed ancestor."""
    from pygments import token
    for name, colour in TOKEN_COLOURS.items():
        if token_type in token.string_to_tokentype(name):
            return colour
    return "#212f3d"


def _panel_size(cols: int, rows: int, top: float, bottom: float) -> tuple[float, float]:
    return (WIDTH - 2 * MARGIN - (cols - 1) * GAP) / cols, (bottom - top - (rows - 1) * GAP) / rows


def _room(height: float) -> int:
    """Lines of code a panel `height` pixels tall shows at CODE_PX."""
    return int((height - HEADER_PX - CAPTION_PX - 2 * PAD) // LINE_PX)


def _shown(lines: list, room: int) -> int:
    """How many of the kernel's lines a panel shows: all that fit, else one fewer (its last line says
    how many more there are)."""
    return len(lines) if len(lines) <= room else room - 1


def capacity(cols: int, rows: int, top: float, bottom: float) -> tuple[int, int]:
    """(lines, characters) of code a panel of the layout shows at CODE_PX."""
    width, height = _panel_size(cols, rows, top, bottom)
    return _room(height), int((width - 2 * PAD) // (CODE_PX * ADVANCE_EM))


def _code_width(line: str) -> int:
    code, _, _ = line.partition("  #")
    return len(code.rstrip())


def _fits(lines, lines_cap: int, chars_cap: int) -> bool:
    return len(lines) <= lines_cap and max((_code_width(t) for _, t in lines), default=0) <= chars_cap


def layouts(panels: list[tuple[str, list]], top: float, bottom: float) -> list[tuple[int, int, list]]:
    """Slides as (columns, rows, panels): each takes the layout with the most panels that fit."""
    slides, i = [], 0
    while i < len(panels):
        left = len(panels) - i
        usable = [(c, r) for c, r in LAYOUTS if c * (r - 1) < left and (r > 1 or left >= c) and c * r > 1] \
            or [LAYOUTS[-1]]
        fallback = (2, 1) if left >= 2 else (1, 1)       # none fits: two tall panels, kernels cut
        cols, rows = next(((c, r) for c, r in usable
                           if all(_fits(p[1], *capacity(c, r, top, bottom)) for p in panels[i:i + c * r])),
                          fallback)
        slides.append((cols, rows, panels[i:i + cols * rows]))
        i += cols * rows
    return slides


def _tokens(lines: list[tuple[str, str]]):
    """Per line, its (colour, text) pieces: each run of one language lexed as a whole."""
    from pygments.lexers import CudaLexer, PythonLexer
    out = []
    for language, run in itertools.groupby(lines, key=lambda line: line[0]):
        lexer = CudaLexer() if language == "cuda" else PythonLexer()
        row: list = []
        for ttype, text in lexer.get_tokens("\n".join(t for _, t in run) + "\n"):
            for j, part in enumerate(text.split("\n")):
                if j:
                    out.append(row)
                    row = []
                if part:
                    row.append((_colour(ttype), part))
    return out[:len(lines)]


def _panel(fig, left, top, width, height, title, colour, lines, caption) -> None:
    from matplotlib.patches import Rectangle
    ax = box(fig, left, top, width, height)
    ax.add_patch(Rectangle((0, 0), width, height, facecolor="#fbfcfc", edgecolor="#d5d8dc"))
    ax.add_patch(Rectangle((0, 0), width, HEADER_PX, facecolor=colour, edgecolor="none"))
    ax.text(PAD, HEADER_PX / 2, title, color="white", fontsize=points(HEADING_PX), fontweight="bold", va="center")
    shown = _shown(lines, _room(height))
    rows = _tokens(lines[:shown])
    if shown < len(lines):
        rows.append([("#839192", f"... {len(lines) - shown} more lines of the kernel")])
    advance = CODE_PX * ADVANCE_EM
    for n, row in enumerate(rows):
        col, y = 0, HEADER_PX + PAD + n * LINE_PX
        for colour_, text in row:
            if text.strip():
                ax.text(PAD + col * advance, y, text, fontsize=points(CODE_PX), family="DejaVu Sans Mono",
                        color=colour_, va="top", clip_on=True)
            col += len(text)
    ax.text(PAD, height - CAPTION_PX / 2, caption, fontsize=points(TEXT_PX), color="#424949", va="center",
            clip_on=True)


def write(problem: str, tools: list[dict], footer_text: str, out) -> list:
    """The code slides of one problem; `tools`: dicts of name, family, colour, source, caption."""
    panels = []
    for tool in tools:
        lines, total = kernel_source.excerpt(tool["source"])
        if lines:
            panels.append((tool, lines, total))
    top, bottom = TITLE_BAND, HEIGHT - FOOTER_BAND
    slides = layouts([(t["name"], lines) for t, lines, _ in panels], top, bottom)
    paths, k = [], 0
    for n, (cols, rows, chunk) in enumerate(slides, 1):
        part = f" ({n} of {len(slides)})" if len(slides) > 1 else ""
        fig, top, bottom = canvas(f"{problem}: the kernel, tool by tool{part}", footer_text)
        width, height = _panel_size(cols, rows, top, bottom)
        for j in range(len(chunk)):
            tool, lines, total = panels[k + j]
            left = MARGIN + (j % cols) * (width + GAP)
            y = top + (j // cols) * (height + GAP)
            caption = " · ".join([f"{_shown(lines, _room(height))} of the file's {total} lines",
                                  *([tool["caption"]] if tool["caption"] else [])])
            _panel(fig, left, y, width, height, f"{tool['name']} ({tool['family']})", tool["colour"], lines, caption)
        k += len(chunk)
        paths += save(fig, out, f"code-{problem}-{n}" if len(slides) > 1 else f"code-{problem}")
    return paths


def tool(name: str, family: str, source: str, caption: str) -> dict:
    return {"name": name, "family": family or "other", "colour": family_colour(name), "source": source,
            "caption": caption}

