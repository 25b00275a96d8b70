"""What a run does: its options, the plan (one job per implementation, its cases), the jobs a slow
builder is spread over, and the vendor rows a compute-bound problem is judged against."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import backends
import problems
from harness.measure.stopping import window_scale
from harness.run import registry
from harness.run.registry import Impl
from problems.base import Case


@dataclass
class Options:
    problems: list[str] = field(default_factory=list)
    backends: list[str] = field(default_factory=list)
    kinds: tuple[str, ...] = ("test", "bench")
    custom: dict[str, tuple[Case, ...]] = field(default_factory=dict)   # problem -> its own cases (--shape)
    dtype: str | None = None          # keep only built-in cases of this dtype
    case_names: tuple[str, ...] = ()  # keep only built-in cases of these names
    out: Path = Path("reports/latest")
    item_timeout: float | None = None  # seconds of a case's own work; None: time_limit's rule per case
    startup_timeout: float = 300.0
    compile_repeats: int = 3
    measure_compile: bool = True
    retry_after_timeout: bool = False  # after a case times out, still run the implementation's others
    quick: bool = False                # only each problem's quick_case_names; its records say quick
    compile_jobs: int = 0              # implementations whose compile-time processes run at once; 0: cores // 4
    jobs: int = 1                      # implementations whose workers run at once on the GPU (gpu_lock.py)
    resume: bool = False               # go on with the run in `out`: only what it has not done (runner.py)


@dataclass
class Job:
    """One worker's share: one implementation over its cases (`shard`: which part of them, if split)."""
    impl: Impl
    cases: list[Case]
    shard: str = ""
    also: tuple[Job, ...] = ()      # the same implementation's other problems, in the same worker (by_implementation)


# A slow builder (a case's build this long or longer) is left out of `--quick` (a demo in minutes),
# and with `--jobs` spread over workers, one per build it makes, and given one cold and one warm
# compile process
SLOW_BUILD_S = 30.0


def first_build_s(impl: Impl) -> float:
    """About how long the implementation's first build takes (Backend.first_build_s, as measured)."""
    return backends.get(impl.backend, impl.variant).first_build_s(impl.problem)


# A case's time limit where --timeout does not set one: a fixed part (start-up, checks, timing), the
# build's known cost, and the host's inputs, float64 reference and copies by the case's bytes: about
# twice the longest case's own work, so one hang costs a minute or two of a run, not ten.
LIMIT_BASE_S, LIMIT_PER_BUILD_S, LIMIT_PER_GIB_S = 60.0, 2.5, 20.0
# a compile-time process: a fresh process's imports, build and first call
COMPILE_LIMIT_BASE_S, COMPILE_LIMIT_PER_BUILD_S = 120.0, 4.0
# one process of its own (the peaks, a compile-only export of every test case)
PROCESS_LIMIT_S = 600.0


# GPU memory a worker holds beyond its case's arrays (its CUDA context, its tool's libraries and pools:
# a torch or JAX worker holds about a GiB before its first array), and the margin on the arrays; of the
# GPU's memory, the share `--jobs` workers may plan to hold at once (the rest: the peaks, fragmentation)
WORKER_BYTES, MEMORY_MARGIN, MEMORY_SHARE = 2**30, 1.25, 0.9


def memory_need(job: Job) -> int:
    """Bytes of GPU memory the job's worker may hold at once: its largest case's arrays and its tool's
    temporaries for it (Backend.workspace_bytes), a compute-bound case's adjacent reference's arrays
    too, with MEMORY_MARGIN, and WORKER_BYTES."""
    largest = 0
    for part in (job, *job.also):
        backend, problem = backends.get(part.impl.backend, part.impl.variant), problems.get(part.impl.problem)
        copies = 2 if problem.adjacent_reference else 1
        for c in part.cases:
            largest = max(largest, copies * problem.footprint(c) + backend.workspace_bytes(problem.name, c))
    return WORKER_BYTES + int(MEMORY_MARGIN * largest)


def memory_budget(lane: str | None = None) -> int | None:
    """Of the run's GPU (a lane's, or the first), the bytes `--jobs` workers may plan to hold; None
    where no GPU is seen."""
    from backends.gpus import gpus
    found = [g for g in gpus() if lane is None or str(g.get("index")) == str(lane)]
    return int(MEMORY_SHARE * found[0]["memory_mib"] * 2**20) if found and found[0].get("memory_mib") else None


