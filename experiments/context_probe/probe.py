"""Does another process opening a CUDA context (what a worker or a compile-time process
does at its start, under the GPU lock's shared mode) stretch a kernel being timed? Times one kernel
with CUDA events, call after call, in phases without and with other processes opening contexts
(cuda.core: Device().set_current(), a stream, as harness/measure/device.py does), quiet and busy
alternating so that drift shows; prints the distributions of both and how long the openings took.

    python -m experiments.context_probe.probe [--n 268435456] [--seconds 5] [--openers 6] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time

OPEN = ("import time; t0 = time.perf_counter()\n"
        "from cuda.core import Device\n"
        "t1 = time.perf_counter(); d = Device(); d.set_current(); s = d.create_stream(); d.sync()\n"
        "print(time.perf_counter() - t1)\n")


def open_contexts(stop: threading.Event, seconds: list[float]) -> None:
    """Fresh processes, one after another, each opening a context and a stream, until `stop`."""
    while not stop.is_set():
        done = subprocess.run([sys.executable, "-c", OPEN], capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip():
            seconds.append(float(done.stdout.split()[-1]))


def sample(run, start, stop, stream, seconds: float) -> list[float]:
    """Milliseconds of single calls, each between two events, for `seconds`."""
    out, t0 = [], time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        stream.record(start)
        run()
        stream.record(stop)
        stop.sync()
        out.append(stop - start)
    return out


def summary(ms: list[float]) -> dict:
    q = statistics.quantiles(ms, n=100)
    return {"samples": len(ms), "median_ms": statistics.median(ms), "p90_ms": q[89], "p99_ms": q[98],
            "max_ms": max(ms)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 28, help="elements of the timed float32 copy-and-scale")
    ap.add_argument("--seconds", type=float, default=5.0, help="each phase")
    ap.add_argument("--openers", type=int, default=6, help="processes opening contexts at once while busy")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    import cupy as cp
    from cuda.core import Device, EventOptions
    dev = Device()
    dev.set_current()
    stream = dev.create_stream()
    ext = cp.cuda.ExternalStream(int(stream.handle))
    with ext:
        x = cp.ones(args.n, dtype=cp.float32)
        y = cp.empty_like(x)

    def run():
        with ext:
            cp.multiply(x, 2.0, out=y)
    opts = EventOptions(timing_enabled=True)
    start, stop = dev.create_event(opts), dev.create_event(opts)
    sample(run, start, stop, stream, 1.0)              # warm-up
    phases, opened = [], []
    for busy in (False, True, False, True):
        halt, threads = threading.Event(), []
        if busy:
            threads = [threading.Thread(target=open_contexts, args=(halt, opened)) for _ in range(args.openers)]
            for t in threads:
                t.start()
        ms = sample(run, start, stop, stream, args.seconds)
        halt.set()
        for t in threads:
            t.join()
        phases.append({"busy": busy, **summary(ms)})
    result = {"kernel": f"float32 y = 2x, n = {args.n}", "openers": args.openers, "phases": phases,
              "contexts_opened": len(opened),
              "open_s": {"median": statistics.median(opened), "max": max(opened)} if opened else None}
    for p in phases:
        print(f"{'busy ' if p['busy'] else 'quiet'}  {p['samples']:6d} samples  median {p['median_ms']:.4f} ms"
              f"  p90 {p['p90_ms']:.4f}  p99 {p['p99_ms']:.4f}  max {p['max_ms']:.4f}")
    print(f"contexts opened while busy: {len(opened)}; opening took {result['open_s']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
