"""What a row's figures depend on, as short hashes, kept in each record (`fingerprint`), so `ways run
--update RESULTS` reruns exactly the rows a change touches:

- source: the implementation's files (the backend's folder's __init__.py, the problem's file and the
  folder's `_*.py` helpers);
- tool: the versions of the backend's distributions in the run's environment;
- problem: the problem's spec (its module and problems/base.py);
- lab: the code that checks and times a row (the worker, its session, the timing engines, the peaks,
  backends/base.py). % of peak is computed again from the records, so roofline.py is not in it.
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import backends
from harness import ROOT

LAB_FILES = ("harness/run/worker.py", "harness/run/session.py", "harness/run/adjacent.py",
             "harness/run/case_store.py", "harness/measure/timing.py", "harness/measure/gate.py",
             "harness/measure/second_timer.py", "harness/measure/nvbench_engine.py",
             "harness/measure/peaks.py", "harness/measure/device.py", "backends/base.py")
HASH_CHARS = 16


def digest(paths: list[Path]) -> str:
    return _digest(tuple(sorted(paths)))


@functools.cache
def _digest(paths: tuple[Path, ...]) -> str:
    """Read once a process: every record of a run hashes the same files (the lab's for each of them)."""
    h = hashlib.sha256()
    for p in paths:       # a tool's folder may be outside the checkout (WAYS_BACKEND_PATH)
        name = p.relative_to(ROOT).as_posix() if p.is_relative_to(ROOT) else p.name
        h.update(name.encode() + b"\0" + (p.read_bytes() if p.is_file() else b""))
    return h.hexdigest()[:HASH_CHARS]


def implementation_files(backend: str, problem: str) -> list[Path]:
    source = backends.source_path(backend, problem)
    return [source.parent / "__init__.py", source, *sorted(source.parent.glob("_*.py"))]


def of_row(rec: dict, versions: dict[str, str]) -> dict:
    """The fingerprint of one record (its backend, variant and problem), given the run's package versions."""
    tool = backends.get(rec["backend"], rec["variant"] or "").distributions
    return {"source": digest(implementation_files(rec["backend"], rec["problem"])),
            "tool": {d: versions.get(d) for d in tool},
            "problem": digest([ROOT / "problems" / f"{rec['problem']}.py", ROOT / "problems" / "base.py"]),
            "lab": digest([ROOT / f for f in LAB_FILES])}
