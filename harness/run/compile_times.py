"""Compile time of one implementation, in fresh processes: cold ones each with empty JIT caches,
warm ones on a cache a cold one filled; ahead of time (no GPU) the same, timing export()."""
from __future__ import annotations

import statistics
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import backends
from harness.run import supervise
from harness.run.registry import Impl


def measure(impl: Impl, scratch: Path, log: Path, repeats: int, timeout: float, lane_env: dict,
            ahead_of_time: bool = False, case: str | None = None, at_once: bool = False) -> dict:
    """Medians of `repeats` cold and `repeats` warm processes (build, first call, the tool's import),
    and every sample; {"case", "error", ...} where a process failed. `case`: time this case instead
    of the problem's compile case. `at_once`: the cold processes run at the same time, then the warm
    ones (each on a core of its own: for a run that must end soon, e.g. beside `--jobs` workers)."""
    backend = backends.get(impl.backend)
    args = ["compile", "--backend", impl.backend, "--variant", impl.variant, "--problem", impl.problem]
    args += ["--export"] if ahead_of_time else []
    args += ["--case", case] if case else []
    cold, warm, first_calls, imports, parts, case = [], [], [], [], {}, None
    cold_cpu, warm_cpu = [], []       # CPU seconds: a loaded machine stretches wall time, not these
    paths = backend.search_paths(impl.variant)

    def env(cache: Path) -> dict:
        return supervise.worker_env({**backend.cache_env(str(cache)), **lane_env}, paths)

    def processes(caches: list[Path]):
        if not at_once:
            return (supervise.run_json(args, env(cache), timeout, log) for cache in caches)
        with ThreadPoolExecutor(len(caches)) as pool:     # all finish; a failure is raised in order below
            done = [pool.submit(supervise.run_json, args, env(c), timeout, log) for c in caches]
        return (f.result() for f in done)
    try:
        caches = [Path(tempfile.mkdtemp(dir=scratch, prefix="cache-")) for _ in range(repeats)]
        for r in processes(caches):
            if r.get("not_applicable"):
                return {"case": None, "error": r["not_applicable"]}
            cold.append(r["build_s"])
            if r.get("build_cpu_s") is not None:
                cold_cpu.append(r["build_cpu_s"])
            if r.get("import_s") is not None:
                imports.append(r["import_s"])
            if r["first_call_s"] is not None:
                first_calls.append(r["first_call_s"])
            for name, seconds in r.get("parts", {}).items():
                parts.setdefault(name, []).append(seconds)
            case = r["case"]
        for r in processes(caches):            # each on the cache a cold process filled
            warm.append(r["build_s"])
            if r.get("build_cpu_s") is not None:
                warm_cpu.append(r["build_cpu_s"])
    except RuntimeError as exc:
        return {"case": case, "error": str(exc)[-2000:], "cold_samples": cold, "warm_samples": warm}
    return {"case": case, "cold_s": statistics.median(cold), "warm_s": statistics.median(warm),
            "first_call_s": statistics.median(first_calls) if first_calls else None,
            "import_s": statistics.median(imports) if imports else None,
            "cold_samples": cold, "warm_samples": warm,
            "cold_cpu_s": statistics.median(cold_cpu) if cold_cpu else None,
            "warm_cpu_s": statistics.median(warm_cpu) if warm_cpu else None,
            "cold_parts_s": {name: statistics.median(v) for name, v in parts.items()},
            "ahead_of_time": ahead_of_time, "processes": len(cold) + len(warm), "repeats_at_once": at_once}
