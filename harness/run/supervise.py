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
import re
import selectors
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import backends
from harness import ROOT
from harness.results import records


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


def run_items(backend: str, variant: str, items: list, scratch: Path, log: Path, env: dict,
              limits: list[float], startup_timeout: float, on_event, on_lost,
              retry_after_timeout: bool = False, watch: Watch | None = None) -> None:
    """Feed `items` (JSON-able dicts) to workers until each has a record.

    `limits[i]`: seconds of item i's own work before it counts as hung; the clock stops while its
    worker waits for another process's hold of the GPU (the worker's gpu_wait / gpu_got events).
    on_event(index, event) gets every other event; on_lost(index, message, status) is called for an
    item whose worker died or hung while on it ('failed'), that was not run because an earlier one
    timed out ('skipped', unless `retry_after_timeout`), or that the worker never got to because it
    cannot start ('failed'). Each message says what happened on its first line, the log tail after.
    `watch`: the timeline shared with the other workers on this GPU (Watch).
    """
    def key(i):
        return (backend, variant, items[i]["problem"], items[i]["case"]["name"])

    pending = list(range(len(items)))
    while pending:
        _not_stopping()
        items_file = scratch / f"items-{os.getpid()}-{time.monotonic_ns()}.json"
        items_file.write_text(json.dumps([items[i] for i in pending]))
        with open(log, "a") as logf:
            logf.write(f"\n=== worker {backends.label(backend, variant)} for {len(pending)} item(s)\n")
            log_start = logf.tell()
        read_fd, write_fd = os.pipe()
        out_read, out_write = os.pipe()
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.run.worker", "run", "--backend", backend, "--variant", variant,
             "--items", str(items_file), "--fd", str(write_fd), "--scratch", str(scratch)],
            pass_fds=(write_fd,), stdout=out_write, stderr=out_write, stdin=subprocess.DEVNULL,
            start_new_session=True, env=env, cwd=ROOT)
        _RUNNING.add(proc)
        os.close(write_fd)
        os.close(out_write)
        drain = _drain(out_read, log)
        current, finished = None, set()
        deadline = time.monotonic() + startup_timeout
        last_sign = time.monotonic()        # of life: the clock's start
        left = 0.0                          # on the clock while the worker waits for the GPU
        timed_out = False
        try:
            for event in _lines(read_fd, lambda: deadline):  # noqa: B023 (reads the deadline as it moves)
                now = time.monotonic()
                if event is None:
                    if current is not None and watch is not None and watch.others_hanging(key(current)):
                        deadline = now + limits[current]      # its wait was another's hang: time again
                        continue
                    timed_out = True
                    break
                if event["event"] == "gpu_wait":          # another process has the GPU: the clock stops
                    left, deadline = max(deadline - now, 0.0), math.inf
                    continue
                if event["event"] == "gpu_got":
                    deadline, last_sign = now + left, now
                    continue
                local = event.get("item")
                index = pending[local] if local is not None else None
                if event["event"] == "start":
                    if current is not None and watch is not None:
                        watch.ended(key(current))         # nvbench: the next starts before this one's done
                    current = index
                    if watch is not None:
                        watch.began(key(index))
                elif event["event"] == "done":
                    finished.add(index)
                    if watch is not None:
                        watch.ended(key(index))
                    current = None
                on_event(index, event)
                last_sign = now
                at = index if index is not None else current if current is not None else pending[0]
                deadline = now + limits[at]
        except BaseException:
            _kill(proc)            # an interrupt of the parent: no worker outlives it
            raise
        finally:
            os.close(read_fd)
        if timed_out:
            if current is not None:
                what = f"timed out after {limits[current]:g} s of its own work"
                with watch.hanging(key(current), last_sign, what) if watch else contextlib.nullcontext():
                    _kill(proc)
            else:
                what = f"worker gave no sign of life for {startup_timeout:g} s"
                _kill(proc)
        else:
            try:
                rc = proc.wait(timeout=EXIT_GRACE_S)
            except subprocess.TimeoutExpired:      # closed its pipe but does not exit
                _kill(proc)
                rc = proc.returncode
            what = f"worker died: {_exit_text(rc)}" if rc != 0 else "worker exited (code 0) without finishing"
        drain.join(timeout=10)
        _RUNNING.discard(proc)
        _not_stopping()            # killed by kill_running: an interrupt, not a failure of the case
        rest = [i for i in pending if i not in finished]
        tail = f"\n--- worker log (tail) ---\n{_tail(log, log_start)}"
        if current is not None:
            on_lost(current, what + tail, "failed")
            rest.remove(current)
            if timed_out and not retry_after_timeout:
                name = items[current]["case"]["name"]
                for i in rest:
                    if watch is not None:
                        watch.skipped(key(i), key(current))
                    on_lost(i, f"not run: case {name} of this implementation {what} "
                               "(--retry-after-timeout runs the rest anyway)", "skipped")
                rest = []
        elif rest and not finished:      # no progress at all: do not start it again for nothing
            for i in rest:
                on_lost(i, f"{what} before reporting on this case{tail}", "failed")
            rest = []
        pending = rest


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
