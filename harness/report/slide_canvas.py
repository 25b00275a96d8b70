"""What every slide shares: a 1920x1080 canvas, sizes given in pixels of that canvas (never under
MIN_GLYPH_PX, so a projected slide stays legible), the title band and the footer (GPU and date), and
files written at exactly that size (PNG and SVG)."""
from __future__ import annotations

from pathlib import Path

from harness.report.style import plt as _plt

WIDTH, HEIGHT, DPI = 1920, 1080, 100
MIN_GLYPH_PX = 14                    # the smallest text on any slide (a glyph's em, in pixels at 1080p)
TITLE_PX, HEADING_PX, TEXT_PX = 32, 20, 16
# code: DejaVu Sans Mono's glyphs are 0.6 em wide, rendered at a whole 9 px at 15 px (at 14 px, 8 px)
CODE_PX = 15
MARGIN, GAP = 24, 24                 # px: around the slide, between panels
TITLE_BAND, FOOTER_BAND = 84, 44     # px: the title's band at the top, the footer's at the bottom


def points(px: float) -> float:
    """A font size in points for `px` pixels of the 1920x1080 canvas."""
    return px * 72 / DPI


def canvas(title: str, footer: str):
    """A new slide with its title and footer; (figure, y of the content's top, y of its bottom) in
    pixels from the top."""
    plt = _plt()
    fig = plt.figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI)
    fig.text(MARGIN / WIDTH, 1 - (TITLE_BAND / 2) / HEIGHT, title, fontsize=points(TITLE_PX), fontweight="bold",
             va="center")
    fig.text(MARGIN / WIDTH, (FOOTER_BAND / 2) / HEIGHT, footer, fontsize=points(TEXT_PX), color="#566573",
             va="center")
    return fig, TITLE_BAND, HEIGHT - FOOTER_BAND


def box(fig, left: float, top: float, width: float, height: float):
    """An axes over a rectangle given in pixels from the top-left corner, axes units = pixels."""
    ax = fig.add_axes((left / WIDTH, 1 - (top + height) / HEIGHT, width / WIDTH, height / HEIGHT))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)           # y grows downwards, as on the page
    ax.set_axis_off()
    return ax


def footer(doc: dict) -> str:
    """The GPUs and the date of the results, and what drew the slide."""
    gpus = sorted({(r.get("source") or {}).get("gpu") for r in doc["records"]} - {None}) or \
        sorted({g.get("name") for g in (doc.get("environment") or {}).get("gpus") or []} - {None})
    runs = doc["run"].get("merged_from") or [doc["run"]]
    dates = sorted({(r.get("started") or "")[:10] for r in runs} - {""})
    when = " to ".join(dict.fromkeys([dates[0], dates[-1]])) if dates else "?"
    return f"{' + '.join(gpus) or 'no GPU'} · run {when} · ways report --slides"


def save(fig, out: Path, name: str) -> list[Path]:
    """`fig` as out/name.png (exactly WIDTH x HEIGHT) and out/name.svg, then closed."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png", out / f"{name}.svg"]
    for p in paths:
        fig.savefig(p, dpi=DPI, metadata={"Date": None} if p.suffix == ".svg" else None)
    _plt().close(fig)
    return paths
