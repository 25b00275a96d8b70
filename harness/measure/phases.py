"""Where a run's wall time goes: named phases, each timed exclusively (a phase entered inside
another stops the outer one's clock until it ends), summed per process. A worker sends its sums to
the parent, which adds its own phases and the workers' unaccounted time (process start, pipes)."""
from __future__ import annotations

import functools
import time
from collections import defaultdict
from contextlib import contextmanager


class Phases:
    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self._stack: list[list] = []          # [name, started] of each open phase, innermost last

    @contextmanager
    def __call__(self, name: str):
        now = time.perf_counter()
        if self._stack:
            outer = self._stack[-1]
            self.seconds[outer[0]] += now - outer[1]
        self._stack.append([name, now])
        try:
            yield
        finally:
            now = time.perf_counter()
            self.seconds[name] += now - self._stack.pop()[1]
            if self._stack:
                self._stack[-1][1] = now

    def timed(self, name: str):
        """A decorator: every call of the function counts as `name`."""
        def wrap(fn):
            @functools.wraps(fn)
            def timed_fn(*args, **kwargs):
                with self(name):
                    return fn(*args, **kwargs)
            return timed_fn
        return wrap

    def current(self) -> str:
        """The innermost open phase ("" outside any)."""
        return self._stack[-1][0] if self._stack else ""

    def so_far(self) -> dict[str, float]:
        """The sums now, the innermost open phase's running time included."""
        now = dict(self.seconds)
        if self._stack:
            name, started = self._stack[-1]
            now[name] = now.get(name, 0.0) + time.perf_counter() - started
        return now

    def busiest_since(self, before: dict[str, float], leave_out: str = "") -> str:
        """The phase that took the most time since `before` (a so_far()), `leave_out` aside."""
        now = self.so_far()
        spent = {k: v - before.get(k, 0.0) for k, v in now.items() if k != leave_out}
        best = max(spent, key=spent.get, default="")
        return best if best and spent[best] > 0 else self.current()

    def add(self, other: dict[str, float]) -> None:
        for name, seconds in other.items():
            self.seconds[name] += seconds

    def total(self) -> float:
        return sum(self.seconds.values())

    def as_dict(self) -> dict[str, float]:
        return {name: round(s, 3) for name, s in sorted(self.seconds.items(), key=lambda kv: -kv[1])}


def run_profile(run: Phases, workers: Phases, wall_s: float, overlapping: bool) -> dict[str, float]:
    """Seconds per phase of a run: the workers' own phases in place of their wall time, whatever of
    that they did not account for (process start, imports before the first phase, the event pipe),
    and the rest of the run (planning, records, GPU state) as "other". Workers that ran at once
    (`overlapping`, --jobs) keep their wall time here; their phases are reported apart."""
    profile = Phases()
    other = {"other (planning, records, GPU state)": max(0.0, wall_s - run.total())}
    if overlapping:
        profile.add({**run.seconds, **other})
        return profile.as_dict()
    profile.add({k: v for k, v in run.seconds.items() if k != "workers"})
    profile.add(workers.seconds)
    profile.add({"worker processes (start, pipe, unaccounted)": max(0.0, run.seconds["workers"] - workers.total()),
                 **other})
    return profile.as_dict()


PHASES = Phases()       # this process's
