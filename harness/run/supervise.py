"""Run a worker process and read its JSON-line events with deadlines: a crash or hang in one item
becomes a 'failed' record for that item and the worker is started again for the rest (after a
hang, the rest are skipped unless asked otherwise: one hang costs one time limit). A case's clock
counts its own work, not its waits for another worker's hold of the GPU; with several workers on
one GPU, the Watch tells which cases were in flight beside a hang. A worker's output
goes to its log through a capped drain, and a worker left running by an interrupt is killed."""
from __future__ import annotations

import contextlib
import json
import math
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import backends
from harness import ROOT
from harness.run.judged_again import Watch


def worker_env(extra: dict[str, str], search_paths: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a worker: ours, with `extra` set and each `search_paths` entry put in
    front of its path list (PATH, PYTHONPATH); the lab's root comes first on PYTHONPATH."""
    env = dict(os.environ)
    for var, entry in (search_paths or {}).items():
        env[var] = os.pathsep.join([entry] + [p for p in env.get(var, "").split(os.pathsep) if p])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def _lines(fd: int, deadline_of):
    """Yield decoded JSON events from fd; yield None each time the deadline passes first (the caller
    stops, or moves the deadline and reads on). A deadline of inf waits as long as it takes."""
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    buf = b""
    try:
        while True:
            wait = deadline_of() - time.monotonic()
            if wait <= 0 or not sel.select(timeout=None if wait == math.inf else wait):
                yield None
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return
            buf += chunk
            *complete, buf = buf.split(b"\n")
            for line in complete:
                if line.strip():
                    yield json.loads(line)
    finally:
        sel.close()


_RUNNING: set[subprocess.Popen] = set()      # workers being waited on, from any thread
_STOP = threading.Event()                   # set by kill_running: start no more workers


def kill_running() -> None:
    """Kill every worker being waited on and start no more (the threads waiting on them get a
    KeyboardInterrupt): an interrupted run leaves none behind."""
    _STOP.set()
    for proc in list(_RUNNING):
        if proc.poll() is None:
            _kill(proc)


def stopping() -> bool:
    """Whether kill_running() was called: the run is being interrupted."""
    return _STOP.is_set()


def in_threads(n: int, fn, argses: list[tuple]):
    """fn(*args) for each of `argses`, `n` at a time from threads, yielding the results in order.
    Ctrl-C (or the caller stopping early) starts nothing more and kills the workers that run."""
    pool = ThreadPoolExecutor(n)
    try:
        for future in [pool.submit(fn, *args) for args in argses]:
            yield future.result()
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        kill_running()
        raise
    pool.shutdown()


@contextlib.contextmanager
def interrupts_held():
    """Ctrl-C or SIGTERM while the block runs (writing a run's summary) is held until it ends, then
    raised: a run stopped just as it finished still leaves its results.json. Main thread only
    (signal handlers are); elsewhere the block runs as is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    before = {sig: signal.signal(sig, lambda signum, frame: caught.append(signum))
              for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    if caught:
        raise KeyboardInterrupt


def _not_stopping() -> None:
    if _STOP.is_set():
        raise KeyboardInterrupt


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


EXIT_GRACE_S = 60.0             # a worker that closed its event pipe gets this long to exit
LOG_CAP_BYTES = 16 << 20       # per worker: a worker printing without end neither blocks nor fills the disk


def _drain(fd: int, log: Path, cap: int = LOG_CAP_BYTES) -> threading.Thread:
    """Copy what a worker writes to `fd` into `log`, up to `cap` bytes, then count what is dropped."""
    def copy():
        kept = dropped = 0
        with open(log, "ab") as f, os.fdopen(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(1 << 16):
                room = max(cap - kept, 0)
                f.write(chunk[:room])
                f.flush()
                kept += min(room, len(chunk))
                dropped += max(len(chunk) - room, 0)
            if dropped:
                f.write(f"\n[ways: {dropped} more bytes of output dropped after {cap >> 20} MiB]\n".encode())
    thread = threading.Thread(target=copy, daemon=True)
    thread.start()
    return thread


def _tail(path: Path, start: int = 0, n: int = 3000) -> str:
    """The last n characters the log got since byte `start` (this worker's part of it)."""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            return f.read().decode(errors="replace")[-n:]
    except OSError:
        return ""


def _exit_text(rc: int) -> str:
    """'SIGSEGV' for a worker killed by a signal, 'exit code N' otherwise."""
    if rc < 0:
        try:
            return signal.Signals(-rc).name
        except ValueError:
            return f"signal {-rc}"
    return f"exit code {rc}"


@dataclass
class WorkerItems:
    """One implementation's items for its workers: `items` (JSON-able dicts), `limits[i]` the seconds
    of item i's own work before it counts as hung (the clock stops while its worker waits for
    another process's hold of the GPU: the gpu_wait / gpu_got events); `watch`, the timeline
    shared with the other workers on this GPU (Watch)."""
    backend: str
    variant: str
    items: list
    limits: list[float]
    scratch: Path
    log: Path
    env: dict
    startup_timeout: float
    retry_after_timeout: bool = False
    watch: Watch | None = None

    def key(self, i: int) -> tuple:
        return (self.backend, self.variant, self.items[i]["problem"], self.items[i]["case"]["name"])


@dataclass
class _Worker:
    """A started worker process: its event pipe, its output's drain into the log, where its part of
    the log starts; and what following it found (the item it was on, those it finished)."""
    proc: subprocess.Popen
    events: int
    drain: threading.Thread
    log_start: int
    current: int | None = None
    finished: set = field(default_factory=set)
    timed_out: bool = False
    last_sign: float = 0.0


def run_items(job: WorkerItems, on_event, on_lost) -> None:
    """Feed job.items to workers until each has a record.

    on_event(index, event) gets every event but the GPU-wait ones; on_lost(index, message, status)
    is called for an item whose worker died or hung while on it ('failed'), that was not run because
    an earlier one timed out ('skipped', unless job.retry_after_timeout), or that the worker never
    got to because it cannot start ('failed'). Each message says what happened on its first line,
    the log tail after.
    """
    pending = list(range(len(job.items)))
    while pending:
        _not_stopping()
        worker = _start(job, pending)
        try:
            _follow(job, worker, pending, on_event)
        except BaseException:
            _kill(worker.proc)            # an interrupt of the parent: no worker outlives it
            raise
        finally:
            os.close(worker.events)
        what = _stop(job, worker)
        _not_stopping()            # killed by kill_running: an interrupt, not a failure of the case
        pending = _left(job, worker, pending, what, on_lost)


def _start(job: WorkerItems, pending: list[int]) -> _Worker:
    """A worker process for the pending items, its events on a pipe, its output drained to the log."""
    items_file = job.scratch / f"items-{os.getpid()}-{time.monotonic_ns()}.json"
    items_file.write_text(json.dumps([job.items[i] for i in pending]))
    with open(job.log, "a") as logf:
        logf.write(f"\n=== worker {backends.label(job.backend, job.variant)} for {len(pending)} item(s)\n")
        log_start = logf.tell()
    read_fd, write_fd = os.pipe()
    out_read, out_write = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.run.worker", "run", "--backend", job.backend, "--variant", job.variant,
         "--items", str(items_file), "--fd", str(write_fd), "--scratch", str(job.scratch)],
        pass_fds=(write_fd,), stdout=out_write, stderr=out_write, stdin=subprocess.DEVNULL,
        start_new_session=True, env=job.env, cwd=ROOT)
    _RUNNING.add(proc)
    os.close(write_fd)
    os.close(out_write)
    return _Worker(proc, read_fd, _drain(out_read, job.log), log_start, last_sign=time.monotonic())


