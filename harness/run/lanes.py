"""`ways run --gpus`: one lane per GPU. The plan's jobs are dealt out to the lanes, heaviest first
to the least loaded; each lane is an ordinary run (runner.Run) whose processes see only its GPU
(CUDA_VISIBLE_DEVICES), with its own copy and cuBLAS references measured on that GPU, into
OUT/lanes/gpuN/; the lanes' results are merged into OUT/results.json, every record saying which
GPU measured it. `--resume` deals what no lane has measured yet again, to the same lanes (a lane
that finished early takes its share of what a slower one left). A lane whose GPU was lost (a row
failed with an error that says so, LOST_GPU) has its failed and skipped items dealt again to the
healthy lanes, into OUT/lanes/gpuN-redealt/; the merged document takes those rows in place of the
lost lane's, and its run says what was re-dealt (`redealt`)."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import threading
from pathlib import Path

import problems
from harness.measure import gpu, roofline
from harness.results import merge, records
from harness.run import resume, supervise
from harness.measure.env import usable_cores
from harness.schedule.gpu_lock import timing_cores_for
from harness.run.outdir import exclusive
from harness.run.plan import Job, Options, plan
from harness.run.runner import Run

BENCH_WEIGHT = 5          # a bench case costs about this many test cases (timing, sustained mode)
# what the CUDA driver and nvidia-smi say when a GPU is gone (not a kernel's own fault)
LOST_GPU = re.compile(r"CUDA_ERROR_DEVICE_UNAVAILABLE|CUDA_ERROR_NO_DEVICE|no CUDA-capable device|GPU is lost|"
                      r"fallen off the bus|CUDA_ERROR_ECC_UNCORRECTABLE|cudaErrorDevicesUnavailable", re.I)


class LaneError(ValueError):
    """A --gpus value that names no GPU here."""


def parse(spec: str) -> list[str]:
    """'all', a count or a comma-separated list of nvidia-smi indices ('1,': GPU 1 alone) -> the
    lanes' indices."""
    found = [str(g["index"]) for g in gpu.gpus()]
    if spec == "all":
        if not found:
            raise LaneError("--gpus all: nvidia-smi lists no GPU")
        return found
    if spec.isdigit():
        n = int(spec)
        if not 1 <= n <= len(found):
            raise LaneError(f"--gpus {n}: a count of GPUs, and this machine has {len(found)} GPU(s) "
                            f"(one GPU by its index: {n},)")
        return found[:n]
    lanes = [p.strip() for p in spec.split(",") if p.strip()]
    unknown = [i for i in lanes if not i.isdigit() or (found and i not in found)]
    if not lanes or unknown or len(set(lanes)) != len(lanes):
        raise LaneError(f"--gpus {spec}: expected all, a count, or distinct GPU indices from {found or 'nvidia-smi'}")
    return lanes


def deal(jobs: list[Job], n: int, refs: list[Job] | None = None,
         benched: list[set[str]] | None = None) -> list[list[Job]]:
    """Jobs to `n` lanes, heaviest first to the least loaded (test case 1, bench case BENCH_WEIGHT).
    A lane that times a problem's bench cases without its vendor rows (cuBLAS) gets their bench
    cases too: % of peak compares with the reference measured on the same GPU (`refs`: the jobs
    they are taken from, `jobs` by default; `benched`: the problems each lane timed in an earlier
    part of a resumed run, which need theirs as well)."""
    weight = {id(j): sum(BENCH_WEIGHT if c.kind == "bench" else 1 for c in j.cases) for j in jobs}
    lanes: list[list[Job]] = [[] for _ in range(n)]
    load = [0] * n
    for j in sorted(jobs, key=lambda j: -weight[id(j)]):
        k = load.index(min(load))
        lanes[k].append(j)
        load[k] += weight[id(j)]
    refs = [j for j in (jobs if refs is None else refs) if j.impl.label in problems.get(j.impl.problem).vendor]
    for k, lane in enumerate(lanes):
        have = {(j.impl.problem, j.impl.label) for j in lane}
        timed = {j.impl.problem for j in lane if any(c.kind == "bench" for c in j.cases)} | (benched or [set()] * n)[k]
        lane += [Job(r.impl, [c for c in r.cases if c.kind == "bench"]) for r in refs
                 if r.impl.problem in timed and (r.impl.problem, r.impl.label) not in have]
    return [[j for j in lane if j.cases] for lane in lanes]


