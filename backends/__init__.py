"""Backends: one folder each. A (backend, problem) pair exists iff backends/<b>/<problem>.py does.

Discovery lists folders and files; nothing is imported until a backend is asked for. Folders of
further backends (the tests' deliberately wrong ones) can be named in WAYS_BACKEND_PATH."""
import importlib
import os
import sys
from pathlib import Path

HERE = Path(__file__).parent


def _roots() -> list[Path]:
    extra = [Path(p).resolve() for p in os.environ.get("WAYS_BACKEND_PATH", "").split(os.pathsep) if p]
    return [HERE] + extra


def _folders() -> dict[str, Path]:
    found = {}
    for root in _roots():
        if root.is_dir():
            for d in sorted(root.iterdir()):
                if (d / "__init__.py").is_file() and not d.name.startswith(("_", ".")):
                    found.setdefault(d.name, d)
    return found


def label(backend: str, variant: str) -> str:
    """How an implementation is named everywhere: `backend`, or `backend[variant]`."""
    return f"{backend}[{variant}]" if variant else backend


def names() -> list[str]:
    return sorted(_folders())


def import_name(name: str) -> str:
    """The module name of backend `name` (its folder is a package)."""
    folder = _folders()[name]
    if folder.parent == HERE:
        return f"backends.{name}"
    if str(folder.parent) not in sys.path:
        sys.path.insert(0, str(folder.parent))
    return name


def get(name: str, variant: str = ""):
    """Backend `name` (the BACKEND of <folder>/__init__.py) bound to `variant`: the object that stands
    for `name[variant]` (imports no GPU library)."""
    if name not in names():
        raise KeyError(f"unknown backend {name!r} (valid: {', '.join(names())})")
    backend = importlib.import_module(import_name(name)).BACKEND
    backend.name = name
    return backend.bind(variant)


def implementation(name: str, problem: str):
    """Import backend `name`'s implementation of `problem` (this is where its tool gets imported)."""
    return importlib.import_module(f"{import_name(name)}.{problem}")


def variants(name: str) -> list[str]:
    """Every variant backend `name` has for any of its problems, in declaration order."""
    backend = get(name)
    return list(dict.fromkeys(v for p in problems_of(name) for v in backend.variants_of(p)))


def problems_of(name: str) -> list[str]:
    return sorted(p.stem for p in _folders()[name].glob("*.py") if not p.stem.startswith("_"))


def source_path(name: str, problem: str) -> Path:
    return _folders()[name] / f"{problem}.py"