def time_limit(impl: Impl, case: Case, opts: Options) -> float:
    """Seconds of the case's own work before it counts as hung (its waits for the GPU not counted): its
    timing's share longer by the window scale, which lengthens every window and batch it times."""
    if opts.item_timeout is not None:
        return opts.item_timeout
    nbytes, _ = problems.get(impl.problem).work(case)
    timing = (LIMIT_BASE_S + LIMIT_PER_GIB_S * nbytes / 2**30) * max(1.0, window_scale())
    return timing + LIMIT_PER_BUILD_S * first_build_s(impl)


def compile_limit(impl: Impl, opts: Options) -> float:
    return opts.item_timeout or COMPILE_LIMIT_BASE_S + COMPILE_LIMIT_PER_BUILD_S * first_build_s(impl)


def process_limit(opts: Options) -> float:
    return opts.item_timeout or PROCESS_LIMIT_S


def slow_builder(impl: Impl) -> bool:
    return first_build_s(impl) >= SLOW_BUILD_S


def shards(job: Job) -> list[Job]:
    """`job`, or for a slow builder (nvmath's cuBLASDx kernels: 70-165 s a build, nothing of it
    cached across processes) one worker per build it makes (`Backend.build_key`: cases of one key
    reuse one build in a process), and one for the cases it does not take at all: each a worker
    that `--jobs` runs beside the others."""
    if not slow_builder(job.impl):
        return [job]
    impl, backend = job.impl, backends.get(job.impl.backend, job.impl.variant)
    builds: dict[object, list[Case]] = {}
    untaken: list[Case] = []
    for c in job.cases:
        if backend.supports(c):
            untaken.append(c)
        else:
            builds.setdefault(backend.build_key(impl.problem, c), []).append(c)
    parts = [*builds.values(), *([untaken] if untaken else [])]      # the builds first: they take long
    if len(parts) == 1:
        return [job]
    return [Job(impl, part, f".part{k + 1}of{len(parts)}") for k, part in enumerate(parts)]


def by_implementation(jobs: list[Job]) -> list[Job]:
    """One worker per implementation for all its problems (`--quick`: each has two cases, and one
    worker start-up, seconds with its tool's imports, then serves six cases instead of two), the longest first builds first."""
    groups: dict[tuple[str, str], list[Job]] = {}
    for j in jobs:
        groups.setdefault((j.impl.backend, j.impl.variant), []).append(j)
    merged = [dataclasses.replace(g[0], also=tuple(g[1:])) for g in groups.values()]
    return sorted(merged, key=lambda j: -sum(first_build_s(p.impl) for p in (j, *j.also)))


def plan(opts: Options) -> list[Job]:
    impls = registry.select(opts.problems, opts.backends)
    if "bench" in opts.kinds or opts.custom:
        impls += vendor_references(impls)
    def wanted(problem: str, c: Case) -> bool:
        return (opts.dtype in (None, c.dtype) and (not opts.case_names or c.name in opts.case_names)
                and (not opts.quick or c.name in registry.quick_cases(problem)))

    def cases(problem: str) -> list[Case]:
        if opts.case_names and not opts.custom:      # a case named runs whatever device it was sized for
            return [c for c in problems.get(problem).all_cases() if c.kind in opts.kinds]
        return registry.cases_for(problem, opts.kinds, opts.custom)

    jobs = [Job(i, [c for c in cases(i.problem) if wanted(i.problem, c)]) for i in impls]
    # Problem-major order, rotating which backend goes first: no backend owns one thermal state.
    by_problem: dict[str, list[Job]] = {}
    for j in jobs:
        by_problem.setdefault(j.impl.problem, []).append(j)
    ordered = []
    for k, p in enumerate(sorted(by_problem)):
        group = by_problem[p]
        shift = k % len(group)
        ordered += group[shift:] + group[:shift]
    return [j for j in ordered if j.cases]


def vendor_references(impls: list[Impl]) -> list[Impl]:
    """Compute-bound problems are judged against their vendor library: add its rows if missing."""
    labels = {(i.problem, i.label) for i in impls}
    known = {(i.problem, i.label): i for i in registry.implementations()}
    extra = []
    for p in sorted({i.problem for i in impls}):
        vendor = problems.get(p).vendor
        if vendor and not any((p, v) in labels for v in vendor):
            extra += [known[(p, v)] for v in vendor if (p, v) in known]
    return extra
