"""`ways run --update RESULTS`: after a tool's version, an implementation, a problem's spec or the lab's
timing code changed, only the rows that change touches run again, and RESULTS takes them in.

Works as follows:
1. RESULTS's own selection (its run's problems, backends, kinds, cases, --quick, --no-compile) is
   planned again on this machine.
2. A planned row is stale where RESULTS has no row for it, or where the fingerprint its record keeps
   differs from the one it would get now (fingerprint.py; tool versions as installed here).
3. The stale rows run as a run of their own into RESULTS's folder, updates/<n>/ (with its logs).
4. Their records replace RESULTS's; % of peak is computed again over the whole (a new vendor row
   moves its problem's ceiling); RESULTS and its summary.csv are written again (the caller, its report).

Constraints: RESULTS is the results.json of one run (a merged one keeps no selection to plan from).
"""
from __future__ import annotations

import json
from pathlib import Path

from harness.measure import env, roofline
from harness.results import merge, records
from harness.run import fingerprint
from harness.run.plan import Job, Options, plan
from problems.base import Case

UPDATES = "updates"


class NotUpdatable(ValueError):
    """RESULTS cannot be updated (missing, not one run's, or nothing in it can be planned again)."""


def options(doc: dict, out: Path, jobs: int) -> Options:
    """The Options RESULTS's run was made with, into `out`."""
    sel = doc["run"].get("selection")
    if not sel:
        raise NotUpdatable("--update: the results keep no selection (a merged document, or one from before "
                           "runs recorded it): update the results.json of one run")
    custom = {p: tuple(Case(**c) for c in cases) for p, cases in (sel.get("custom_cases") or {}).items()}
    return Options(problems=sel["problems"], backends=sel["backends"], kinds=tuple(sel["kinds"]), dtype=sel["dtype"],
                   case_names=tuple(sel["case_names"]), quick=sel["quick"], custom=custom,
                   measure_compile=sel["compile"], out=out, jobs=jobs)


def stale(doc: dict, jobs: list[Job], versions: dict[str, str]) -> list[Job]:
    """The jobs with only their cases whose rows RESULTS lacks or whose fingerprint moved."""
    kept = {records.record_key(r): r.get("fingerprint") for r in doc["records"]}
    out = []
    for job in (part for j in jobs for part in (j, *j.also)):
        impl = job.impl
        now = fingerprint.of_row({"backend": impl.backend, "variant": impl.variant, "problem": impl.problem},
                                 versions)
        cases = [c for c in job.cases if kept.get((impl.backend, impl.variant, impl.problem, c.name)) != now]
        if cases:
            out.append(Job(impl, cases))
    return out


def replace(doc: dict, new: dict) -> dict:
    """RESULTS with the new run's rows in place of its own, the update listed in its run, % of peak again."""
    fresh = {records.record_key(r): r for r in new["records"]}
    doc["records"] = [fresh.pop(records.record_key(r), r) for r in doc["records"]] + list(fresh.values())
    doc["environment"] = merge.environment([doc, new])
    doc["run"].setdefault("updates", []).append(
        {"id": new["run"]["id"], "started": new["run"].get("started"), "rows": len(new["records"]),
         "commit": (new.get("environment") or {}).get("git_commit"), "complete": new["run"].get("complete")})
    roofline.apply(doc)
    return doc


def run(results: Path, jobs: int, progress=None) -> tuple[dict, Path]:
    """Update RESULTS in place: (the document, its folder)."""
    from harness.run.runner import Run
    try:
        doc = merge.load(results)
    except merge.NotResults as exc:
        raise NotUpdatable(f"--update: {exc}") from None
    folder = results.parent
    n = len(doc["run"].get("updates") or []) + 1
    opts = options(doc, folder / UPDATES / str(n), jobs)
    todo = stale(doc, plan(opts), env.versions())
    if not todo:
        print(f"--update: every row of {results} is up to date")
        return doc, folder
    print(f"--update: {sum(len(j.cases) for j in todo)} row(s) of {results} to run again "
          f"({', '.join(sorted({j.impl.label for j in todo}))})")
    new = Run(opts, progress, jobs=todo).execute()
    doc = replace(doc, new)
    results.write_text(json.dumps(records.finite(doc), indent=1, allow_nan=False) + "\n")
    records.write_summary(doc, folder)
    return doc, folder
