"""Which job a free worker slot of `ways run --jobs N` takes next. A slow builder's workers (nvmath:
minutes of compiling a build; the runner says which jobs are, and how long each builds) get slots
of their own beside the N: were they
first in line for the N, the GPU would sit idle while they compile; were they last, their builds
would be the run's tail. The N slots keep the GPU fed and never hold more than N workers; a slow
builder may also take a thread no other job is waiting for."""
from __future__ import annotations

import threading


class Slots:
    def __init__(self, jobs: list, gpu_slots: int, build_slots: int, stopping=lambda: False,
                 slow=lambda job: False, build_s=lambda job: 0.0):
        """`slow(job)`: whether a job is a slow builder's; `build_s(job)`: about how long its first
        build takes (the slowest go first)."""
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
        slots; raises KeyboardInterrupt once the run is stopping."""
        with self._cond:
            while True:
                if self.stopping():
                    raise KeyboardInterrupt
                kind = self._pick()
                if kind is not None:
                    self.running[kind] += 1
                    return kind, (self.slow if kind == "slow" else self.fast).pop(0)
                self._cond.wait(timeout=1.0)

    def _pick(self) -> str | None:
        if self.slow and (self.running["slow"] < self.limits["slow"] or not self.fast):
            return "slow"                       # a slow builder may also take a slot no fast job needs
        if self.fast and self.running["fast"] < self.limits["fast"]:
            return "fast"
        return None

    def done(self, kind: str) -> None:
        with self._cond:
            self.running[kind] -= 1
            self._cond.notify_all()
