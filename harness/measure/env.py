"""The environment a run happened in: versions (read from package metadata, nothing imported),
GPU facts, git commit."""
from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys

import backends
from harness import ROOT
from harness.measure import gpu

ALWAYS = ("numpy", "rich", "cuda-core", "cuda-bindings", "cuda-bench", "nvidia-ml-py")


def memory_limits() -> list[tuple[str, int]]:
    """(what, bytes) a case's arrays must fit: the host's memory, and the first GPU's."""
    limits = [("host memory", os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))]
    for g in gpu.gpus()[:1]:
        if g.get("memory_mib"):
            limits.append((f"GPU memory ({g['name']})", g["memory_mib"] << 20))
    return limits


def versions() -> dict[str, str]:
    names = set(ALWAYS)
    for b in backends.names():
        names.update(backends.get(b).distributions)
    found = {}
    for n in sorted(names):
        try:
            found[n] = importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def git_commit() -> str:
    """HEAD (+dirty where code differs from it: committed results under reports/ do not count, a GPU
    node may get the tree without them), or WAYS_GIT_COMMIT where the tree was copied without its .git."""
    if os.environ.get("WAYS_GIT_COMMIT"):
        return os.environ["WAYS_GIT_COMMIT"]
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":(exclude)reports"], capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "") if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def collect() -> dict:
    return {"python": sys.version.split()[0], "platform": platform.platform(),
            "machine": platform.machine(), "cpu_count": _cpu_count(),
            "cpus_usable": usable_cores(),
            "git_commit": git_commit(), "settings": settings(),
            "gpus": list(gpu.gpus()), "versions": versions(), "device": None}


def settings() -> dict[str, str]:
    """The lab's own environment variables this run was started with (timing modes, engines, sites)."""
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith("WAYS_")}


def usable_core_ids() -> list[int]:
    """The cores this process may run on (taskset / cgroup affinity), not every core of the machine."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))          # not on Linux


def usable_cores() -> int:
    return len(usable_core_ids())


def _cpu_count():
    return os.cpu_count()


def peak_rss_bytes() -> int:
    """The largest resident set any process of this run reached: this one's, or its largest waited-for
    child's (workers run one at a time per job: with --jobs 1 it is the run's peak memory)."""
    import resource
    return 1024 * max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
