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


# A read stream, three ways (the ceiling is the fastest): a grid-stride loop and a contiguous chunk per
# block over a full SM's threads (persistent), and one short tile per block over as many blocks as it
# takes (as a row sum with a block per row runs); each thread keeps LOADS 16-byte loads in flight.
# The sum is stored only if it takes a value the filled input never gives, so no
# load is optimised away.
READ_SOURCE = r"""
__device__ __forceinline__ float sum4(float4 a) { return (a.x + a.y) + (a.z + a.w); }
extern "C" __global__ void read_grid_stride(const float4* __restrict__ x, unsigned long long n4, float* out) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.f;
  for (; i + (LOADS - 1) * stride < n4; i += LOADS * stride) {
    float4 v[LOADS];
#pragma unroll
    for (int k = 0; k < LOADS; ++k) v[k] = __ldg(x + i + k * stride);
#pragma unroll
    for (int k = 0; k < LOADS; ++k) acc += sum4(v[k]);
  }
  for (; i < n4; i += stride) acc += sum4(__ldg(x + i));
  if (acc == -1.f) out[0] = acc;
}
extern "C" __global__ void read_chunks(const float4* __restrict__ x, unsigned long long n4, float* out) {
  const unsigned long long per_block = (n4 + gridDim.x - 1) / gridDim.x;
  const unsigned long long begin = blockIdx.x * per_block, end = min(begin + per_block, n4);
  unsigned long long i = begin + threadIdx.x;
  float acc = 0.f;
  for (; i + (LOADS - 1) * blockDim.x < end; i += LOADS * blockDim.x) {
    float4 v[LOADS];
#pragma unroll
    for (int k = 0; k < LOADS; ++k) v[k] = __ldg(x + i + k * blockDim.x);
#pragma unroll
    for (int k = 0; k < LOADS; ++k) acc += sum4(v[k]);
  }
  for (; i < end; i += blockDim.x) acc += sum4(__ldg(x + i));
  if (acc == -1.f) out[0] = acc;
}
extern "C" __global__ void read_tiles(const float4* __restrict__ x, unsigned long long n4, float* out) {
  const unsigned long long base = (unsigned long long)blockIdx.x * LOADS * blockDim.x + threadIdx.x;
  float4 v[LOADS];
#pragma unroll
  for (int k = 0; k < LOADS; ++k)
    v[k] = base + k * blockDim.x < n4 ? __ldg(x + base + k * blockDim.x) : make_float4(0.f, 0.f, 0.f, 0.f);
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < LOADS; ++k) acc += sum4(v[k]);
  if (acc == -1.f) out[0] = acc;
}
"""
READ_KERNELS = ("read_grid_stride", "read_chunks", "read_tiles")
# elementwise's pattern, two vectors read and one written (z = x + y), 1 GiB each,
# two ways (the ceiling is the faster): a grid-stride loop over a full SM's threads with LOADS pairs of
# 16-byte loads in flight, and one short tile per block over as many blocks as it takes (as the
# elementwise kernels of the tile tools run)
TRIAD_SOURCE = r"""
__device__ __forceinline__ float4 add4(float4 a, float4 b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }
extern "C" __global__ void triad_grid_stride(const float4* __restrict__ x, const float4* __restrict__ y,
                                             float4* __restrict__ z, unsigned long long n4) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (LOADS - 1) * stride < n4; i += LOADS * stride) {
    float4 a[LOADS], b[LOADS];
#pragma unroll
    for (int k = 0; k < LOADS; ++k) { a[k] = __ldg(x + i + k * stride); b[k] = __ldg(y + i + k * stride); }
#pragma unroll
    for (int k = 0; k < LOADS; ++k) z[i + k * stride] = add4(a[k], b[k]);
  }
  for (; i < n4; i += stride) z[i] = add4(__ldg(x + i), __ldg(y + i));
}
extern "C" __global__ void triad_tiles(const float4* __restrict__ x, const float4* __restrict__ y,
                                       float4* __restrict__ z, unsigned long long n4) {
  const unsigned long long base = (unsigned long long)blockIdx.x * LOADS * blockDim.x + threadIdx.x;
  float4 a[LOADS], b[LOADS];
#pragma unroll
  for (int k = 0; k < LOADS; ++k)
    if (base + k * blockDim.x < n4) { a[k] = __ldg(x + base + k * blockDim.x); b[k] = __ldg(y + base + k * blockDim.x); }
#pragma unroll
  for (int k = 0; k < LOADS; ++k)
    if (base + k * blockDim.x < n4) z[base + k * blockDim.x] = add4(a[k], b[k]);
}
"""
TRIAD_KERNELS = ("triad_grid_stride", "triad_tiles")
READ_LOADS = 4         # READ_SOURCE's LOADS
READ_BLOCK, THREADS_PER_SM = 256, 2048
FLOAT4_BYTES = 16


