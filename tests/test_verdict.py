"""The README leads with a verdict generated from one named run: regenerated here from that run, it
must be what the README says (so the two can never disagree), and it must make sense."""
import json
from pathlib import Path

from harness.report import verdict
from tests.conftest import ROOT


def test_the_readme_verdict_is_its_run():
    found = verdict.in_readme((ROOT / "README.md").read_text())
    assert found, "README.md has no verdict block"
    source, text = found
    doc = json.loads((ROOT / source).read_text())
    figure = verdict.overview_figure(ROOT / "README.md", str(ROOT / source))
    assert text == verdict.readme_text(doc, figure), \
        f"README.md's verdict is stale: `ways report {source} --readme README.md`"


def test_the_readme_leads_with_the_overview_figure_and_a_line_a_problem():
    """A newcomer's first screen: the run's overview figure, then one line a problem, then the tables."""
    source, text = verdict.in_readme((ROOT / "README.md").read_text())
    doc = json.loads((ROOT / source).read_text())
    folder = Path(source).parent.as_posix()
    figure = f"![overview: every implementation's % of its ceiling]({folder}/figures/overview.png)"
    assert text.startswith(figure) and (ROOT / Path(source).parent / "figures/overview.png").is_file()
    lines = [f"- {line}" for line in verdict.findings(doc)]
    at = [text.index(line) for line in lines]
    assert at == sorted(at) and at[-1] < text.index("| implementation |")
    assert len(lines) == len(verdict.tables(doc))


def test_the_verdict_marks_rows_at_ninety_percent_and_flags():
    doc = {"records": [
        {"problem": "segreduce", "case": "8192x32768-float32", "backend": "a", "variant": "", "status": "ok",
         "loc": {"total": 12}, "timing": {"device_ms_cold": 0.35, "pct_of_peak": 98.0,
                                          "peak_basis": "read stream, same run, cold"}},
        {"problem": "segreduce", "case": "8192x32768-float32", "backend": "b", "variant": "v", "status": "ok",
         "loc": {"total": 30}, "timing": {"device_ms_cold": 0.6, "pct_of_peak": 60.0}},
        {"problem": "segreduce", "case": "8192x32768-float32", "backend": "c", "variant": "", "status": "ok",
         "loc": {"total": 5}, "timing": {"device_ms_cold": 0.2, "pct_of_peak": 150.0, "suspect": "too fast"}}]}
    rows = [line for line in verdict.markdown(doc).splitlines() if line.startswith("| ") and "ms" not in line]
    assert rows[0].startswith("| c (suspect) |") and "| ✓ |" not in rows[0]       # flagged: never counts
    assert rows[1].startswith("| a |") and "| ✓ |" in rows[1]
    assert rows[2].startswith("| b[v] |") and "| ✓ |" not in rows[2]
    assert "% of read stream" in verdict.markdown(doc)


def test_report_writes_the_verdict_into_a_readme(tmp_path):
    from tests.test_cli import ways
    readme = tmp_path / "README.md"
    readme.write_text("# x\n")
    src = ROOT / "reports/h100/results.json"
    r = ways("report", str(src), "--out", str(tmp_path / "rep"), "--readme", str(readme))
    assert r.returncode == 0, r.stderr
    found = verdict.in_readme(readme.read_text())
    assert found and found[0] == str(src) and "| ✓ |" in found[1]


def test_the_page_leads_with_the_same_verdict():
    import pytest
    pytest.importorskip("pygments", reason="the page needs pygments (pip install '.[report]')")
    from harness.report import page
    doc = json.loads((ROOT / "reports/h100/results.json").read_text())
    html = page.render(doc, [])
    order = [html.index(h) for h in ("<h2 id=found>What this run found</h2>", "<h2 id=verdict>Verdict</h2>",
                                     "<h2>Overview</h2>", "<h2 id=environment>Environment</h2>")]
    assert order == sorted(order)
    found = html[order[0]:order[1]]
    assert all(f"<li><b>{problem}</b> ({shows.split(':')[0]}, cold)" in found for problem, shows, _ in verdict.tables(doc))
    for problem, shows, cells in verdict.tables(doc):
        assert f"{problem} {shows.split(':')[0]}" in html and f"<td>{cells[0][0]}</td>" in html
