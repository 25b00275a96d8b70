"""The device a worker runs on: for CUDA, one stream (cuda.core) that every backend launches on.

sync() waits for the whole device, not just that stream: a backend's library may upload or launch
on a stream of its own (CuPy's current stream, a tool's internal one), and a check that waited on
ours alone could read an output before the kernel wrote it, or poison land after it."""
from __future__ import annotations


class HostDevice:
    """A CPU variant: nothing to synchronize."""
    kind = "cpu"
    handle = None

    def sync(self) -> None:
        pass

    def properties(self) -> dict:
        return {}


class CudaDevice:
    kind = "cuda"

    def __init__(self):
        from cuda.core import Device
        self.device = Device()
        self.device.set_current()
        self.stream = self.device.create_stream()
        self.handle = int(self.stream.handle)

    def sync(self) -> None:
        self.device.sync()

    def properties(self) -> dict:
        p = self.device.properties
        return {"name": self.device.name, "compute_capability": "{}.{}".format(*self.device.compute_capability),
                "sm_count": p.multiprocessor_count, "l2_bytes": p.l2_cache_size,
                "sm_clock_khz": p.clock_rate, "memory_clock_khz": p.memory_clock_rate,
                "memory_bus_bits": p.global_memory_bus_width, "total_memory_bytes": _total_memory()}


def _total_memory() -> int | None:
    try:
        from cuda.bindings import runtime
        _, _, total = runtime.cudaMemGetInfo()
        return int(total)
    except Exception:
        return None


def open_device(kind: str):
    return CudaDevice() if kind == "cuda" else HostDevice()
