"""What every view shares: numbers in table cells, matplotlib set up the same way (a reproducible
SVG), files written the same way, and each tool family's colour (a backend's `family`), so a tool
looks the same in every table, figure and slide."""
from __future__ import annotations

from pathlib import Path

FAMILY_COLOURS = {"no kernel": "#7f8c8d", "SIMT": "#2e86c1", "tile": "#28b463", "tensor-core DSL": "#8e44ad",
                  "C++": "#d35400", "": "#34495e"}


def fmt(x, spec=".3g") -> str:
    """A number for a table cell ("" for none)."""
    return "" if x is None or x == "" else format(x, spec) if isinstance(x, (int, float)) else str(x)


def family_colour(backend: str) -> str:
    """The colour of the backend's tool family; a name no backend has gets the neutral one."""
    import backends
    family = backends.get(backend).family if backend in backends.names() else ""
    return FAMILY_COLOURS.get(family, FAMILY_COLOURS[""])


def plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot
    # a fixed salt for the SVG ids, so the same results give the same files (a clean diff when
    # committed reports are regenerated)
    pyplot.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "ways", "figure.dpi": 100, "font.size": 9})
    return pyplot


def warm_up() -> None:
    """Import matplotlib (on a fresh machine it builds its font cache then) before the figures are due."""
    plt()


def warm_up_in_background() -> None:
    """warm_up() in a thread of a mostly waiting process (`ways run --html` while it runs), so the page
    follows the run sooner; where matplotlib is missing, writing the report says so."""
    import threading

    def warm():
        try:
            warm_up()
        except ImportError:
            pass
    threading.Thread(target=warm, daemon=True).start()


def save(fig, out: Path, name: str) -> list[Path]:
    """`fig` as out/name.png and .svg (no date in the SVG), then closed."""
    paths = [out / f"{name}.png", out / f"{name}.svg"]
    for p in paths:
        fig.savefig(p, bbox_inches="tight", metadata={"Date": None} if p.suffix == ".svg" else None)
    plt().close(fig)
    return paths
