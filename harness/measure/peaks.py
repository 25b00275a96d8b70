"""The ceilings a run is judged against, on the GPU it runs on.

- measured: device-to-device copy bandwidth (bytes read + written, cold), timed like any case;
  for compute-bound problems the vendor library's row of the same run (see Problem.vendor).
- theoretical, from device attributes: memory clock x bus width x 2 (DDR), and
  SM count x max SM clock x the per-SM rate of the dtype's math unit.
Run in its own process (`python -m harness.run.worker peaks`), which also warms the GPU up.
"""
from __future__ import annotations


COPY_BYTES = 1 << 30
WARMUP_S = 3.0
# dense FLOP per clock per SM: tensor cores for 16-bit inputs (fp32 accumulate), FFMA for fp32
FLOP_PER_CLOCK_PER_SM = {
    (8, 0): {"bfloat16": 2048, "float16": 2048, "float32": 128},
    (9, 0): {"bfloat16": 4096, "float16": 4096, "float32": 256},
}


def theoretical(props: dict) -> dict:
    mem = 2 * props["memory_clock_khz"] * 1e3 * props["memory_bus_bits"] / 8
    rates = FLOP_PER_CLOCK_PER_SM.get(tuple(int(x) for x in props["compute_capability"].split(".")), {})
    flops = {dt: props["sm_count"] * props["sm_clock_khz"] * 1e3 * r for dt, r in rates.items()}
    return {"memory_bytes_per_s": mem, "flops_per_s": flops,
            "basis": f"memory clock {props['memory_clock_khz'] / 1e3:.0f} MHz x {props['memory_bus_bits']} bit x 2; "
                     f"{props['sm_count']} SMs x {props['sm_clock_khz'] / 1e3:.0f} MHz x dense rate per SM"}


def measure(device, use_nvbench: bool = True) -> dict:
    """Warm the GPU up, then time a 1 GiB device-to-device copy like any case: cold (nvbench if
    usable, else events) and sustained."""
    from harness.measure import nvbench_engine
    from harness.measure.timing import EventEngine, on_gpu
    stream = device.stream
    src = device.device.allocate(COPY_BYTES, stream=stream)
    dst = device.device.allocate(COPY_BYTES, stream=stream)
    src.fill(1, stream=stream)

    def copy():
        src.copy_to(dst, stream=stream)

    why_not = nvbench_engine.available() if use_nvbench else "nvbench runs once per process: not used here"

    def cold(run):
        if why_not is not None:
            return {**EventEngine(device).measure(run), "engine_note": why_not}
        import tempfile
        from pathlib import Path

        def fn(state):
            state.set_stream(stream)
            state.exec(lambda launch: run(), batched=False)
        with tempfile.TemporaryDirectory() as tmp:
            return nvbench_engine.run([("copy", fn)], Path(tmp) / "copy.json")["copy"]

    timing = on_gpu(device, copy, cold, "memory", warmup_s=WARMUP_S)
    return {"copy_bytes": 2 * COPY_BYTES, "copy_bytes_per_s": 2 * COPY_BYTES / (timing["device_ms_cold"] / 1e3),
            "copy_bytes_per_s_sustained": 2 * COPY_BYTES / (timing["device_ms_sustained"] / 1e3),
            "copy_timing": timing}
