"""The ceilings a run is judged against, on the GPU it runs on.

- measured, timed like any case: for memory-bound problems the ceiling of their access pattern
  (Problem.ceiling): a device-to-device copy (bytes read + written) or a read stream (bytes read);
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


# A read stream: every thread keeps READ_LOADS 16-byte loads in flight, a full SM's threads; the sum
# is stored only if it takes a value the filled input never gives, so no load is optimised away.
READ_SOURCE = r"""
extern "C" __global__ void read_stream(const float4* __restrict__ x, unsigned long long n4, float* out) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.f;
  for (; i + 3 * stride < n4; i += 4 * stride) {
    float4 a = __ldg(x + i), b = __ldg(x + i + stride), c = __ldg(x + i + 2 * stride), d = __ldg(x + i + 3 * stride);
    acc += (a.x + a.y + a.z + a.w) + (b.x + b.y + b.z + b.w) + (c.x + c.y + c.z + c.w) + (d.x + d.y + d.z + d.w);
  }
  for (; i < n4; i += stride) { float4 a = __ldg(x + i); acc += a.x + a.y + a.z + a.w; }
  if (acc == -1.f) out[0] = acc;
}
"""
READ_BLOCK, READ_LOADS, THREADS_PER_SM = 256, 4, 2048
FLOAT4_BYTES = 16


def ceilings(device) -> dict:
    """The memory-bound ceilings, each a call on `device`'s stream and the bytes it moves: `copy`, a
    1 GiB device-to-device copy (read + write, as an elementwise kernel); `read`, a 1 GiB read stream
    (a reduction's pattern: its few outputs are no traffic)."""
    import numpy as np
    from cuda.core import LaunchConfig, Program, ProgramOptions, launch
    stream = device.stream
    src = device.device.allocate(COPY_BYTES, stream=stream)
    dst = device.device.allocate(COPY_BYTES, stream=stream)
    src.fill(1, stream=stream)
    major, minor = device.device.compute_capability
    kernel = Program(READ_SOURCE, "c++", ProgramOptions(arch=f"sm_{major}{minor}")).compile("cubin") \
        .get_kernel("read_stream")
    sink = device.device.allocate(4, stream=stream)
    blocks = device.device.properties.multiprocessor_count * THREADS_PER_SM // READ_BLOCK
    config = LaunchConfig(grid=blocks, block=READ_BLOCK)

    def copy():
        src.copy_to(dst, stream=stream)

    def read():
        launch(stream, config, kernel, src, np.uint64(COPY_BYTES // FLOAT4_BYTES), sink)

    return {"copy": (copy, 2 * COPY_BYTES), "read": (read, COPY_BYTES), "_keep": (src, dst, sink)}


def measure(device, use_nvbench: bool = True) -> dict:
    """Warm the GPU up, then time each ceiling like any case: sustained, then cold (nvbench if usable,
    else events; nvbench runs once per process, so both ceilings in one run of it)."""
    from harness.measure import nvbench_engine
    from harness.measure.timing import EventEngine, on_gpu
    found = ceilings(device)
    kept = found.pop("_keep")          # noqa: F841 (the buffers live as long as the calls)
    why_not = nvbench_engine.available() if use_nvbench else "nvbench runs once per process: not used here"
    timings = {}
    for k, (name, (run, _)) in enumerate(found.items()):
        timings[name] = on_gpu(device, run, lambda run: {}, "memory", warmup_s=WARMUP_S if k == 0 else WARMUP_S / 4)
    if why_not is None:
        import tempfile
        from pathlib import Path

        def bench(run):
            def fn(state):
                state.set_stream(device.stream)
                state.exec(lambda launch: run(), batched=False)
            return fn
        with tempfile.TemporaryDirectory() as tmp:
            cold = nvbench_engine.run([(name, bench(run)) for name, (run, _) in found.items()],
                                      Path(tmp) / "peaks.json")
    else:
        cold = {name: {**EventEngine(device).measure(run), "engine_note": why_not} for name, (run, _) in found.items()}
    out = {}
    for name, (_, nbytes) in found.items():
        t = {**timings[name], **cold[name]}
        out.update({f"{name}_bytes": nbytes, f"{name}_bytes_per_s": nbytes / (t["device_ms_cold"] / 1e3),
                    f"{name}_bytes_per_s_sustained": nbytes / (t["device_ms_sustained"] / 1e3), f"{name}_timing": t})
    return out
