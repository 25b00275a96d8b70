"""`ways run --ray ADDRESS`: the plan run on a Ray cluster. Ray, not a scheduler of our own: it
places tasks on nodes by resource (one GPU each: `num_gpus=1`, and the GPU kind through the
`accelerator_type:<kind>` resource Ray gives nodes with NVIDIA GPUs), sets CUDA_VISIBLE_DEVICES for
each task, re-runs a task whose worker or node died (`max_retries`), and ships the lab's code to
remote nodes (`runtime_env` working_dir). Per GPU kind in the cluster the whole plan is dealt to
that kind's GPUs (lanes.deal), so a cluster of H100s and H200s gives one report with every
implementation measured on each kind. Each task is an ordinary run (runner.Run) on one GPU; the
driver writes each task's results to OUT/lanes/<kind>-<n>/ and merges them into OUT/results.json.
A task that still fails is reported as failed records for its cases, with Ray's reason. On a local
cluster the tasks run into OUT/lanes/<kind>-<n>/ themselves, so an interrupted run (Ctrl-C: each
task is cancelled, which stops its run as Ctrl-C stops one) still merges what every task measured.

`--ray local` starts a cluster on this machine; `local:N` declares N GPUs to Ray (on a machine
without any, fake ones: the CPU rows then run in N tasks side by side, as CI tests it)."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
import uuid
from pathlib import Path

from harness.results import records
from harness.run.lanes import deal, set_aside, write_merged
from harness.run.outdir import exclusive
from harness.run.plan import Job, Options, plan
from harness.run.runner import Run
from harness import ROOT as ROOT_DIR

MAX_RETRIES = 2                  # a task whose worker process or node dies runs again, elsewhere if need be
WAIT_S = 1.0                     # the driver waits on its tasks this long at a time, so Ctrl-C reaches it
STOP_S = 90                      # cancelled tasks get this long to stop their workers and write their results
SHIPPED_EXCLUDES = ["reports/", ".venv/", ".gpu-bundle*", ".upstream/", ".git/", "build/"]


def _lane(opts: Options, jobs: list[Job], out: str | None = None) -> dict:
    """In a Ray task: run `jobs` on the task's GPU (Ray's CUDA_VISIBLE_DEVICES) into `out` (a local
    cluster's task: its lane's folder) or a temporary folder; its results document."""
    out = Path(out) if out else Path(tempfile.mkdtemp(prefix="ways-ray-"))
    lane = os.environ.get("CUDA_VISIBLE_DEVICES") or None
    Run(dataclasses.replace(opts, out=out), None, jobs=jobs, lane=lane).execute()
    return json.loads((out / "results.json").read_text())


def gpu_kinds(ray) -> dict[str, int]:
    """GPU kind -> GPUs of that kind in the cluster ('any' where Ray names no accelerator type)."""
    kinds: dict[str, int] = {}
    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        res = node.get("Resources") or {}
        kind = next((k.split(":", 1)[1] for k in res if k.startswith("accelerator_type:")), "any")
        if res.get("GPU"):
            kinds[kind] = kinds.get(kind, 0) + int(res["GPU"])
    return kinds


def task_out(out: Path, name: str) -> Path:
    """A task's lane folder: OUT/lanes/<kind>-<n>/."""
    return out / "lanes" / name


def local(address: str) -> bool:
    return address == "local" or address.startswith("local:")


def worker_pythonpath() -> str:
    """The lab ahead of what the driver's own PYTHONPATH adds (where Ray itself may live), not in its
    place: a worker that cannot import ray never starts, and Ray waits for it without saying so."""
    return os.pathsep.join(p for p in (str(ROOT_DIR), os.environ.get("PYTHONPATH")) if p)


def connect(address: str):
    import ray
    env = {"env_vars": {"PYTHONPATH": worker_pythonpath()}}
    if local(address):
        gpus = int(address.split(":", 1)[1]) if ":" in address else None
        ray.init(num_gpus=gpus, include_dashboard=False, runtime_env=env, log_to_driver=False)
    else:                        # a remote cluster gets the lab's code shipped
        ray.init(address=address, log_to_driver=False,
                 runtime_env={"working_dir": str(ROOT_DIR), "excludes": SHIPPED_EXCLUDES})
    return ray


class NoGpus(RuntimeError):
    """The cluster offers no GPU resource to place lanes on."""


