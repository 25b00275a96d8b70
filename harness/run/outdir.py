"""The output folder of a run: one run at a time writes into it, and an earlier run's files there
are moved aside, never overwritten."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path


class OutputBusy(RuntimeError):
    """Another `ways run` is writing into the same output folder."""


@contextlib.contextmanager
def exclusive(out: Path):
    """Hold the output folder for this run: a second run into it fails at once, saying why."""
    with open(out / ".ways-run.lock", "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            raise OutputBusy(f"another `ways run` ({lock.read().strip() or 'pid unknown'}) is writing to "
                             f"{out}; wait for it or give another --out") from None
        lock.truncate(0)
        lock.write(f"pid {os.getpid()}")
        lock.flush()
        try:
            yield
        finally:
            os.unlink(lock.name)       # no lock file left among the results


RESULT_FILES = ("results.jsonl", "results.json", "summary.csv", "logs", "report.md", "figures", "index.html",
                ".crosscheck-outputs")


def set_aside_previous(out: Path) -> Path | None:
    """Move an earlier run's files in `out` to out/previous/<its run id>/ (nothing is overwritten);
    return where they went, or None."""
    if not (out / "results.jsonl").is_file():
        return None
    try:
        with open(out / "results.jsonl") as f:
            run_id = json.loads(f.readline())["run"]["id"]
    except (ValueError, KeyError):
        run_id = f"unknown-{int((out / 'results.jsonl').stat().st_mtime)}"
    dest = out / "previous" / run_id
    dest.mkdir(parents=True, exist_ok=True)
    for name in RESULT_FILES:
        if (out / name).exists():
            os.replace(out / name, dest / name)
    return dest
