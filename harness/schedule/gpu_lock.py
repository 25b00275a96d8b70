"""One GPU shared by several worker processes (`ways run --jobs N`): timing holds the GPU alone,
other GPU work (uploads, builds, checked calls) shares it, CPU work (inputs and float64 references,
builds that only compile) needs nothing. So the workers' CPU work overlaps the one that is timing,
and no kernel of theirs runs inside its timed window (contexts on one GPU take turns: another
process's kernel would stretch the timed one).

A readers-writer lock on two files (flock): the timer takes the turnstile, then the GPU, both
exclusively; other GPU work passes the turnstile, then shares the GPU. New sharers wait at the
turnstile while a timer waits, so timing is never starved; a sharer already in lets a waiting timer
go first at its next step's end (`let_timers_in`), not only at the end of its whole section.
WAYS_GPU_LOCK names the GPU file; unset, every method is a no-op (one worker at a time needs no lock).

The GPU alone is not enough where a timed call is bound by its launches (the sustained mode of a
short kernel): with more processes than cores the timer's thread gets part of a core, and the
figure stretches (JAX's Mosaic 4096^3 GEMM back to back: 0.68 ms in a two-lane `--jobs 8` run on
32 cores, 0.35 ms in a serial run). So a core is kept for timing: WAYS_TIMING_CORES lists the run's
timing cores, which no worker (nor what it starts) runs on, and WAYS_TIMING_CORE names this
process's: a timer may use it as long as it holds the GPU."""
from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager

from harness.measure.phases import PHASES

LOCK_VAR = "WAYS_GPU_LOCK"
CORES_VAR, CORE_VAR = "WAYS_TIMING_CORES", "WAYS_TIMING_CORE"
WAIT_PHASE = "waiting for the GPU (other workers)"
NONE, SHARED, EXCLUSIVE = 0, 1, 2
HOLDS_SUFFIX = ".holds.jsonl"


