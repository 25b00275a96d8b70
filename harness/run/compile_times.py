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
    backend = backends.get(impl.backend, impl.variant)
    args = ["compile", "--backend", impl.backend, "--variant", impl.variant, "--problem", impl.problem]
    args += ["--export"] if ahead_of_time else []
    args += ["--case", case] if case else []
    colds, warms = [], []             # each process's result line
    paths = backend.search_paths()

    def env(cache: Path) -> dict:
        return supervise.worker_env({**backend.cache_env(str(cache)), **lane_env}, paths)

    def processes(caches: list[Path]):
        if not at_once:
            return (supervise.run_json(args, env(cache), timeout, log) for cache in caches)
        with ThreadPoolExecutor(len(caches)) as pool:     # all finish; a failure is raised in order below
            done = [pool.submit(supervise.run_json, args, env(c), timeout, log) for c in caches]
        return (f.result() for f in done)

    def median(results: list[dict], key: str):
        values = [r[key] for r in results if r.get(key) is not None]
        return statistics.median(values) if values else None
    try:
        caches = [Path(tempfile.mkdtemp(dir=scratch, prefix="cache-")) for _ in range(repeats)]
        for r in processes(caches):
            if r.get("not_applicable"):            # no case it takes, or the tool is unavailable here
                return {"case": None, "not_applicable": r["not_applicable"]}
            colds.append(r)
        if backend.builds_cached:
            warms += processes(caches)         # each on the cache a cold process filled
    except RuntimeError as exc:
        return {"case": colds[-1]["case"] if colds else None, "error": str(exc)[-2000:],
                "cold_samples": [r["build_s"] for r in colds], "warm_samples": [r["build_s"] for r in warms]}
    def parts(runs):
        found: dict[str, list[float]] = {}
        for r in runs:
            for name, seconds in r.get("parts", {}).items():
                found.setdefault(name, []).append(seconds)
        return {name: statistics.median(v) for name, v in found.items()}
    return {"case": colds[-1]["case"], "cold_s": median(colds, "build_s"), "warm_s": median(warms, "build_s"),
            "first_call_s": median(colds, "first_call_s"), "import_s": median(colds, "import_s"),
            "cold_samples": [r["build_s"] for r in colds], "warm_samples": [r["build_s"] for r in warms],
            # CPU seconds: a loaded machine stretches wall time, not these
            "cold_cpu_s": median(colds, "build_cpu_s"), "warm_cpu_s": median(warms, "build_cpu_s"),
            "cold_parts_s": parts(colds), "warm_parts_s": parts(warms),
            "ahead_of_time": ahead_of_time, "processes": len(colds) + len(warms), "repeats_at_once": at_once,
            **({} if backend.builds_cached else {"warm_note": "nothing of a build is kept on disk: a warm process "
                                                              "builds all of it again (not measured)"})}
