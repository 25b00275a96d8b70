"""How busy the run's cores were: /proc/stat sampled in a thread while `ways run` works (Linux; None
elsewhere). A `--jobs` run's workers, slow builders and compile processes share the cores; whether
they were oversubscribed (a build stretched by the others) or idle (the GPU lock the limit) is the
question this answers."""
from __future__ import annotations

import statistics
import threading
from pathlib import Path

STAT = Path("/proc/stat")


def _read(cores: set[int]) -> tuple[dict[int, tuple[int, int]], int] | None:
    """Per usable core (busy, total) jiffies, and the processes running or runnable now."""
    try:
        text = STAT.read_text()
    except OSError:
        return None
    per, running = {}, 0
    for line in text.splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name != "cpu" and int(name[3:]) in cores:
            ticks = [int(x) for x in fields[:8]]
            idle = ticks[3] + ticks[4]                   # idle + iowait
            per[int(name[3:])] = (sum(ticks) - idle, sum(ticks))
        elif name == "procs_running":
            running = int(fields[0])
    return per, running


class CpuLoad:
    """`with CpuLoad(cores) as load: ...`, then `load.summary()`."""

    def __init__(self, cores: list[int], every_s: float = 2.0):
        self.cores, self.every_s = set(cores), every_s
        self.busy: list[float] = []       # share of the usable cores busy, per interval
        self.runnable: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self):
        if STAT.is_file():
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _sample(self) -> None:
        last = _read(self.cores)
        while last is not None and not self._stop.wait(self.every_s):
            now = _read(self.cores)
            if now is None:
                return
            busy = sum(now[0][c][0] - last[0][c][0] for c in now[0] if c in last[0])
            total = sum(now[0][c][1] - last[0][c][1] for c in now[0] if c in last[0])
            if total > 0:
                self.busy.append(busy / total)
                self.runnable.append(now[1])
            last = now

    def summary(self) -> dict | None:
        if not self.busy:
            return None
        return {"cores": len(self.cores), "every_s": self.every_s, "samples": len(self.busy),
                "busy_mean": round(statistics.fmean(self.busy), 3),
                "busy_over_90pct_share": round(sum(b > 0.9 for b in self.busy) / len(self.busy), 3),
                "runnable_mean": round(statistics.fmean(self.runnable), 1), "runnable_max": max(self.runnable)}


def line(summary: dict) -> str:
    return (f"CPU: {summary['busy_mean']:.0%} of {summary['cores']} cores busy on average (over 90% busy "
            f"{summary['busy_over_90pct_share']:.0%} of the time), {summary['runnable_mean']:.0f} processes "
            f"runnable on average, {summary['runnable_max']} at most (machine-wide)")
