"""`ways report`'s pipeline: report.md, figures/, slides/ and the HTML page of one results document."""
from __future__ import annotations

from pathlib import Path


class NeedsExtra(ImportError):
    """A part of the report needs a package that is not installed (the message says which extra)."""


def write(doc: dict, out: Path, html: bool, slides: bool = False, written: list[Path] | None = None,
          echo: bool = True) -> None:
    """report.md (printed too where `echo`), figures/, and with `html` index.html, into `out`."""
    from harness.report import markdown
    text = markdown.markdown(doc)
    (out / "report.md").write_text(text + "\n")
    if echo:
        print(text)
    written = [out / "report.md", *(written or [])]
    try:
        from harness.report import figures
        paths = figures.write_all(doc, out / "figures")
    except ImportError as exc:
        if html:
            raise NeedsExtra(f"--html needs matplotlib and pygments (pip install '.[report]'): {exc}") from None
        print(f"\nfigures not written: {exc} (pip install '.[report]')")
        paths = []
    written += paths
    if slides:
        from harness.report import slides as slides_mod
        written += slides_mod.write(doc, out / "slides")
    if html:
        from harness.report import page
        try:
            text_html = page.render(doc, paths)
        except ImportError as exc:
            raise NeedsExtra(f"--html needs pygments (pip install '.[report]'): {exc}") from None
        (out / "index.html").write_text(text_html)
        written.append(out / "index.html")
    more = f" and {len(written) - 4} more" if len(written) > 4 else ""
    print(f"\nwritten: {', '.join(str(p) for p in written[:4])}{more}")
    if html:
        print(f"page: {(out / 'index.html').resolve()} (self-contained: open it in a browser)")
