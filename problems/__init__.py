"""The lab's problems: one module per problem, each defining PROBLEM. NumPy only."""
import importlib
import pkgutil

from problems.base import Case, CheckError, CheckResult, Expected, Problem  # noqa: F401


def names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "base")


def get(name: str) -> Problem:
    if name not in names():
        raise KeyError(f"unknown problem {name!r} (valid: {', '.join(names())})")
    return importlib.import_module(f"problems.{name}").PROBLEM