def set_aside(out: Path) -> None:
    """An earlier lanes run's merged files in `out` go to out/previous/<its run id>/."""
    if not (out / "results.json").is_file():
        return
    try:
        run_id = json.loads((out / "results.json").read_text())["run"]["id"]
    except (ValueError, KeyError):
        run_id = "unknown"
    dest = out / "previous" / run_id
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("results.json", "summary.csv", "lanes", "report.md", "figures", "index.html"):
        if (out / name).exists():
            os.replace(out / name, dest / name)


def run(opts: Options, lanes: list[str], progress) -> dict:
    """Every lane at once; the merged document, written to OUT (results.json, summary.csv)."""
    jobs = plan(opts)
    opts.out.mkdir(parents=True, exist_ok=True)
    with exclusive(opts.out):
        if not opts.resume:
            set_aside(opts.out)
            return _run(opts, lanes, deal(jobs, len(lanes)), progress)
        # rows one lane measured are not measured again by another; each lane's own kept rows (its
        # cuBLAS references too) are its Run's to skip
        measured = [resume.measured(lane_out(opts.out, lane)) for lane in lanes]
        anywhere = resume.Done(rows=set().union(*(d.rows for d in measured)),
                               compiles=set().union(*(d.compiles for d in measured)))
        left = [j for j in map(anywhere.left, jobs) if j.cases]
        benched = [{key[2] for key in d.rows if _bench(*key[2:])} for d in measured]
        parts = deal(left, len(lanes), refs=jobs, benched=benched)
        add_compile_only(parts, jobs, measured, anywhere)
        return _run(opts, lanes, parts, progress, compiled=anywhere.compiles)


def add_compile_only(parts: list[list[Job]], jobs: list[Job], measured: list[resume.Done],
                     anywhere: resume.Done) -> None:
    """--resume: an implementation whose rows are all in but whose compile figures are not (its
    compile-time processes were stopped) has them measured by the lane that holds most of its rows,
    where the figures join them: a job of no cases (its Run measures compile times only)."""
    for j in jobs:
        if anywhere.left(j).cases or anywhere.compiled(j.impl):
            continue
        held = [sum(1 for key in d.rows if key[:3] == (j.impl.backend, j.impl.variant, j.impl.problem))
                for d in measured]
        parts[held.index(max(held))].append(Job(j.impl, []))


def _bench(problem: str, case: str) -> bool:
    try:
        return problems.get(problem).case(case).kind == "bench"
    except (KeyError, ValueError):         # a case of a --shape run
        return False


def borrow_references(docs: list[dict]) -> None:
    """Each lane's % of peak of the compute-bound problems again, the vendor rows it lacks (a lane
    stopped before it timed its own) taken from its sibling lanes on the same GPU model."""
    rates = [roofline.rates(d, vendor_only=True) for d in docs]
    for k, doc in enumerate(docs):
        lent = {m: {} for m in roofline.MODES}
        for j, other in enumerate(docs):
            if j != k and merge.gpu_name(other) == merge.gpu_name(doc):
                where = f"GPU {_lane_index(other)} of the node"
                for m in lent:
                    for key, rate in rates[j][m].items():
                        if key not in rates[k][m] and rate > lent[m].get(key, (0,))[0]:
                            lent[m][key] = (rate, where)
        if any(lent.values()):
            roofline.apply(doc, lent)


def _lane_index(doc: dict) -> str:
    gpus = {str((r.get("gpu") or {}).get("index")) for r in doc["records"] if r.get("gpu")}
    return gpus.pop() if len(gpus) == 1 else "another lane"


def lane_out(out: Path, lane: str) -> Path:
    return out / "lanes" / f"gpu{lane}"


