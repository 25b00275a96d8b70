"""`ways run --resume`: go on with an interrupted run in the same --out. Its results.jsonl is kept and
appended to; rows it has (any status but failed or skipped: an interrupted or crashed item is redone,
and so are the cases left out after it timed out) and
compile figures it has are not measured again, and the test outputs of its parts are kept between
them (.crosscheck-outputs) so the cross-check at the end covers every part."""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from harness.measure.stopping import window_scale
from harness.results import records

KEPT_OUTPUTS = ".crosscheck-outputs"


class NothingToResume(RuntimeError):
    """--resume where there is no run to go on with, or a complete one."""


@dataclasses.dataclass
class Done:
    rows: set = dataclasses.field(default_factory=set)          # record_key of each row kept
    compiles: set = dataclasses.field(default_factory=set)      # (backend, variant, problem) measured

    def left(self, job):
        """The job with only its cases not done yet."""
        impl = job.impl
        cases = [c for c in job.cases if (impl.backend, impl.variant, impl.problem, c.name) not in self.rows]
        return job if len(cases) == len(job.cases) else dataclasses.replace(job, cases=cases)

    def compiled(self, impl) -> bool:
        return (impl.backend, impl.variant, impl.problem) in self.compiles


def selection(opts) -> dict:
    """What a run measures (not how: --jobs, --timeout may change when it is resumed), as its
    header keeps it."""
    return {"problems": sorted(opts.problems), "backends": sorted(opts.backends), "kinds": list(opts.kinds),
            "dtype": opts.dtype, "case_names": sorted(opts.case_names), "quick": opts.quick,
            "custom_cases": custom_json(opts.custom), "compile": opts.measure_compile}


def custom_json(custom: dict) -> dict | None:
    return {p: [c.to_json() for c in cases] for p, cases in custom.items()} if custom else None


def check(out: Path, gpus_here: list[dict], wanted: dict, complete_ok: bool = False) -> bool:
    """Raise NothingToResume unless `out` holds a run that did not finish (or, `complete_ok`, one that
    did: a lane of check_lanes), of the same selection (`wanted`: selection() of this command's
    options) and made on GPUs of the kinds this machine has (`gpus_here`: gpu.gpus()): one run's rows
    are compared as measured alike. Whether that run is complete."""
    path = out / "results.jsonl"
    if not path.is_file():
        raise NothingToResume(f"--resume: no run to go on with in {out} (no results.jsonl)")
    doc = records.merge(records.read_jsonl(path))
    if doc["run"]["complete"] and not complete_ok:
        raise NothingToResume(f"--resume: the run in {out} is complete; give another --out for a new one")
    if doc["run"].get("selection", wanted) != wanted:
        raise NothingToResume(f"--resume: the run in {out} was `ways {' '.join(doc['run']['argv'])}`; "
                              "resume it with the same selection (problems, backends, cases, --quick, --no-compile)")
    scale = doc["run"].get("window_scale", 1.0)
    if scale != window_scale():
        raise NothingToResume(f"--resume: the run in {out} timed its compute-bound windows at scale {scale:g}, "
                              f"this one would at {window_scale():g}: resume it at the same scale")
    then = sorted(g.get("name") or "" for g in doc["environment"].get("gpus") or [])
    now = sorted(g.get("name") or "" for g in gpus_here)
    if then != now:
        raise NothingToResume(f"--resume: the run in {out} was made with GPUs {then or 'none'}, this machine has "
                              f"{now or 'none'}; give another --out for a new run")
    return doc["run"]["complete"]


def check_lanes(out: Path, lanes: list[str], gpus_here: list[dict], wanted: dict) -> None:
    """check() for a `--gpus` run: its lanes (out/lanes/gpuN) are the GPUs named now or fewer, each
    of the same selection and GPU kinds, and one at least did not finish."""
    found = sorted(p.parent.name for p in (out / "lanes").glob("gpu*/results.jsonl"))
    if not found:
        raise NothingToResume(f"--resume: no --gpus run to go on with in {out} (no lanes/gpu*/results.jsonl)")
    named = {f"gpu{lane}" for lane in lanes}
    if not set(found) <= named:
        raise NothingToResume(f"--resume: the run in {out} had lanes {', '.join(found)}; name those GPUs "
                              f"(--gpus {','.join(n[3:] for n in found)}) to go on with it")
    complete = [check(out / "lanes" / name, gpus_here, wanted, complete_ok=True) for name in found]  # each lane checked
    if all(complete):
        raise NothingToResume(f"--resume: the run in {out} is complete; give another --out for a new one")


def check_here(out: Path, opts, gpus_here: list[dict], lanes: list[str] | None = None) -> None:
    """`ways run --resume`: check() of --out for these options, or check_lanes() where it names --gpus lanes."""
    if lanes is None:
        check(out, gpus_here, selection(opts))
    else:
        check_lanes(out, lanes, gpus_here, selection(opts))


def done(out: Path, scratch: Path) -> Done:
    """What the run in `out` has done; its kept test outputs moved into `scratch` for the cross-check."""
    kept = out / KEPT_OUTPUTS
    if kept.is_dir():
        shutil.move(str(kept), str(scratch / "outputs"))
    return measured(out)


def measured(out: Path) -> Done:
    """What the run in `out` has done (nothing, where it has no results.jsonl)."""
    if not (out / "results.jsonl").is_file():
        return Done()
    lines = records.read_jsonl(out / "results.jsonl")
    doc = records.merge(lines)
    return Done(rows={records.record_key(r) for r in doc["records"] if r["status"] not in records.UNSETTLED},
                compiles={(x["backend"], x["variant"], x["problem"]) for x in lines
                          if x["type"] == "compile" and not x["compile"].get("error")})


def keep_outputs(scratch: Path, out: Path) -> None:
    """At the end of a part that did not finish: keep its test outputs for a later --resume."""
    if (scratch / "outputs").is_dir():
        shutil.rmtree(out / KEPT_OUTPUTS, ignore_errors=True)
        shutil.move(str(scratch / "outputs"), str(out / KEPT_OUTPUTS))