def _follow(job: WorkerItems, w: _Worker, pending: list[int], on_event) -> None:
    """Read the worker's events until its pipe closes or its clock runs out (w.timed_out): each
    item's clock restarts at each sign of life and stops while the worker waits for the GPU."""
    watch = job.watch
    deadline = time.monotonic() + job.startup_timeout
    left = 0.0                          # on the clock while the worker waits for the GPU
    for event in _lines(w.events, lambda: deadline):  # noqa: B023 (reads the deadline as it moves)
        now = time.monotonic()
        if event is None:
            if w.current is not None and watch is not None and watch.others_hanging(job.key(w.current)):
                deadline = now + job.limits[w.current]      # its wait was another's hang: time again
                continue
            w.timed_out = True
            return
        if event["event"] == "gpu_wait":          # another process has the GPU: the clock stops
            left, deadline = max(deadline - now, 0.0), math.inf
            continue
        if event["event"] == "gpu_got":
            deadline, w.last_sign = now + left, now
            continue
        local = event.get("item")
        index = pending[local] if local is not None else None
        if event["event"] == "start":
            if w.current is not None and watch is not None:
                watch.ended(job.key(w.current))         # nvbench: the next starts before this one's done
            w.current = index
            if watch is not None:
                watch.began(job.key(index))
        elif event["event"] == "done":
            w.finished.add(index)
            if watch is not None:
                watch.ended(job.key(index))
            w.current = None
        on_event(index, event)
        w.last_sign = now
        at = index if index is not None else w.current if w.current is not None else pending[0]
        deadline = now + job.limits[at]