def run(opts: Options, address: str, progress) -> dict:
    ray = connect(address)
    try:
        kinds = gpu_kinds(ray)
        if not kinds:
            raise NoGpus(f"the Ray cluster at {address} has no GPU resource (ray.cluster_resources(): "
                         f"{ray.cluster_resources()})")
        opts.out.mkdir(parents=True, exist_ok=True)
        with exclusive(opts.out):
            set_aside(opts.out)
            return _run(ray, opts, kinds, progress, local(address))
    finally:
        ray.shutdown()


def _run(ray, opts: Options, kinds: dict[str, int], progress, on_this_machine: bool = False) -> dict:
    jobs = plan(opts)
    lane = ray.remote(_lane)
    tasks = []                                   # (name, jobs, object ref)
    for kind, count in sorted(kinds.items()):
        placement = {} if kind == "any" else {"resources": {f"accelerator_type:{kind}": 0.001}}
        for n, part in enumerate(p for p in deal(jobs, count) if p):
            name = f"{kind}-{n}"
            out = str(task_out(opts.out, name)) if on_this_machine else None
            ref = lane.options(num_gpus=1, max_retries=MAX_RETRIES, **placement).remote(opts, part, out)
            tasks.append((name, part, ref))
    progress.start(sum(len(j.cases) for _, part, _ in tasks for j in part))
    progress.describe(f"{len(tasks)} Ray tasks on {sum(kinds.values())} GPU(s): {kinds}")
    pending = {ref: (name, part) for name, part, ref in tasks}
    collected: dict[str, tuple[dict, str]] = {}          # task name -> (its document, where it was written)
    fields = {"ray": {"gpu_kinds": kinds, "tasks": [name for name, _, _ in tasks]}}
    try:
        _collect(ray, opts, pending, collected, progress)
    except KeyboardInterrupt:
        _stop(ray, list(pending))
        if on_this_machine:                      # what the other tasks measured, from their lanes' folders
            for name, _, _ in tasks:
                path = task_out(opts.out, name) / "results.json"
                if name not in collected and path.is_file():
                    collected[name] = (json.loads(path.read_text()), str(path))
        if collected:
            write_merged(opts.out, *_docs_and_names(collected), **fields)
        raise
    return write_merged(opts.out, *_docs_and_names(collected), **fields)


def _docs_and_names(collected: dict[str, tuple[dict, str]]) -> tuple[list[dict], list[str]]:
    return [doc for doc, _ in collected.values()], [path for _, path in collected.values()]


def _collect(ray, opts: Options, pending: dict, collected: dict, progress) -> None:
    """Each task's document as it finishes, written to its lane's folder and kept in `collected` under
    the task's name before the task leaves `pending`: a Ctrl-C between the two loses nothing."""
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT_S)
        if not ready:
            continue
        done = ready[0]
        name, part = pending[done]
        try:
            doc = ray.get(done)
        except Exception as exc:                 # retries spent: the task's cases are failed, saying why
            doc = failed_doc(part, f"Ray task {name} failed: {why(exc)}")
        path = task_out(opts.out, name) / "results.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        records.atomic_write(path, json.dumps(doc, indent=1) + "\n")
        collected[name] = (doc, str(path))
        del pending[done]
        for j in part:
            for _ in j.cases:
                progress.advance(j.impl.label)


def _stop(ray, refs: list) -> None:
    """Cancel the tasks still running (Ray raises KeyboardInterrupt in each, which stops its run and its
    workers as Ctrl-C does) and give them STOP_S to write their results. A task whose result is already
    there is not cancelled: Ray's driver aborts when a task it cancelled then reports its completion
    ("Tried to complete task that was not pending"), and a finished task's reply can still be on its way."""
    if not refs:
        return
    _, running = ray.wait(refs, num_returns=len(refs), timeout=0)
    for ref in running:
        ray.cancel(ref)
    if running:
        ray.wait(running, num_returns=len(running), timeout=STOP_S)


def why(exc: Exception) -> str:
    """Ray's error in one line: its type and the last line of its text (colour codes removed)."""
    lines = [x.strip() for x in re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).splitlines() if x.strip()]
    return f"{type(exc).__name__}: {lines[-1][:300] if lines else ''}"


def failed_doc(jobs: list[Job], reason: str) -> dict:
    """A results document of `jobs`' cases, every one failed with `reason`."""
    from harness.measure import env
    recs = []
    for j in jobs:
        for c in j.cases:
            r = records.new_record(j.impl.problem, c, j.impl.backend, j.impl.variant)
            r["error"] = reason
            recs.append(r)
    return {"schema_version": records.SCHEMA_VERSION, "environment": env.collect(), "records": recs,
            "crosscheck": [], "references": {},
            "run": {"id": f"failed-{uuid.uuid4().hex[:8]}", "started": "", "argv": [], "kinds": [], "complete": False}}
