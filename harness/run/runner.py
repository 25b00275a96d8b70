"""`ways run`: plan the work, run each backend variant's share in its own worker, stream the
records to results.jsonl, then measure compile times, cross-check outputs and write the summary."""
from __future__ import annotations

import datetime as dt
import functools
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import backends
import problems
from harness.measure import env, gpu, loc, roofline, timing
from harness.measure.phases import Phases, run_profile
from harness.measure.stopping import window_scale
from harness.results import crosscheck, records
from harness.run import caches, compile_times, fingerprint, resume, supervise
from harness.run.judged_again import Watch, short_of_memory
from harness.run.outdir import exclusive, set_aside_previous
from harness.run.plan import (Job, Options, by_implementation, compile_limit, first_build_s, memory_budget,
                               memory_need, plan, process_limit, shards, slow_builder, time_limit)
from harness.run.progress import NullProgress
from harness.schedule import cpu_load, gpu_lock, lock_holds
from harness.schedule.slots import Slots
from problems.base import Case


class Run:
    def __init__(self, opts: Options, progress=None, jobs: list[Job] | None = None, lane: str | None = None,
                 cores: int | None = None, timing_cores: tuple[str, str] | None = None, compiled: set = frozenset()):
        """`jobs` instead of the plan, and `lane`: the GPU (nvidia-smi index) every process of this
        run sees as its only one (CUDA_VISIBLE_DEVICES), for `ways run --gpus` (run/lanes.py), with
        `cores` its share of this machine's (for its compile-time processes) and `timing_cores`
        (the cores every lane's timers keep, this lane's): see gpu_lock.py; `compiled`: the
        implementations whose compile figures another lane of a resumed run measured."""
        self.opts = opts
        self.cores = cores or env.usable_cores()
        self.timing_cores = timing_cores or gpu_lock.timing_cores_for(1)[0]
        self.jobs, self.lane = jobs, lane
        self.lane_env = {"CUDA_VISIBLE_DEVICES": lane} if lane is not None else {}
        self.progress = progress or NullProgress()
        self.out = Path(opts.out)
        self.records: list[dict] = []
        self.set_aside: Path | None = None     # where an earlier run's files in --out were moved
        self.phases = Phases()                 # this process's, and the workers' they report
        self.worker_phases = Phases()
        self.done = resume.Done()              # --resume: what the run in --out has done already
        self.compiled_elsewhere = set(compiled)
        self._lock = threading.Lock()          # --jobs: the workers' threads report through it
        self._beside: threading.Thread | None = None     # --jobs: the compile-time processes' thread
        self.watch = Watch()         # --jobs: which cases were in flight beside a hang

    def execute(self) -> dict:
        """Run the plan into --out. One run at a time per folder (OutputBusy otherwise); a previous
        run's files there are moved to previous/<its id>/; an interrupted or crashed run still
        leaves a valid results.json (complete: false) with everything measured until then."""
        jobs = plan(self.opts) if self.jobs is None else self.jobs
        self.out.mkdir(parents=True, exist_ok=True)
        with exclusive(self.out):
            scratch = Path(tempfile.mkdtemp(prefix="ways-"))
            if self.opts.resume:
                self.done = resume.done(self.out, scratch)
            else:
                self.set_aside = set_aside_previous(self.out)
            self.done.compiles |= self.compiled_elsewhere
            (self.out / "logs").mkdir(exist_ok=True)
            started = time.time()
            writer = records.JsonlWriter(self.out / "results.jsonl", append=self.opts.resume)
            environment = env.collect()
            self.versions = environment["versions"]
            writer.write({"type": "resumed" if self.opts.resume else "run", "environment": environment, "run": {
                "id": uuid.uuid4().hex[:12], "started": _iso(started), "argv": sys.argv[1:],
                "kinds": list(self.opts.kinds), "quick": self.opts.quick, "gpu_lane": self.lane,
                "selection": resume.selection(self.opts), "window_scale": window_scale(),
                "custom_cases": resume.custom_json(self.opts.custom)}})
            ended = False
            load = cpu_load.CpuLoad(env.usable_core_ids())
            try:
                with load:
                    self._execute(jobs, writer, scratch)
                ended = True
            finally:
                if self._beside is not None and self._beside.is_alive():     # interrupted: stop its processes
                    supervise.kill_running()
                    self._beside.join(timeout=10)
                holds_log = scratch / ("gpu.lock" + gpu_lock.HOLDS_SUFFIX)
                holds = lock_holds.summarize(lock_holds.read(holds_log))
                if holds_log.exists():      # every hold, for a timeline of who had the GPU when
                    shutil.copyfile(holds_log, self.out / lock_holds.LOG_NAME)
                if holds:
                    writer.write({"type": "gpu_lock", "gpu_lock": holds})
                busy = load.summary()
                if busy:
                    writer.write({"type": "cpu_load", "cpu_load": busy})
                finished = time.time()
                # an interrupted run's profile too ("stopped": complete stays false)
                writer.write({"type": "end" if ended else "stopped", "run": {
                    "finished": _iso(finished), "duration_s": round(finished - started, 3),
                    "phases": run_profile(self.phases, self.worker_phases, finished - started, self.opts.jobs > 1),
                    "jobs": self.opts.jobs, "peak_rss_bytes": env.peak_rss_bytes(),
                    "worker_phases": self.worker_phases.as_dict()}})
                writer.close()
                if not ended:
                    resume.keep_outputs(scratch, self.out)     # for the cross-check of a `--resume`
                shutil.rmtree(scratch, ignore_errors=True)
                self.progress.stop()
                with supervise.interrupts_held():
                    doc = summarize(self.out / "results.jsonl")
                    records.write_summary(doc, self.out)
        return doc

    def _execute(self, jobs: list[Job], writer, scratch: Path) -> None:
        available, exported, skipped = self._availability(jobs)
        todo = [(j, False) for j in available] + [(j, True) for j, _ in exported] if self.opts.measure_compile else []
        todo = [(j, aot) for j, aot in todo if not self.done.compiled(j.impl)]
        left = self.done.left          # --resume: each job's cases not done yet (all of them otherwise)
        available = [j for j in map(left, available) if j.cases]
        exported = [(lj, why) for j, why in exported if (lj := left(j)).cases]
        skipped = [(lj, status, why) for j, status, why in skipped if (lj := left(j)).cases]
        total = sum(len(j.cases) for j in [*available, *(j for j, *_ in exported + skipped)]) + len(todo)
        self.progress.start(total)
        writer.write({"type": "gpu_state", "when": "before", "state": gpu.state(self.lane)})
        if any(c.kind == "bench" for j in available if self._on_gpu(j) for c in j.cases):
            self.progress.describe("warm-up and peak references")
            with self.phases("warm-up and peak references (a process)"):
                writer.write({"type": "references", "references": self._peaks(scratch)})
        for job, reason in exported:
            with self.phases("compile-only processes (no GPU)"):
                self._export_job(job, reason, writer, scratch)
        for job, status, reason in skipped:
            for case in job.cases:
                self._emit(writer, self._record(job, case, status=status, reason=reason))
                self.progress.advance(f"{job.impl.label} {status}")
        # --jobs: the compile-time processes start with the workers (CPU work; their GPU part waits
        # for the lock like a worker's), else they follow the workers on an idle GPU
        if todo and self.opts.jobs > 1:
            self._beside = self._compile_beside_workers(todo, writer, scratch)
        with self.phases("workers"):
            self._run_jobs(available, writer, scratch)
        if self._beside is not None:
            with self.phases("compile-time processes (after the workers ended)"):
                self._beside.join()
        elif todo:
            with self.phases("compile-time processes"):
                self._all_compile_times(todo, writer, scratch)
        again = self.watch.beside_hangs()
        if self.opts.jobs > 1:
            again = {**short_of_memory(self.records), **again}
        if again:
            with self.phases("cases judged again alone (after a hang, or out of memory)"):
                self._judge_again(available, again, writer, scratch)
        writer.write({"type": "gpu_state", "when": "after", "state": gpu.state(self.lane)})
        with self.phases("cross-check"):
            for row in crosscheck.pairwise(scratch / "outputs"):
                writer.write({"type": "crosscheck", "crosscheck": row})

    # -- pieces ---------------------------------------------------------------------------
    def _availability(self, jobs):
        """Jobs that run; (job, reason) of those that only compile ahead of time here; (job, status, reason) left out."""
        ok, exported, skipped = [], [], []
        for job in jobs:
            impl, backend = job.impl, backends.get(job.impl.backend, job.impl.variant)
            good, reason = backend.available()
            if self.opts.quick and slow_builder(impl):
                skipped.append((job, "skipped", f"--quick leaves out implementations whose first build takes about "
                                                f"{first_build_s(impl):.0f} s (a run without --quick has it)"))
            elif good:
                ok.append(job)
            elif backend.exports() and any(c.kind == "test" for c in job.cases) and not self.opts.quick:
                exported.append((job, reason))
            else:
                left_out = backend.exports() and self.opts.quick    # the exports: minutes of a small machine's demo
                skipped.append((job, "unavailable", reason + (f"; a run without --quick compiles its test cases ahead "
                                                              f"of time for {backend.aot_target}" if left_out else "")))
        return ok, exported, skipped

    def _on_gpu(self, job: Job) -> bool:
        return backends.get(job.impl.backend, job.impl.variant).device() == "cuda"

    def _peaks(self, scratch: Path) -> dict:
        try:
            return supervise.run_json(["peaks"], supervise.worker_env(self.lane_env), process_limit(self.opts),
                                      self.out / "logs" / "peaks.log")
        except RuntimeError as exc:
            return {"error": str(exc)[-2000:]}

    def _export_job(self, job: Job, reason: str, writer, scratch: Path) -> None:
        """No GPU, but the tool compiles ahead of time: compile each test case (status compile_only)."""
        impl = job.impl
        backend = backends.get(impl.backend, impl.variant)
        self.progress.describe(f"{impl.label} {impl.problem}: compile only")
        error = "the compile-only worker returned nothing for this case"
        try:
            env_ = supervise.worker_env({**backend.cache_env(str(scratch / "cache" / impl.label)), **self.lane_env},
                                        backend.search_paths())
            done = {d["case"]: d for d in supervise.run_json(
                ["export", "--backend", impl.backend, "--variant", impl.variant, "--problem", impl.problem],
                env_, process_limit(self.opts), self.out / "logs" / f"{impl.label}.{impl.problem}.export.log")["cases"]}
        except RuntimeError as exc:
            done, error = {}, str(exc)[-2000:]
        for case in job.cases:
            d = done.get(case.name)
            if case.kind != "test":
                rec = self._record(job, case, status="unavailable", reason=reason)
            elif d is None:
                rec = self._record(job, case, status="failed", error=f"compile-only: {error}")
            elif "not_applicable" in d:
                rec = self._record(job, case, status="not_applicable", reason=d["not_applicable"])
            else:
                rec = self._record(job, case, status="compile_only", build_s=d["build_s"],
                                   reason=f"compiled ahead of time for {backend.aot_target} ({d['bytes']} bytes), "
                                          f"not run: {reason}")
            self._emit(writer, rec)
            self.progress.advance(impl.label)

    @functools.cached_property
    def lane_gpu(self) -> dict:
        """Which GPU measured this run's records: nvidia-smi's index, name and UUID."""
        found = {str(g.get("index")): g for g in gpu.gpus()}.get(self.lane, {})
        return {"index": int(self.lane), "name": found.get("name"), "uuid": found.get("uuid"),
                "host": socket.gethostname()}

    def _record(self, job: Job, case: Case, **fields) -> dict:
        return {**records.new_record(job.impl.problem, case, job.impl.backend, job.impl.variant), **fields}

    def _emit(self, writer, rec: dict) -> None:
        if rec.get("loc") is None:
            count = loc.count_implementation(backends.source_path(rec["backend"], rec["problem"]), rec["variant"])
            rec["loc"] = {"total": count.total, "kernel": count.kernel, "host": count.host}
        if rec.get("work") is None:
            case = Case(rec["case"], rec["kind"], rec["dtype"], rec["shape"])
            rec["work"] = dict(zip(("bytes", "flops"), problems.get(rec["problem"]).work(case), strict=True))
        rec["fingerprint"] = fingerprint.of_row(rec, self.versions)
        if self.opts.quick:
            rec["quick"] = True
        if self.lane is not None:
            rec["gpu"] = self.lane_gpu
        self.records.append(rec)
        writer.write({"type": "record", "record": rec})

    def _run_jobs(self, jobs: list[Job], writer, scratch: Path) -> None:
        """The jobs' workers, `--jobs` at a time and slow builders' beside them (slots.py): their CPU
        work (references, compiling) overlaps, and gpu_lock.py keeps every other worker off the GPU
        while one times."""
        if self.opts.quick:
            jobs = by_implementation(jobs)
        if self.opts.jobs == 1:
            for job in jobs:
                self._run_job(job, writer, scratch)
            return
        jobs = [shard for j in jobs for shard in shards(j)]
        # a slow builder's workers compile for minutes: slots of their own on half the cores (slots.py)
        build_slots = max(1, self.cores // 2) if any(slow_builder(j.impl) for j in jobs) else 0
        slots = Slots(jobs, self.opts.jobs, build_slots, supervise.stopping, slow=lambda j: slow_builder(j.impl),
                      build_s=lambda j: first_build_s(j.impl), need=memory_need, budget=memory_budget(self.lane))
        lock = self._lock_env(scratch)
        for _ in supervise.in_threads(slots.width, self._run_slot, [(slots, writer, scratch, lock)] * slots.count):
            pass

    def _lock_env(self, scratch: Path) -> dict:
        """The environment that puts a run's processes under one GPU lock, its timers on a core of
        their own (gpu_lock.py)."""
        env = {gpu_lock.LOCK_VAR: str(scratch / "gpu.lock")}
        if self.timing_cores:
            env[gpu_lock.CORES_VAR], env[gpu_lock.CORE_VAR] = self.timing_cores
        return env

    def _run_slot(self, slots: Slots, writer, scratch: Path, lock: dict) -> None:
        kind, job = slots.take()
        try:
            self._run_job(job, writer, scratch, lock)
        finally:
            slots.done(kind, job)

    def _judge_again(self, jobs: list[Job], again: dict[tuple, str], writer, scratch: Path) -> None:
        """The cases in flight beside a hang (judged_again.Watch) or short of the memory others held,
        run again one worker at a time on a quiet GPU: a row fails only for its own fault. Each new
        record says why, and what its first run came to."""
        first = {records.record_key(r): r for r in self.records}
        redo: dict[tuple, tuple[Job, dict]] = {}
        for part in (p for job in jobs for p in (job, *job.also)):
            for case in part.cases:
                key = (part.impl.backend, part.impl.variant, part.impl.problem, case.name)
                if key in again:
                    job, notes = redo.setdefault(key[:3], (Job(part.impl, []), {}))
                    job.cases.append(case)
                    was = first.get(key, {})
                    line = (was.get("error") or was.get("reason") or "").split("\n")[0]
                    notes[case.name] = {"why": again[key], "first": ": ".join(filter(None, [was.get("status"), line]))
                                        or "not reported"}
        self.progress.describe(f"judging {len(again)} case(s) again alone")
        for job, notes in redo.values():
            self._run_job(job, writer, scratch, rerun=notes)

    def _run_job(self, job: Job, writer, scratch: Path, extra_env: dict | None = None,
                 rerun: dict[str, dict] | None = None) -> None:
        impl = job.impl
        backend = backends.get(impl.backend, impl.variant)
        cache = caches.worker_cache(impl, self.versions)      # kept across runs
        # --quick: the cold mode alone (the sustained one's lead and samples are most of a GEMM's timing)
        modes = {timing.MODES_VAR: "cold"} if self.opts.quick else {}
        environ = supervise.worker_env({**backend.cache_env(str(cache)), **self.lane_env, **modes,
                                        **(extra_env or {})}, backend.search_paths())
        parts = (job, *job.also)       # by_implementation: one worker for several problems
        owners = [(part, c) for part in parts for c in part.cases]
        items = [{"problem": part.impl.problem, "case": c.to_json()} for part, c in owners]

        def on_event(index, event):
            if event["event"] == "start":
                part, case = owners[index]
                self.progress.describe(f"{impl.label} {part.impl.problem} {case.name}")
            elif event["event"] == "done":
                self._emit(writer, judged_again(event["record"]))
                if not rerun:
                    self.progress.advance(impl.label)
            elif event["event"] == "device":
                writer.write({"type": "device", "device": event["properties"]})
            elif event["event"] == "phases":
                with self._lock:
                    self.worker_phases.add(event["phases"])

        def on_lost(index, message, status):
            self._emit(writer, judged_again(self._record(*owners[index], status=status, error=message)))
            if not rerun:
                self.progress.advance(impl.label)

        def judged_again(rec):
            if rerun and rec["case"] in rerun:
                rec["rerun"] = rerun[rec["case"]]
            return rec

        problems_ = "+".join(part.impl.problem for part in parts)
        limits = [time_limit(part.impl, c, self.opts) for part, c in owners]
        log = self.out / "logs" / f"{impl.label}.{problems_}{job.shard}.log"
        supervise.run_items(supervise.WorkerItems(
            impl.backend, impl.variant, items, limits, scratch, log, environ, self.opts.startup_timeout,
            self.opts.retry_after_timeout, self.watch if self.opts.jobs > 1 and not rerun else None), on_event, on_lost)

    def _all_compile_times(self, todo: list[tuple[Job, bool]], writer, scratch: Path, lock: dict | None = None) -> None:
        """Every implementation's compile-time processes, `compile_jobs` implementations at a time.
        Each process compiles on one core, so up to a quarter of the cores in use leaves the figures
        those of an idle machine; each record says how many ran beside it (`lock`: beside --jobs
        workers, whose GPU lock their GPU part takes)."""
        at_once = lock is not None and self.opts.compile_repeats > 1
        # processes on a quarter of the cores; beside the workers on all but the timer's, each
        # implementation's repeats at once, so that they end about when the workers do
        cores = self.cores
        jobs = self.opts.compile_jobs or max(1, (cores - 1) // self.opts.compile_repeats if at_once else cores // 4)
        self.progress.describe(f"compile time: {len(todo)} implementations, {jobs} at a time")
        processes = jobs * (self.opts.compile_repeats if at_once else 1)

        def measured(job: Job, aot: bool) -> None:
            # written as each ends, not in the order started: a run stopped while a slow one goes on
            # (nvmath's builds take minutes) keeps the figures of those that ended, for --resume
            result = self._compile_times(job, scratch, aot, lock, at_once)
            writer.write({"type": "compile", "backend": job.impl.backend, "variant": job.impl.variant,
                          "problem": job.impl.problem, "compile": {**result, "concurrent": processes,
                                                                    "beside_workers": self.opts.jobs if lock else 0}})
            self.progress.advance(job.impl.label)
        for _ in supervise.in_threads(jobs, measured, todo):
            pass

    def _compile_beside_workers(self, todo: list[tuple[Job, bool]], writer, scratch: Path) -> threading.Thread:
        """_all_compile_times in a thread of its own, slowest first (the longest path of the run)."""
        todo = sorted(todo, key=lambda t: -first_build_s(t[0].impl))

        def go():
            try:
                self._all_compile_times(todo, writer, scratch, self._lock_env(scratch))
            except BaseException as exc:     # e.g. Ctrl-C killed its processes: the workers' part decides
                writer.write({"type": "note", "note": f"compile-time processes stopped: {type(exc).__name__}: {exc}"})
        thread = threading.Thread(target=go, daemon=True)
        thread.start()
        return thread

    def _compile_times(self, job: Job, scratch: Path, ahead_of_time: bool = False, lock: dict | None = None,
                       at_once: bool = False) -> dict:
        impl = job.impl
        log = self.out / "logs" / f"{impl.label}.{impl.problem}.compile.log"
        # a build of minutes varies little (nvmath's cold ones: 77-83 s), and three cold and three warm
        # processes of it would take more CPU than the rest of the run's compile processes together
        repeats = 1 if slow_builder(impl) and lock else self.opts.compile_repeats
        return compile_times.measure(impl, scratch, log, repeats, compile_limit(impl, self.opts),
                                     {**self.lane_env, **(lock or {})}, ahead_of_time, at_once=at_once)


def summarize(jsonl: Path) -> dict:
    """The summary document of a results.jsonl, rates and % of peak filled in."""
    doc = records.merge(records.read_jsonl(jsonl))
    roofline.apply(doc)
    return doc


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="seconds")
