"""Cold samples behind a GPU-side wait of fixed length: no row's figure depends on how long its tool
takes on the host, since every sample starts after the same idle, whatever the tool's dispatch.

Works as follows, per sample:
1. The L2 is flushed (a memset of twice its size) on the worker's stream.
2. A gate kernel (one thread sleeping on the GPU's own clock, `%globaltimer`) holds the stream for
   GATE_S: the GPU idles as it does between an application's calls, for as long before every sample.
3. The start event, the tool's call and the stop event are queued behind the gate, so the tool's
   dispatch runs on the host while the gate holds, and the call starts the moment the gate ends.
4. If the start event has fired by the time the call returns on the host, the gate ended before the
   call was queued: that sample was exposed to the host (its time may hold an idle GPU). It is
   dropped and counted (`exposed`). A tool that waits for the GPU inside its call (so nothing of it
   can queue behind a gate) has most samples exposed: its row keeps them all and says so
   (`host_exposed`), its figure then holding its host's gaps as before.
5. NVML's SM clock and board power are read after each sample; their means go with the samples, and
   `cycles` (median time x mean clock) is the per-cycle figure beside the time.
6. Sampling stops once the median is precise (stopping.done) and the samples no longer drift: a lead
   whose median is apart from the later samples' (the GPU settling from the sustained window's power
   limit) is dropped and counted (`settling_dropped`), so every row's figure is the loop's own state.

Constraints: the gate hides a dispatch of up to GATE_S (the slowest measured, JAX's Mosaic GPU
attention, left the GPU idle 0.92 ms a sample); the host's own wake-up after each sample (the harness's
code, the same for every tool) comes on top of it.
"""
from __future__ import annotations

import os
import statistics
import time

import numpy as np

from harness.measure.stopping import Criterion, done, summarize
from harness.measure.timing import THROTTLE_FRACTION, EventEngine

GATE_S = 2e-3
GATE_SLEEP_NS = 10_000       # the gate thread's nap between clock reads
GATE_SOURCE = r"""
extern "C" __global__ void gate(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(NAP_NS);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
"""
ENGINE_VAR = "WAYS_COLD_ENGINE"   # "gated" (the default), or "nvbench" / "events": the cold loops without a gate


def cold_engine() -> str:
    """Which engine times the cold samples: the gated events (like for like), nvbench's cold loop or
    plain events (each sample launched as soon as the host gets to it: a slow host rests the GPU)."""
    return os.environ.get(ENGINE_VAR, "gated")


MOSTLY_EXPOSED = 0.5          # a row whose exposed samples exceed this share is host-exposed


class GatedEngine(EventEngine):
    """EventEngine's events, flush and clock on the worker's stream, each cold sample behind the gate."""
    ENGINE = "gated-events"

    def __init__(self, device, crit: Criterion | None = None, gate_s: float = GATE_S):
        from cuda.core import LaunchConfig, Program, ProgramOptions
        super().__init__(device, crit)
        major, minor = self.dev.compute_capability
        options = ProgramOptions(arch=f"sm_{major}{minor}", define_macro=f"NAP_NS={GATE_SLEEP_NS}")
        self.gate = Program(GATE_SOURCE, "c++", options).compile("cubin").get_kernel("gate")
        self.one_thread = LaunchConfig(grid=1, block=1)
        self.gate_s = gate_s

    def hold(self, seconds: float) -> None:
        """A GPU-side wait of `seconds` queued on the stream: what follows starts when it ends."""
        from cuda.core import launch
        launch(self.stream, self.one_thread, self.gate, np.uint64(round(seconds * 1e9)))

    def _untimed(self, run) -> None:
        self.flush.fill(0, stream=self.stream)
        self.hold(self.gate_s)
        run()
        self.stream.sync()

    def _sample(self, run) -> tuple[float, bool]:
        """One sample: (ms, whether it was exposed to the host)."""
        self.flush.fill(0, stream=self.stream)
        self.hold(self.gate_s)
        self.stream.record(self.start)
        run()
        exposed = self.start.is_done
        self.stream.record(self.stop)
        self.stop.sync()
        return self.stop - self.start, exposed

    def cold(self, run, crit: Criterion | None = None) -> dict:
        crit = crit or self.crit
        run()                                        # lazy loading, first-call JIT
        samples, clocks, watts, exposed_samples, settling = [], [], [], [], []
        throttled = 0

        def drop(lead):                          # the GPU still settling: not the loop's own state
            settling.append(lead)
            del samples[:lead], clocks[:lead], watts[:lead]
        started, stop = time.perf_counter(), None
        while stop is None:
            ms, was_exposed = self._sample(run)
            mhz, w = self.clock.read(), self.clock.power_w()
            if was_exposed:
                exposed_samples.append(ms / 1e3)
            elif mhz is not None and mhz < THROTTLE_FRACTION * self.clock.max_mhz:
                throttled += 1
                time.sleep(0.05)
            else:
                samples.append(ms / 1e3)
                clocks += [mhz] if mhz is not None else []
                watts += [w] if w is not None else []
            stop = done(samples, crit, started, drop) if samples else (
                "timeout" if time.perf_counter() - started > crit.timeout_s else None)
        exposed = len(exposed_samples)
        host_exposed = exposed > MOSTLY_EXPOSED * (exposed + len(samples) + throttled)
        if host_exposed:
            samples += exposed_samples
        s = summarize(samples)
        mhz = statistics.fmean(clocks) if clocks and samples else None
        s.update(stopped_by=stop, throttled_dropped=throttled, settling_dropped=sum(settling),
                 exposed=exposed, host_exposed=host_exposed,
                 gate_ms=self.gate_s * 1e3,
                 walltime_s=time.perf_counter() - started, sm_clock_mhz=mhz,
                 power_w=statistics.fmean(watts) if watts and samples else None,
                 cycles=s["median_ms"] * 1e3 * mhz if mhz else None)
        return s
