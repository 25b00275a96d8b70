"""`ways report`'s pipeline: report.md, manifest.json, figures/, slides/ and the HTML page of one
results document."""
from __future__ import annotations

import json
from pathlib import Path


class NeedsExtra(ImportError):
    """A part of the report needs a package that is not installed (the message says which extra)."""


def write(doc: dict, out: Path, html: bool, slides: bool = False, written: list[Path] | None = None,
          slide_tools: list[str] | None = None) -> None:
    """report.md, manifest.json, figures/, and with `html` index.html, into `out`; then what was written."""
    from harness.report import markdown
    text = markdown.markdown(doc)
    (out / "report.md").write_text(text + "\n")
    (out / "manifest.json").write_text(json.dumps(manifest(doc), indent=1) + "\n")
    written = [out / "report.md", out / "manifest.json", *(written or [])]
    try:
        from harness.report import figures
        paths = figures.write_all(doc, out / "figures")
    except ImportError as exc:
        if exc.name not in ("matplotlib", "pygments"):       # the lab's own import error: not an extra's
            raise
        if html:
            raise NeedsExtra(f"--html needs matplotlib and pygments (pip install '.[report]'): {exc}") from None
        print(f"\nfigures not written: {exc} (pip install '.[report]')")
        paths = []
    written += paths
    slide_paths = []
    if slides:
        from harness.report import slides as slides_mod
        slide_paths = slides_mod.write(doc, out / "slides", slide_tools)
        written += slide_paths
    if html:
        from harness.report import page
        try:
            text_html = page.render(doc, paths, [p.relative_to(out) for p in slide_paths if p.suffix == ".png"])
        except ImportError as exc:
            raise NeedsExtra(f"--html needs pygments (pip install '.[report]'): {exc}") from None
        (out / "index.html").write_text(text_html)
        written.append(out / "index.html")
    more = f" and {len(written) - 4} more" if len(written) > 4 else ""
    print(f"written: {', '.join(str(p) for p in written[:4])}{more}")
    if html:
        print(f"page: {(out / 'index.html').resolve()} (self-contained: open it in a browser)")


def manifest(doc: dict) -> dict:
    """Where a results document comes from: when, which commit, which GPU and driver, what command
    (each run's, where several were merged)."""
    runs = doc["run"].get("merged_from") or [doc["run"]]
    env = doc.get("environment") or {}
    return {
        "runs": [{"id": r.get("id"), "started": r.get("started"), "finished": r.get("finished"),
                  "complete": r.get("complete"), "command": "ways " + " ".join(r.get("argv") or []),
                  "commit": r.get("commit", env.get("git_commit")), "gpu": r.get("gpu")} for r in runs],
        "commit": env.get("git_commit"),
        "gpus": [{k: g.get(k) for k in ("name", "uuid", "driver", "driver_cuda", "max_sm_clock_mhz")}
                 for g in env.get("gpus") or []],
        "gpu_state_before": env.get("gpu_state_before"), "gpu_state_after": env.get("gpu_state_after"),
        "python": env.get("python"), "versions": env.get("versions"),
        "records": len(doc["records"]),
    }
