"""Run a worker process and read its JSON-line events with deadlines: a crash or hang in one item
becomes a 'failed' record for that item and the worker is started again for the rest."""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
    """Yield decoded JSON events from fd; yield None when the deadline passes first."""
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    buf = b""
    try:
        while True:
            wait = deadline_of() - time.monotonic()
            if wait <= 0 or not sel.select(timeout=wait):
                yield None
                return
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


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _tail(path: Path, start: int = 0, n: int = 3000) -> str:
    """The last n characters the log got since byte `start` (this worker's part of it)."""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            return f.read().decode(errors="replace")[-n:]
    except OSError:
        return ""


def _exit_text(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit code {rc}"


def run_items(backend: str, variant: str, items: list, scratch: Path, log: Path, env: dict,
              item_timeout: float, startup_timeout: float, on_event, on_lost) -> None:
    """Feed `items` (JSON-able dicts) to workers until each has a record.

    on_event(index, event) gets every event; on_lost(index, message) is called for an item whose
    worker died or hung while on it, or never got to it because the worker cannot start.
    """
    pending = list(range(len(items)))
    while pending:
        items_file = scratch / f"items-{os.getpid()}-{time.monotonic_ns()}.json"
        items_file.write_text(json.dumps([items[i] for i in pending]))
        read_fd, write_fd = os.pipe()
        with open(log, "a") as logf:
            logf.write(f"\n=== worker {backend}[{variant}] for {len(pending)} item(s)\n")
            logf.flush()
            log_start = logf.tell()
            proc = subprocess.Popen(
                [sys.executable, "-m", "harness.worker", "run", "--backend", backend, "--variant", variant,
                 "--items", str(items_file), "--fd", str(write_fd), "--scratch", str(scratch)],
                pass_fds=(write_fd,), stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, env=env, cwd=ROOT)
        os.close(write_fd)
        current, finished = None, set()
        deadline = time.monotonic() + startup_timeout
        timed_out = False
        for event in _lines(read_fd, lambda: deadline):  # noqa: B023 (reads the deadline as it moves)
            if event is None:
                timed_out = True
                break
            local = event.get("item")
            index = pending[local] if local is not None else None
            if event["event"] == "start":
                current = index
            elif event["event"] == "done":
                finished.add(index)
                current = None
            on_event(index, event)
            deadline = time.monotonic() + item_timeout
        os.close(read_fd)
        if timed_out:
            _kill(proc)
            what = f"timed out after {item_timeout:g} s" if current is not None else \
                f"worker gave no sign of life for {startup_timeout:g} s"
        else:
            rc = proc.wait()
            what = f"worker died ({_exit_text(rc)})"
        rest = [i for i in pending if i not in finished]
        if current is not None:
            on_lost(current, f"{what}\n--- worker log (tail) ---\n{_tail(log, log_start)}")
            rest.remove(current)
        elif rest and not finished:      # no progress at all: do not start it again for nothing
            for i in rest:
                on_lost(i, f"{what} before reporting on this case\n--- worker log (tail) ---\n"
                           f"{_tail(log, log_start)}")
            rest = []
        pending = rest


def run_json(cmd_args: list[str], env: dict, timeout: float, log: Path) -> dict:
    """Run `python -m harness.worker ...` that prints one JSON line; return it or raise RuntimeError."""
    with open(log, "a") as logf:
        log_start = logf.tell()
        proc = subprocess.Popen([sys.executable, "-m", "harness.worker", *cmd_args], env=env, cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=logf, stdin=subprocess.DEVNULL,
                                start_new_session=True, text=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise RuntimeError(f"timed out after {timeout:g} s") from None
    if proc.returncode != 0:
        raise RuntimeError(f"{_exit_text(proc.returncode)}\n{_tail(log, log_start)}")
    return json.loads(out.strip().splitlines()[-1])
