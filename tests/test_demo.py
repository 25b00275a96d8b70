"""What a newcomer's first run shows on a machine without a GPU (`make demo`): within its budget of
time and memory, progress in a log, a page that leads with what it found, and a wrong row that says
when the library's own arithmetic is the cause."""
import io
import json
import re
import shutil

import pytest

from tests.conftest import HAS_GPU, ROOT
from tests.test_cli import ran

# `make demo` after the install, on 2 cores without a GPU (CI's machine)
DEMO_BUDGET_S = 180.0
DEMO_PEAK_BYTES = 8 * 2**30
DEMO = ROOT / "reports" / "latest" / "results.json"      # where `make demo` writes (CI runs it before the tests)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _demo() -> dict:
    if not DEMO.is_file():
        pytest.skip("no `make demo` results in reports/latest/ (CI runs the demo before the tests)")
    doc = json.loads(DEMO.read_text())
    if not doc["run"].get("quick") or doc["environment"].get("gpus") or not doc["run"].get("complete"):
        pytest.skip("reports/latest/ holds another run than a complete CPU demo")
    return doc


def test_the_demo_kept_its_budget():
    run = _demo()["run"]
    assert run["duration_s"] <= DEMO_BUDGET_S and run["peak_rss_bytes"] <= DEMO_PEAK_BYTES, \
        f"the demo took {run['duration_s']:.0f} s and {run['peak_rss_bytes'] / 2**30:.1f} GiB"


def test_the_readme_states_the_demo_figures_within_the_budget():
    said = re.search(r"the demo takes about (\d+) s after the install and at most ([\d.]+) GB of memory",
                     " ".join((ROOT / "README.md").read_text().split()))
    assert said, "the README states the demo's wall time and peak memory"
    assert float(said[1]) <= DEMO_BUDGET_S and float(said[2]) * 1e9 <= DEMO_PEAK_BYTES


def test_usage_states_the_quick_run_measured_within_the_budget():
    said = re.search(r"Measured here \(2 cores, no GPU\): `ways run --quick` ([\d.]+) s, of which host timing "
                     r"[\d.]+ s, its peak memory ([\d.]+) GB", " ".join((ROOT / "docs" / "USAGE.md").read_text().split()))
    assert said, "docs/USAGE.md states the quick run's measured time and memory"
    assert float(said[1]) <= DEMO_BUDGET_S and float(said[2]) * 1e9 <= DEMO_PEAK_BYTES


def test_progress_goes_to_a_log_as_lines(monkeypatch, capsys):
    """Where stderr is a file or a pipe (a CI log), the run says how far it is, a line at a time."""
    from rich.console import Console

    from harness.run import progress
    bar = progress.RichProgress(Console(file=io.StringIO(), force_terminal=False))
    bar.start(3)
    bar.describe("array_api[numpy] scan 4097-float32")
    bar.advance("array_api[numpy]")
    bar.tick(every=0.0)
    bar.stop()
    bar.stop()                                          # a run and its caller both stop it: one last line
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all(re.fullmatch(r"\[\d\d:\d\d\] 1/3 array_api\[numpy\] scan 4097-float32", x)
                                   for x in lines), lines


@pytest.mark.skipif(HAS_GPU, reason="a machine without a GPU times the host's cases")
def test_a_library_wrong_by_its_own_arithmetic_says_so_in_every_view(tmp_path, capsys):
    from harness.report import markdown, page, verdict
    from harness.report.terminal import print_summary
    from harness.results.records import flag
    doc = ran(tmp_path / "out", "-p", "scan", "-b", "array_api[numpy]", "--case", "16777216-float32",
              "--no-compile")
    [row] = doc["records"]
    assert row["status"] == "wrong" and row["cause"] == "the library's float32 sequential sum"
    shown = "wrong (the library's float32 sequential sum)"
    assert flag(row) == shown and shown in " ".join(verdict.findings(doc)) and shown in markdown.markdown(doc)
    assert "wrong (the library&#x27;s float32 sequential sum)" in page.render(doc, [])
    print_summary(doc)
    assert f"{shown} array_api[numpy] scan 16777216-float32" in capsys.readouterr().out


@pytest.fixture(scope="module")
def cpu_page(tmp_path_factory):
    pytest.importorskip("matplotlib", reason="figures need matplotlib (pip install '.[report]')")
    pytest.importorskip("pygments", reason="the HTML page needs pygments (pip install '.[report]')")
    out = tmp_path_factory.mktemp("demo") / "out"
    doc = ran(out, "--quick", "-b", "array_api[numpy]", "--html")
    return out, doc


@pytest.mark.skipif(HAS_GPU, reason="the page of a run without a GPU")
def test_a_cpu_run_leads_with_what_it_found(cpu_page):
    out, doc = cpu_page
    text = (out / "report.md").read_text()
    lead = text.split("## What this run found")[1].split("\n## ")[0]
    assert all(f"- **{p}** (" in lead for p in {r["problem"] for r in doc["records"] if r["kind"] == "bench"})
    assert "No GPU here:" in lead and "reports/h100/" in lead and "figures/overview.png" in lead
    assert (out / "figures" / "overview.png").is_file()


@pytest.mark.skipif(HAS_GPU or CHROMIUM is None, reason="needs chromium (Debian: apt-get install chromium), no GPU")
def test_a_cpu_page_shows_its_verdict_on_the_first_screen(cpu_page, tmp_path):
    """In a headless browser at 1400 x 900, the findings and the overview figure are on the first screen."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright drives chromium (pip install playwright)")
    out, _ = cpu_page
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto((out / "index.html").as_uri())
        found, figure = page.locator("h2#found").bounding_box(), page.locator("#fig-overview").bounding_box()
        items = page.locator("h2#found + ul li").all_inner_texts()
        shot = tmp_path / "first-screen.png"
        page.screenshot(path=str(shot))
        browser.close()
    assert found["y"] < 150 and figure["y"] < 900 and figure["height"] > 150
    assert any(x.startswith("No GPU here:") for x in items) and any(x.startswith("elementwise (") for x in items)
    assert shot.read_bytes()[:4] == b"\x89PNG"
