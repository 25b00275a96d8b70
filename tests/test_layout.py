"""The harness's layout holds what docs/ARCHITECTURE.md says: subpackages in the order of the flow,
each importing only those after it (report -> schedule, measure, results; run -> schedule, measure,
results; schedule -> measure, results; measure -> results; results -> nothing of the harness), the
three folders one way (problems <- backends <- harness), no import cycle, and no module over 400 lines."""
import ast

import pytest

from tests.conftest import ROOT

HARNESS = ROOT / "harness"
ALLOWED = {"report": {"report", "results", "measure", "schedule"}, "run": {"run", "schedule", "measure", "results"},
           "schedule": {"schedule", "measure", "results"}, "measure": {"measure", "results"}, "results": {"results"}}
MODULES = sorted(p for p in HARNESS.rglob("*.py") if p.parent != HARNESS)


def _harness_imports(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("harness"):
            parts = node.module.split(".")
            if len(parts) > 1:
                yield parts[1]
            else:       # `from harness import X`: a subpackage, or a name of harness/__init__ (ROOT)
                yield from (a.name for a in node.names if (HARNESS / a.name).is_dir())
        elif isinstance(node, ast.Import):
            yield from (a.name.split(".")[1] for a in node.names if a.name.startswith("harness."))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(HARNESS)))
def test_imports_follow_the_flow(path):
    package = path.relative_to(HARNESS).parts[0]
    wrong = sorted(set(_harness_imports(path)) - ALLOWED[package])
    assert not wrong, f"harness/{package} imports harness.{wrong}"


def test_every_module_is_in_a_subpackage_or_on_top():
    top = sorted(p.name for p in HARNESS.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "cli.py"]
    assert {p.relative_to(HARNESS).parts[0] for p in MODULES} == set(ALLOWED)


@pytest.mark.parametrize("path", sorted(HARNESS.rglob("*.py")), ids=lambda p: str(p.relative_to(HARNESS)))
def test_no_module_over_400_lines(path):
    assert len(path.read_text().splitlines()) <= 400


PACKAGES = ("problems", "backends", "harness")      # each may import only those before it


def _modules(package):
    return sorted((ROOT / package).rglob("*.py"))


def _imported(path):
    """Every module an import statement of `path` names (function-level ones too)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


@pytest.mark.parametrize("package", PACKAGES[:2])
def test_layers_point_one_way(package):
    """problems <- backends <- harness: a backend gets what it needs from the harness by hooks
    (backends.base.on_build_steps), never by importing it."""
    later = PACKAGES[PACKAGES.index(package) + 1:]
    wrong = sorted({(str(p.relative_to(ROOT)), m) for p in _modules(package) for m in _imported(p)
                    if m.split(".")[0] in later})
    assert not wrong, wrong


def _name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_cycle_in_the_harness():
    names = {_name(p): p for p in _modules("harness")}
    graph = {n: {m for m in _imported(p) if m in names and m != n} for n, p in names.items()}
    done, path = set(), []

    def visit(n):
        if n in path:
            raise AssertionError("import cycle: " + " -> ".join(path[path.index(n):] + [n]))
        if n in done:
            return
        path.append(n)
        for m in sorted(graph[n]):
            if not m.startswith(n + "."):        # a package importing its own modules is no cycle
                visit(m)
        path.pop()
        done.add(n)

    for n in sorted(graph):
        visit(n)


def test_no_session_or_issue_numbers_in_names_code_or_docs():
    """Names say what things are: no work session, issue or stop numbers in a tracked file's path, in
    code or in a doc (results files aside: they record what they record)."""
    import re
    import subprocess
    numbered = re.compile(r"\b(session|issue|stop) ?#?\d+\b", re.IGNORECASE)
    try:
        tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    paths = tracked.split()
    assert not [p for p in paths if re.search(r"(session|issue)[-_ ]?\d", p, re.IGNORECASE)]
    texts = [p for p in paths if p.endswith((".py", ".md", ".sh", ".toml", ".txt", ".cfg")) or "/" not in p]
    found = [(p, m.group(0)) for p in texts if (ROOT / p).is_file()
             for m in numbered.finditer((ROOT / p).read_text(errors="replace"))]
    assert not found, found[:10]


def _defined_and_imported(module_path):
    """The names a module defines at its top level, and those it only imports."""
    defined, imported = set(), set()
    for node in ast.parse(module_path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imported |= {a.asname or a.name.split(".")[0] for a in node.names}
    return defined, imported - defined


def _module_file(module):
    base = ROOT / module.replace(".", "/")
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


def test_names_are_imported_from_the_module_that_defines_them():
    """`from harness.x import N` takes N from where it is defined, not from a module that imported it."""
    passed_on = []
    for path in [p for package in (*PACKAGES, "tools", "tests") for p in _modules(package)]:
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                    and node.module.split(".")[0] in PACKAGES and (source := _module_file(node.module))):
                continue
            _, only_imported = _defined_and_imported(source)
            passed_on += [f"{path.relative_to(ROOT)}: {node.module}.{a.name}" for a in node.names
                          if a.name in only_imported and not _module_file(f"{node.module}.{a.name}")]
    assert not passed_on, passed_on