def ceilings(device) -> tuple[dict, tuple]:
    """The memory-bound ceilings as (kind, call, bytes moved) per name, each a call on `device`'s
    stream: `copy`, a 1 GiB device-to-device copy (read + write, as an elementwise kernel); the read
    streams (kind `read`), 1 GiB read (a reduction's pattern: its few outputs are no traffic). And the
    buffers, to keep alive while the calls are made."""
    import numpy as np
    from cuda.core import LaunchConfig, Program, ProgramOptions, launch
    stream = device.stream
    src = device.device.allocate(COPY_BYTES, stream=stream)
    dst = device.device.allocate(COPY_BYTES, stream=stream)
    src.fill(1, stream=stream)
    major, minor = device.device.compute_capability
    options = ProgramOptions(arch=f"sm_{major}{minor}", define_macro=f"LOADS={READ_LOADS}")
    module = Program(READ_SOURCE + TRIAD_SOURCE, "c++", options).compile("cubin")
    sink = device.device.allocate(4, stream=stream)
    n4 = COPY_BYTES // FLOAT4_BYTES
    persistent = LaunchConfig(grid=device.device.properties.multiprocessor_count * THREADS_PER_SM // READ_BLOCK,
                              block=READ_BLOCK)
    one_tile_each = LaunchConfig(grid=-(-n4 // (READ_LOADS * READ_BLOCK)), block=READ_BLOCK)

    def copy():
        src.copy_to(dst, stream=stream)

    def reader(name):
        kernel, config = module.get_kernel(name), one_tile_each if name == "read_tiles" else persistent

        def read():
            launch(stream, config, kernel, src, np.uint64(n4), sink)
        return read

    # x the source, y a third buffer, z the destination: 3 GiB moved, as elementwise's headline case (a
    # shorter stream loses a few percent to the launch's ramp)
    other = device.device.allocate(COPY_BYTES, stream=stream)
    other.fill(1, stream=stream)
    x, y, z = (np.uint64(int(b.handle)) for b in (src, other, dst))     # pointers as 64-bit kernel arguments

    def triad(name):
        kernel = module.get_kernel(name)
        config = LaunchConfig(grid=-(-n4 // (READ_LOADS * READ_BLOCK)), block=READ_BLOCK) \
            if name == "triad_tiles" else persistent

        def call():
            launch(stream, config, kernel, x, y, z, np.uint64(n4))
        return call

    found = {"copy": ("copy", copy, 2 * COPY_BYTES)}
    found.update({name: ("triad", triad(name), 3 * COPY_BYTES) for name in TRIAD_KERNELS})
    found.update({name: ("read", reader(name), COPY_BYTES) for name in READ_KERNELS})
    return found, (src, dst, other, sink)


def measure(device, use_nvbench: bool = True) -> dict:
    """Warm the GPU up, then time each ceiling like any case: sustained, then cold (nvbench if usable,
    else events; nvbench runs once per process, so all of them in one run of it). A kind's figure is
    its fastest call's."""
    from harness.measure import gate, nvbench_engine
    from harness.measure.timing import EventEngine, on_gpu
    found, _buffers = ceilings(device)
    why_not = nvbench_engine.available() if use_nvbench else "nvbench runs once per process: not used here"
    if gate.cold_engine() != "nvbench":              # timed as the cases are
        why_not = f"{gate.ENGINE_VAR}={gate.cold_engine()}"
    timings = {}
    for k, (name, (_, run, _)) in enumerate(found.items()):
        timings[name] = on_gpu(device, run, lambda run: {}, "memory", warmup_s=WARMUP_S if k == 0 else WARMUP_S / 4)
    runs = {name: run for name, (_, run, _) in found.items()}
    if why_not is None:
        import tempfile
        from pathlib import Path

        def bench(run):
            def fn(state):
                state.set_stream(device.stream)
                state.exec(lambda launch: run(), batched=False)
            return fn
        with tempfile.TemporaryDirectory() as tmp:
            cold = nvbench_engine.run([(name, bench(run)) for name, run in runs.items()], Path(tmp) / "peaks.json")
    else:
        engine = gate.GatedEngine(device) if gate.cold_engine() == "gated" else EventEngine(device)
        cold = {name: {**engine.measure(run), "engine_note": why_not} for name, run in runs.items()}
    out, variants = {}, {}
    for name, (kind, _, nbytes) in found.items():
        t = {**timings[name], **cold[name]}
        rates = {"cold": nbytes / (t["device_ms_cold"] / 1e3), "sustained": nbytes / (t["device_ms_sustained"] / 1e3)}
        variants[name] = {f"bytes_per_s_{m}": v for m, v in rates.items()}
        if rates["cold"] > out.get(f"{kind}_bytes_per_s", 0):
            out.update({f"{kind}_bytes": nbytes, f"{kind}_bytes_per_s": rates["cold"], f"{kind}_by": name,
                        f"{kind}_timing": t})
        out[f"{kind}_bytes_per_s_sustained"] = max(out.get(f"{kind}_bytes_per_s_sustained", 0), rates["sustained"])
    out["ceiling_calls"] = variants
    return out
