"""`ways sweep`: random shapes per problem (each problem draws from the classes its implementations
get wrong: Problem.random_shape), every selected implementation checked on them as test cases, not
timed, in one `ways run` of those cases. A row that is neither `ok` nor a reasoned `not_applicable`
is a finding: a crash (failed), a wrong result, or a skip without a reason."""
from __future__ import annotations

from collections import Counter

import numpy as np

import problems
from problems.base import Case

DEFAULT_COUNT = 200
GOOD = ("ok", "not_applicable", "unavailable")
# left out unless named with -b: a new build of a minute or more for every shape (a search over
# candidates, or a kernel made for its very arrays), hours over a sweep; their fixed-shape
# siblings (cutlass_ops[first], nvmath_device) are in it
PER_SHAPE_SEARCH = {"cutlass_ops": "compiles and times every candidate kernel per shape (44 s for 8192^3)",
                    "nvmath_device[pipeline]": "a DevicePipeline is built per shape bucket (~85 s each)"}


def default_backends(names: list[str]) -> tuple[list[str], dict[str, str]]:
    """The -b specs `ways sweep` runs when none is given (each `backend[variant]`, exact), and the
    implementations it leaves out with why."""
    from harness.run import registry
    chosen = registry.select(names, [])
    specs = sorted({f"{i.backend}[{i.variant}]" for i in chosen if i.label not in PER_SHAPE_SEARCH})
    return specs, {i.label: PER_SHAPE_SEARCH[i.label] for i in chosen if i.label in PER_SHAPE_SEARCH}


def draw(names: list[str], count: int, seed: int) -> dict[str, tuple[Case, ...]]:
    """`count` distinct random cases per problem (dtype drawn too), reproducible from `seed`."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in names:
        problem, cases = problems.get(name), {}
        for _ in range(20 * count):
            if len(cases) == count:
                break
            dtype = str(rng.choice(problem.dtypes))
            case = problem.custom_case(problem.random_shape(rng), dtype, seed=int(rng.integers(2**31)), kind="test")
            cases.setdefault(case.name, case)
        out[name] = tuple(cases.values())
    return out


def findings(doc: dict) -> list[dict]:
    """Rows that are a fault: not ok, not a reasoned not_applicable (nor a tool missing here)."""
    return [r for r in doc["records"] if r["status"] not in GOOD or (r["status"] != "ok" and not r["reason"])]


def markdown(doc: dict) -> str:
    """Per problem and implementation: cases ok, not applicable, and the findings, each with its case and
    what happened."""
    from harness.results.records import error_line, impl_label
    rows: dict[tuple[str, str], dict[str, int]] = {}
    for r in doc["records"]:
        counts = rows.setdefault((r["problem"], impl_label(r)), {})
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    found = findings(doc)
    bad = Counter((r["problem"], impl_label(r)) for r in found)
    command = " ".join(doc["run"].get("argv") or [])
    lines = ["# Random-shape sweep", "", f"{len(found)} finding(s) over {len(doc['records'])} rows (`{command}`).", "",
             "| problem | implementation | ok | not applicable | unavailable | findings |",
             "|---|---|---:|---:|---:|---:|"]
    for (problem, label), c in sorted(rows.items()):
        lines.append(f"| {problem} | {label} | {c.get('ok', 0)} | {c.get('not_applicable', 0)} | "
                     f"{c.get('unavailable', 0)} | {bad[problem, label]} |")
    if found:
        lines += ["", "## Findings", ""]
        lines += [f"- {impl_label(r)} {r['problem']} {r['case']}: {r['status']}: "
                  f"{error_line(r['error'] or r['reason'])[:300]}" for r in found]
    return "\n".join(lines) + "\n"