def write_merged(out: Path, docs: list[dict], names: list[str], **run_fields) -> dict:
    """The runs' documents merged (results/merge.py), `run_fields` added to its run, written to
    out/results.json and out/summary.csv."""
    doc = merge.merge(docs, names)
    doc["run"].update(run_fields)
    (out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
    records.write_summary(doc, out)
    return doc


def _run(opts: Options, lanes: list[str], parts: list[list[Job]], progress, compiled: set = frozenset()) -> dict:
    outs = [lane_out(opts.out, lane) for lane in lanes]
    errors = _side_by_side(opts, lanes, parts, outs, [f"gpu{lane}" for lane in lanes], progress, compiled)
    written = {lane: out / "results.json" for lane, out in zip(lanes, outs, strict=True)
               if (out / "results.json").is_file()}
    if not written:                  # no lane got as far as its results: say why, not "empty merge"
        raise errors[0] if errors else RuntimeError("no lane wrote results")
    docs = {lane: json.loads(p.read_text()) for lane, p in written.items()}
    paths, fields = list(written.values()), {"lanes": lanes}
    if not errors:
        paths, more, fields = redeal(opts, docs, paths, progress, fields)
        errors += more
    merged = list(docs.values()) + [json.loads(p.read_text()) for p in paths[len(docs):]]
    borrow_references(merged)
    # the lanes ran side by side: the run took as long as its slowest lane (parts of a resumed one added)
    doc = write_merged(opts.out, merged, [str(p) for p in paths], **fields,
                       duration_s=max(d["run"].get("duration_s") or 0 for d in merged))
    if errors:
        raise errors[0]
    return doc


def _side_by_side(opts: Options, lanes: list[str], parts: list[list[Job]], outs: list[Path], names: list[str],
                  progress, compiled: set = frozenset()) -> list[BaseException]:
    """A run per lane (its GPU, its part, its out), all at once; the exceptions they raised."""
    cores = max(1, usable_cores() // len(lanes))      # each lane's compile-time processes share the cores
    kept = timing_cores_for(len(lanes))                # and each lane's timers keep one
    runs = [Run(dataclasses.replace(opts, out=out, resume=opts.resume and (out / "results.jsonl").is_file()),
                progress.lane(name), jobs=part, lane=lane, cores=cores, timing_cores=timing, compiled=compiled)
            for lane, part, out, name, timing in zip(lanes, parts, outs, names, kept, strict=True)]
    errors: list[BaseException] = []
    # Events, not Thread.join: a join that Ctrl-C interrupts can leave the thread looking finished
    # (CPython 3.12), and the merge would then miss a lane still writing its results
    ended = [threading.Event() for _ in runs]

    def go(r: Run, done: threading.Event) -> None:
        try:
            r.execute()
        except BaseException as exc:          # reported after the others finish
            errors.append(exc)
        finally:
            done.set()

    for r, done in zip(runs, ended, strict=True):
        threading.Thread(target=go, args=(r, done), daemon=True).start()
    try:
        for done in ended:
            done.wait()
    except BaseException as exc:     # Ctrl-C: stop every lane's workers, keep what they measured
        supervise.kill_running()
        for done in ended:
            done.wait(timeout=60)
        errors.insert(0, exc)
    return errors


def lost(doc: dict) -> bool:
    """Whether a lane's GPU was lost during its run: a row failed saying so."""
    return any(r["status"] == "failed" and LOST_GPU.search(r.get("error") or "") for r in doc["records"])


def redeal(opts: Options, docs: dict[str, dict], paths: list[Path], progress, fields: dict):
    """The failed and skipped items of the lanes whose GPU was lost (`docs`: each lane's document),
    dealt again to the healthy lanes, side by side (OUT/lanes/gpuN-redealt/); the lost lanes' documents
    lose those rows. The paths of the documents to merge, the runs' exceptions, the run's fields."""
    gone = [lane for lane, d in docs.items() if lost(d)]
    healthy = [lane for lane in docs if lane not in gone]
    if not gone or not healthy:
        return paths, [], fields
    redo = {records.record_key(r) for lane in gone for r in docs[lane]["records"] if r["status"] in records.UNSETTLED}
    planned = plan(opts)
    jobs = [Job(j.impl, [c for c in j.cases if (j.impl.backend, j.impl.variant, j.impl.problem, c.name) in redo])
            for j in planned]
    parts = deal([j for j in jobs if j.cases], len(healthy), refs=planned)
    busy = [(lane, part) for lane, part in zip(healthy, parts, strict=True) if part]
    outs = [lane_out(opts.out, f"{lane}-redealt") for lane, _ in busy]
    errors = _side_by_side(dataclasses.replace(opts, resume=False), [lane for lane, _ in busy],
                           [part for _, part in busy], outs, [f"gpu{lane} (re-dealt)" for lane, _ in busy], progress)
    for lane in gone:               # the lost lane's rows that were dealt again leave its document
        docs[lane] = {**docs[lane], "records": [r for r in docs[lane]["records"] if records.record_key(r) not in redo]}
    fields = {**fields, "redealt": {"from": gone, "to": healthy, "items": len(redo)}}
    return paths + [out / "results.json" for out in outs if (out / "results.json").is_file()], errors, fields
