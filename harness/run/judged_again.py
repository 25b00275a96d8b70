"""Which rows a run judges again, alone, once its workers are done: those in flight beside another
worker's hang (a kernel that never ends keeps the GPU from every process until it is killed) and
those that ran out of GPU memory while other workers held some."""
from __future__ import annotations

import contextlib
import math
import re
import threading
import time

import backends
from harness.results import records


class Watch:
    """The items of workers that share one GPU (`ways run --jobs`) on a timeline: when each was in
    flight, and when one hung. A kernel that never ends keeps the GPU from every other process until
    its own is killed, so a case in flight beside a hang cannot be judged by what happened to it
    then: the runner runs it again afterwards on a quiet GPU (`beside_hangs`). While a hung worker is
    being killed, another whose clock runs out gets its time again (`others_hanging`)."""

    def __init__(self):
        self._lock = threading.RLock()
        self.spans: dict[tuple, list[float]] = {}     # item -> [start, end] (end inf while in flight)
        self.hangs: list[tuple[tuple, float, float, str]] = []   # (item, since, killed, what)
        self.skipped_after: dict[tuple, tuple] = {}   # item not run -> the item whose time-out skipped it
        self._hanging: set[tuple] = set()

    def began(self, key: tuple) -> None:
        with self._lock:
            self.spans[key] = [time.monotonic(), math.inf]

    def ended(self, key: tuple) -> None:
        with self._lock:
            if key in self.spans and self.spans[key][1] == math.inf:
                self.spans[key][1] = time.monotonic()

    def others_hanging(self, key: tuple) -> bool:
        with self._lock:
            return bool(self._hanging - {key})

    @contextlib.contextmanager
    def hanging(self, key: tuple, since: float, what: str):
        """Around the kill of a worker hung on `key` since `since` (its last sign of life)."""
        with self._lock:
            self._hanging.add(key)
        try:
            yield
        finally:
            with self._lock:
                self._hanging.discard(key)
                self.hangs.append((key, since, time.monotonic(), what))
                self.ended(key)

    def skipped(self, key: tuple, after: tuple) -> None:
        with self._lock:
            self.skipped_after[key] = after

    def beside_hangs(self) -> dict[tuple, str]:
        """Every item in flight while another hung, and those a time-out of one of them left not
        run: item -> why it is judged again."""
        again = {}
        for key, (start, end) in self.spans.items():
            for hung, since, killed, what in self.hangs:
                if hung != key and start < killed and end > since:
                    who = f"{' '.join(hung[2:])} of {backends.label(*hung[:2])}"
                    again[key] = f"it was in flight while {who} hung ({what})"
                    break
        for key, after in self.skipped_after.items():
            if after in again and key not in again:
                again[key] = f"it was not run after {' '.join(after[2:])} timed out, which is judged again"
        return again


# what the CUDA runtime and the tools say when the GPU's memory runs out: beside other workers (--jobs)
# that can be their share of it, so such a row is judged again alone
OUT_OF_MEMORY = re.compile(r"out of memory|RESOURCE_EXHAUSTED|OutOfMemoryError|CUDA_ERROR_OUT_OF_MEMORY|"
                           r"cudaErrorMemoryAllocation", re.I)


def short_of_memory(recs: list[dict]) -> dict[tuple, str]:
    """The rows that failed out of GPU memory: (backend, variant, problem, case) -> why they are
    judged again."""
    return {records.record_key(r): "it ran out of GPU memory while other workers held some"
            for r in recs if r["status"] == "failed" and OUT_OF_MEMORY.search(r.get("error") or "")}