def _stop(job: WorkerItems, w: _Worker) -> str:
    """The worker ended (killed where it hung): what happened to it, in words."""
    if w.timed_out:
        if w.current is not None:
            what = f"timed out after {job.limits[w.current]:g} s of its own work"
            hanging = job.watch.hanging(job.key(w.current), w.last_sign, what) if job.watch \
                else contextlib.nullcontext()
            with hanging:
                _kill(w.proc)
        else:
            what = f"worker gave no sign of life for {job.startup_timeout:g} s"
            _kill(w.proc)
    else:
        try:
            rc = w.proc.wait(timeout=EXIT_GRACE_S)
        except subprocess.TimeoutExpired:      # closed its pipe but does not exit
            _kill(w.proc)
            rc = w.proc.returncode
        what = f"worker died: {_exit_text(rc)}" if rc != 0 else "worker exited (code 0) without finishing"
    w.drain.join(timeout=10)
    _RUNNING.discard(w.proc)
    return what


def _left(job: WorkerItems, w: _Worker, pending: list[int], what: str, on_lost) -> list[int]:
    """The items a next worker is started for: the unfinished ones, less the one the worker died or
    hung on and, after a hang, the rest (skipped); none where the worker made no progress at all."""
    rest = [i for i in pending if i not in w.finished]
    tail = f"\n--- worker log (tail) ---\n{_tail(job.log, w.log_start)}"
    if w.current is not None:
        on_lost(w.current, what + tail, "failed")
        rest.remove(w.current)
        if w.timed_out and not job.retry_after_timeout:
            name = job.items[w.current]["case"]["name"]
            for i in rest:
                if job.watch is not None:
                    job.watch.skipped(job.key(i), job.key(w.current))
                on_lost(i, f"not run: case {name} of this implementation {what} "
                           "(--retry-after-timeout runs the rest anyway)", "skipped")
            return []
    elif rest and not w.finished:      # no progress at all: do not start it again for nothing
        for i in rest:
            on_lost(i, f"{what} before reporting on this case{tail}", "failed")
        return []
    return rest


def run_json(cmd_args: list[str], env: dict, timeout: float, log: Path) -> dict:
    """Run `python -m harness.run.worker ...` that prints one JSON line; return it or raise RuntimeError
    whose first line says what happened."""
    _not_stopping()
    with open(log, "a") as logf:
        log_start = logf.tell()
    err_read, err_write = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "harness.run.worker", *cmd_args], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=err_write, stdin=subprocess.DEVNULL,
                            start_new_session=True, text=True)
    _RUNNING.add(proc)
    os.close(err_write)
    drain = _drain(err_read, log)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"timed out after {timeout:g} s") from None
    finally:
        if proc.poll() is None:
            _kill(proc)
        _RUNNING.discard(proc)
        drain.join(timeout=10)
    if proc.returncode != 0:
        raise RuntimeError(f"worker died: {_exit_text(proc.returncode)}\n{_tail(log, log_start)}")
    lines = out.strip().splitlines()
    if not lines:
        raise RuntimeError(f"the worker printed no result\n{_tail(log, log_start)}")
    return json.loads(lines[-1])