class GpuLock:
    def __init__(self, path: str | None):
        self.path = path
        self._gpu = self._turn = None
        self._held = [NONE]           # the mode of each open context, innermost last
        self._cores: set[int] | None = None     # where this process runs, the timing cores left out
        self._timing_core: int | None = None
        self.label = ""                 # what this process works on (the worker sets it per item)
        self._hold_started: dict | None = None
        self._phases_at_got: dict[str, float] = {}
        self._niceness: tuple[int, int] | None = None     # (outside holds, inside): nice_outside_holds
        # called with True when this process starts waiting for another's hold, False once it has the
        # GPU: a worker tells its supervisor, whose clock for the case stops while it waits
        self.on_wait = lambda waiting: None

    def nice_outside_holds(self, niceness: int) -> None:
        """Lower this process's CPU priority by `niceness` except while it holds the GPU. A niced
        holder that busier processes keep off the cores keeps a waiting timer waiting (priority
        inversion); so where this process may not raise its priority again (neither root nor
        RLIMIT_NICE allows it), it is not niced at all."""
        if self.path is None or niceness <= 0 or not hasattr(os, "setpriority"):
            return
        base = os.getpriority(os.PRIO_PROCESS, 0)
        import resource
        if not (os.geteuid() == 0 or 20 - resource.getrlimit(resource.RLIMIT_NICE)[0] <= base):
            return
        self._niceness = (base + niceness, base)
        _set_niceness(self._niceness[0])

    def keep_timing_cores_free(self) -> None:
        """At a worker's start: leave the run's timing cores (WAYS_TIMING_CORES) to timers; this
        process's own (WAYS_TIMING_CORE) it takes while it holds the GPU alone."""
        reserved = {int(c) for c in os.environ.get(CORES_VAR, "").split(",") if c}
        if self.path is None or not reserved or not hasattr(os, "sched_setaffinity"):
            return
        cores = os.sched_getaffinity(0) - reserved
        if not cores:
            return
        self._cores = cores
        own = os.environ.get(CORE_VAR)
        self._timing_core = int(own) if own else None
        _set_affinity(cores)

    @property
    def mode(self) -> int:
        return self._held[-1]

    def shared(self):
        """GPU work that other processes' non-timing work may interleave with."""
        return self._hold(max(self.mode, SHARED))

    def exclusive(self):
        """Timing: no other process touches the GPU until it ends."""
        return self._hold(EXCLUSIVE)

    def let_timers_in(self, sync=lambda: None) -> None:
        """Between the GPU steps of a shared section (an upload, a build, a call, a download): where a
        timer waits, finish this process's GPU work (`sync`) and let the timer have the GPU now rather
        than when the whole section ends; this process then queues behind it at the turnstile. A
        no-op outside a shared section or with no timer waiting."""
        if self.path is None or self.mode != SHARED or not self._timer_waiting():
            return
        sync()
        with self.released():
            pass

    def _timer_waiting(self) -> bool:
        """A timer holds the turnstile from asking until it is done (gpu_lock's protocol)."""
        try:
            fcntl.flock(self._turn, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(self._turn, fcntl.LOCK_UN)
        return False

    def released(self):
        """CPU work inside a shared section: let a waiting timer have the GPU meanwhile. Inside an
        exclusive section it keeps the GPU (the timed window must not be split)."""
        return self._hold(EXCLUSIVE if self.mode == EXCLUSIVE else NONE)

    @contextmanager
    def _hold(self, mode: int):
        before = self.mode
        self._set(before, mode)
        self._held.append(mode)
        try:
            yield
        finally:
            self._held.pop()
            self._set(mode, before)

    def _set(self, old: int, new: int) -> None:
        if self.path is None or old == new:
            return
        if self._gpu is None:
            self._gpu = open(self.path, "a")                          # noqa: SIM115 (kept for the process)
            self._turn = open(self.path + ".turnstile", "a")          # noqa: SIM115
        if old != NONE:
            self._log_hold()
        if old == EXCLUSIVE:
            if self._timing_core is not None:
                _set_affinity(self._cores)
            fcntl.flock(self._gpu, fcntl.LOCK_UN)
            fcntl.flock(self._turn, fcntl.LOCK_UN)
        elif old == SHARED:
            fcntl.flock(self._gpu, fcntl.LOCK_UN)     # before the turnstile: a waiting timer may hold it
        asked, doing = time.time(), PHASES.current()
        if new == EXCLUSIVE:
            with PHASES(WAIT_PHASE), self._waiting() as take:
                take(self._turn, fcntl.LOCK_EX)
                take(self._gpu, fcntl.LOCK_EX)
            if self._timing_core is not None:      # an idle core beside the others: the scheduler moves it there
                _set_affinity(self._cores | {self._timing_core})
        elif new == SHARED:
            with PHASES(WAIT_PHASE), self._waiting() as take:
                take(self._turn, fcntl.LOCK_SH)
                take(self._gpu, fcntl.LOCK_SH)
                fcntl.flock(self._turn, fcntl.LOCK_UN)
        if self._niceness is not None and (old == NONE) != (new == NONE):
            _set_niceness(self._niceness[new != NONE])
        if new != NONE:
            self._phases_at_got = PHASES.so_far()
            self._hold_started = {"pid": os.getpid(), "who": self.label, "asked_in": doing,
                                  "mode": "exclusive" if new == EXCLUSIVE else "shared",
                                  "asked": round(asked, 4), "got": round(time.time(), 4)}

    @contextmanager
    def _waiting(self):
        """A `take(file, mode)` that flocks without blocking where it can; where it must block, on_wait
        hears of it (once), and again when the GPU is had."""
        blocked = []

        def take(f, how):
            try:
                fcntl.flock(f, how | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            if not blocked:
                blocked.append(True)
                self.on_wait(True)
            fcntl.flock(f, how)
        try:
            yield take
        finally:
            if blocked:
                self.on_wait(False)

    def _log_hold(self) -> None:
        """One line per hold, appended in one write (atomic beside the other workers' lines)."""
        if self._hold_started is None:
            return
        # what the hold was for: the phase that took most of it (the phase current when it was asked
        # for is often the one just ending, e.g. the float64 references before an upload and a build)
        held, since = self._hold_started, self._phases_at_got
        line = json.dumps({**held, "doing": PHASES.busiest_since(since, leave_out=WAIT_PHASE),
                           "released": round(time.time(), 4)}) + "\n"
        self._hold_started = None
        fd = os.open(self.path + HOLDS_SUFFIX, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


def _threads() -> list[int]:
    """This process's threads (a tool's own too; Linux), else the calling one."""
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


def _set_affinity(cores: set[int]) -> None:
    """Every thread of this process on `cores`."""
    for tid in _threads():
        try:
            os.sched_setaffinity(tid, cores)
        except OSError:            # a thread that ended meanwhile
            pass


def _set_niceness(value: int) -> None:
    """Every thread of this process at nice `value` (on Linux a thread's own)."""
    for tid in _threads():
        try:
            os.setpriority(os.PRIO_PROCESS, tid, value)
        except OSError:
            pass


def timing_cores_for(lanes: int) -> list[tuple[str, str] | None]:
    """Per lane: (every lane's timing core, its own), the last usable cores, as this module's
    environment wants them; None where too few cores are left to give each lane one."""
    from harness.measure.env import usable_core_ids
    usable = usable_core_ids()
    if len(usable) < 4 * lanes:
        return [None] * lanes
    kept = usable[-lanes:]
    return [(",".join(map(str, kept)), str(core)) for core in kept]


LOCK = GpuLock(os.environ.get(LOCK_VAR))       # this process's; the runner sets the variable for its workers
