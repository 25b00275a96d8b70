"""The docs a newcomer reads hold no dead link: every relative link of README.md, docs/ and the
reports' READMEs points at a file or folder of the checkout."""
import re

import pytest

from harness.report.verdict import canonical_runs
from tests.conftest import ROOT

LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "tools" / "README.md",
        *sorted((ROOT / "reports").rglob("README.md")), *sorted((ROOT / "experiments").rglob("README.md"))]
CANONICAL = [ROOT / folder for folder, _ in canonical_runs()]      # reports/latest (`make demo`'s) is not one


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc):
    dead = [target for target in LINK.findall(doc.read_text())
            if "://" not in target and not target.startswith("mailto:") and not (doc.parent / target).exists()]
    assert not dead, f"{doc.relative_to(ROOT)}: {dead}"


def test_the_readme_stays_short():
    assert len((ROOT / "README.md").read_bytes()) < 10_000


def test_reports_hold_one_canonical_run_per_gpu_kind_and_evidence_by_topic():
    """reports/<gpu>/ is a canonical run with its manifest; everything else is under evidence/."""
    assert {p.name for p in CANONICAL} >= {"h100", "h200"}
    found = {p.name for p in (ROOT / "reports").iterdir() if p.is_dir() and not p.name.startswith("latest")}
    assert found == {p.name for p in CANONICAL} | {"evidence"}      # reports/latest*: a local run, ignored
    for run in CANONICAL:
        assert {"results.json", "report.md", "manifest.json", "README.md"} <= {p.name for p in run.iterdir()}


@pytest.mark.parametrize("run", CANONICAL, ids=lambda p: p.name)
def test_ways_report_reproduces_each_canonical_report(run):
    import json

    from harness.report import markdown
    from harness.report.pipeline import manifest
    doc = json.loads((run / "results.json").read_text())
    assert (run / "report.md").read_text() == markdown.markdown(doc) + "\n"
    assert json.loads((run / "manifest.json").read_text()) == json.loads(json.dumps(manifest(doc)))
