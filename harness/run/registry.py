"""Which (backend, variant, problem) implementations exist, and which cases a run asks for."""
from __future__ import annotations

import re
from dataclasses import dataclass

import backends
import problems
from backends import gpus
from problems.base import Case


@dataclass(frozen=True)
class Impl:
    backend: str
    variant: str
    problem: str

    @property
    def label(self) -> str:
        return backends.label(self.backend, self.variant)


def implementations() -> list[Impl]:
    """Every pair backends/<b>/<problem>.py, times the backend's variants. Imports no GPU library."""
    known = set(problems.names())
    return [Impl(b, v, p) for b in backends.names() for p in backends.problems_of(b) if p in known
            for v in backends.get(b).variants_of(p)]


def parse_backend(spec: str) -> tuple[str, str | None]:
    """'array_api' -> ('array_api', None) (all variants); 'array_api[torch]' -> ('array_api', 'torch')."""
    m = re.fullmatch(r"([A-Za-z0-9_]+)(?:\[([A-Za-z0-9_]*)\])?", spec.strip())
    if not m or m.group(1) not in backends.names():
        raise ValueError(f"unknown backend {spec!r} (valid: {', '.join(backends.names())})")
    name, variant = m.group(1), m.group(2)
    known = backends.variants(name)
    if variant is not None and variant not in known:
        valid = ", ".join(repr(v) for v in known)
        raise ValueError(f"backend {name} has no variant {variant!r} (valid: {valid})")
    return name, variant


def select(problem_names=None, backend_specs=None) -> list[Impl]:
    for p in problem_names or []:
        if p not in problems.names():
            raise ValueError(f"unknown problem {p!r} (valid: {', '.join(problems.names())})")
    wanted = [parse_backend(s) for s in backend_specs or []]
    chosen = []
    for impl in implementations():
        if problem_names and impl.problem not in problem_names:
            continue
        if wanted and not any(b == impl.backend and v in (None, impl.variant) for b, v in wanted):
            continue
        if not wanted and impl.variant in backends.get(impl.backend).opt_in_variants:
            continue
        chosen.append(impl)
    return chosen


def cases_for(problem: str, kinds: tuple[str, ...], custom: dict[str, tuple[Case, ...]] | None = None) -> list[Case]:
    """The built-in cases of these kinds (bench cases sized for the machine's device: a GPU's, or the
    host's where there is none), or a run's own (`ways run --shape`, `ways sweep`) in their place."""
    if custom:
        return list(custom.get(problem, ()))
    return [c for c in problems.get(problem).run_cases(bool(gpus.gpus())) if c.kind in kinds]


def quick_cases(problem: str) -> tuple[str, ...]:
    """`ways run --quick`'s cases of a problem on this machine's device."""
    return problems.get(problem).quick_cases(bool(gpus.gpus()))
