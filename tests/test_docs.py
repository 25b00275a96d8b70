"""The docs a newcomer reads hold no dead link: every relative link of README.md, docs/ and the
reports' READMEs points at a file or folder of the checkout."""
import re

import pytest

from tests.conftest import ROOT

LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "tools" / "README.md"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc):
    dead = [target for target in LINK.findall(doc.read_text())
            if "://" not in target and not target.startswith("mailto:") and not (doc.parent / target).exists()]
    assert not dead, f"{doc.relative_to(ROOT)}: {dead}"


def test_the_readme_stays_short():
    assert len((ROOT / "README.md").read_bytes()) < 10_000
