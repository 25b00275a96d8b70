"""The docs a newcomer reads hold no dead link: every relative link of README.md, docs/ and the
reports' READMEs points at a file or folder of the checkout."""
import re
from pathlib import Path

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


# What the docs say about commands, options, files and modules exists, and every `ways` option is in
# the usage guide: inline code and code blocks (indented or fenced) are what a reader copies.
CODE = re.compile(r"`([^`\n]+)`|^(?: {4}|\t)(.+)$", re.M)
COMMAND = re.compile(r"(?<![\w/-])ways ([a-z][a-z-]*)([^#\n]*)")
OPTION = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")
TOP_FOLDERS = "harness|backends|problems|tools|tests|docs|reports|requirements|experiments"
PATH = re.compile(rf"^(?:{TOP_FOLDERS})/[\w./\-\[\]]*$")
MODULE = re.compile(r"^(?:harness|backends|problems|tools)(?:\.[a-z_]+)+$")
REFERENCE_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "tools" / "README.md"]


def _subcommands() -> dict[str, set[str]]:
    import argparse

    from harness.cli import build_parser
    found = {}
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, parser in action.choices.items():
                found[name] = [a.option_strings for a in parser._actions if a.option_strings]
    return found


def _code(doc):
    for m in CODE.finditer(doc.read_text()):
        yield (m.group(1) or m.group(2)).strip()


@pytest.mark.parametrize("doc", REFERENCE_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_documented_commands_and_options_exist(doc):
    subs = _subcommands()
    wrong = []
    for code in _code(doc):
        for m in COMMAND.finditer(code):
            sub, rest = m.group(1), m.group(2)
            if sub not in subs:
                wrong.append(f"ways {sub}")
                continue
            known = {o for opts in subs[sub] for o in opts}
            wrong += [f"ways {sub} {o}" for o in OPTION.findall(rest) if o not in known and o.upper() != o]
    assert not wrong, f"{doc.relative_to(ROOT)} names what `ways` does not have: {wrong}"


def _written_by_a_run(path: str) -> bool:
    """A run's output the checkout ignores (reports/latest/): there once a run wrote it, and named
    as such in .gitignore, so a clean clone's docs test does not depend on a run before it."""
    ignored = [line.strip().lstrip("/") for line in (ROOT / ".gitignore").read_text().splitlines()]
    return path.rstrip("/") + "/" in ignored or path in ignored


@pytest.mark.parametrize("doc", REFERENCE_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_documented_files_and_modules_exist(doc):
    missing = []
    for code in _code(doc):
        word = code.split()[0].rstrip(",.:;)") if code.split() else ""
        if PATH.match(word) and "<" not in word and "*" not in word:
            if not (ROOT / word).exists() and not _written_by_a_run(word):
                missing.append(word)
        elif MODULE.match(word) and not _names_something(word):
            missing.append(word)
    assert not missing, f"{doc.relative_to(ROOT)} names files or modules that do not exist: {missing}"


def _names_something(dotted: str) -> bool:
    """A module or package of the checkout, or a name a module of it defines."""
    import importlib
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        base = ROOT / Path(*parts[:k])
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            if k == len(parts):
                return True
            obj = importlib.import_module(".".join(parts[:k]))
            for name in parts[k:]:
                if not hasattr(obj, name):
                    return False
                obj = getattr(obj, name)
            return True
    return False


def test_every_ways_subcommand_and_option_is_in_the_usage_guide():
    usage = (ROOT / "docs" / "USAGE.md").read_text()
    missing = []
    for sub, options in _subcommands().items():
        if f"ways {sub}" not in usage:
            missing.append(f"ways {sub}")
        missing += [f"ways {sub} {opts[-1]}" for opts in options
                    if "--help" not in opts and not any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", usage)
                                                        for o in opts)]
    assert not missing, f"docs/USAGE.md does not document {missing}"


def test_tools_readme_lists_what_tools_holds():
    table = re.findall(r"^\| `([^`]+)` \|", (ROOT / "tools" / "README.md").read_text(), re.M)
    held = sorted(p.name for p in (ROOT / "tools").iterdir() if p.suffix in (".py", ".sh"))
    assert sorted(table) == held


def test_the_harness_says_what_it_holds_and_how_it_imports():
    """harness/__init__'s list of subpackages and its import rules are the layout test's; cli.py's
    docstring names every subcommand; BACKENDS.md's first table has a column per problem."""
    import harness
    import harness.cli
    import problems
    from tests.test_layout import ALLOWED
    doc = harness.__doc__
    assert {p.name for p in (ROOT / "harness").iterdir() if (p / "__init__.py").is_file()} == \
        set(re.findall(r"^- (\w+)/", doc, re.M))
    rules = dict(re.findall(r"(\w+) -> ([^;.]+)", " ".join(doc.split())))
    assert {k: set() if v.startswith("nothing") else set(v.split(", ")) for k, v in rules.items()} == \
        {k: v - {k} for k, v in ALLOWED.items()}
    assert all(sub in harness.cli.__doc__ for sub in _subcommands())
    lines = (ROOT / "docs" / "BACKENDS.md").read_text().splitlines()
    header = next(line for line in lines if line.startswith("| backend"))
    assert set(problems.names()) <= {c.strip() for c in header.split("|")}


REPORTS_MAX_BYTES = 30 * 2**20


def test_reports_keep_what_cannot_be_regenerated_under_30_mb():
    """Results, manifests, READMEs and the canonical runs' PNG figures and slides; SVGs, pages, CSVs and
    the evidence's figures are `ways report`'s to write on demand (reports/latest*: a local run)."""
    import subprocess
    tracked = subprocess.run(["git", "ls-files", "reports"], cwd=ROOT, capture_output=True, text=True)
    local = [p for p in (ROOT / "reports").rglob("*") if not p.relative_to(ROOT).parts[1].startswith("latest")]
    kept = [ROOT / f for f in tracked.stdout.split("\n") if f] if tracked.returncode == 0 else local
    kept = [p for p in kept if p.is_file()]
    assert sum(p.stat().st_size for p in kept) < REPORTS_MAX_BYTES
    assert not [p for p in kept if p.suffix == ".svg" or p.name in ("index.html", "summary.csv")]
