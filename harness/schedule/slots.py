"""Which job a free worker slot of `ways run --jobs N` takes next. A slow builder's workers (nvmath:
minutes of compiling a build; the runner says which jobs are, and how long each builds) get slots
of their own beside the N: were they
first in line for the N, the GPU would sit idle while they compile; were they last, their builds
would be the run's tail. The N slots keep the GPU fed and never hold more than N workers; a slow
builder may also take a thread no other job is waiting for. Where the GPU's memory is given
(`budget`), a job starts only while the workers running and it need no more than that (`need(job)`,
bytes), the first in line that fits going first; a job that fits in no share runs once nothing else
does, alone."""
from __future__ import annotations

import threading


class Slots:
    def __init__(self, jobs: list, gpu_slots: int, build_slots: int, stopping=lambda: False,
                 slow=lambda job: False, build_s=lambda job: 0.0, need=lambda job: 0, budget: int | None = None):
        """`slow(job)`: whether a job is a slow builder's; `build_s(job)`: about how long its first
        build takes (the slowest go first); `need(job)`: the GPU memory its worker may hold, of
        `budget` (None: no limit)."""
        self.need, self.budget, self.held = need, budget, 0
        self.slow = sorted((j for j in jobs if slow(j)), key=lambda j: -build_s(j))
        self.fast = [j for j in jobs if not slow(j)]
        self.limits = {"fast": gpu_slots, "slow": build_slots}
        self.running = {"fast": 0, "slow": 0}
        self.width = gpu_slots + build_slots        # threads that take jobs
        self.count = len(jobs)
        self.stopping = stopping                    # Ctrl-C: a waiting slot gives up
        self._cond = threading.Condition()

    def take(self) -> tuple[str, object]:
        """The next job for a free slot, waiting while the one it may take would exceed its kind's
        slots or the memory left; raises KeyboardInterrupt once the run is stopping."""
        with self._cond:
            while True:
                if self.stopping():
                    raise KeyboardInterrupt
                picked = self._pick()
                if picked is not None:
                    kind, index = picked
                    self.running[kind] += 1
                    job = (self.slow if kind == "slow" else self.fast).pop(index)
                    self.held += self.need(job)
                    return kind, job
                self._cond.wait(timeout=1.0)

    def _fitting(self, queue: list) -> int | None:
        """The index of the first job of `queue` whose need fits in the memory left (any, on an idle GPU)."""
        idle = self.running["fast"] + self.running["slow"] == 0
        for i, job in enumerate(queue):
            if self.budget is None or idle or self.held + self.need(job) <= self.budget:
                return i
        return None

    def _pick(self) -> tuple[str, int] | None:
        if self.slow and (self.running["slow"] < self.limits["slow"] or not self.fast):
            i = self._fitting(self.slow)     # a slow builder may also take a slot no fast job needs
            if i is not None:
                return "slow", i
        if self.fast and self.running["fast"] < self.limits["fast"]:
            i = self._fitting(self.fast)
            if i is not None:
                return "fast", i
        return None

    def done(self, kind: str, job=None) -> None:
        with self._cond:
            self.running[kind] -= 1
            self.held -= self.need(job) if job is not None else 0
            self._cond.notify_all()
