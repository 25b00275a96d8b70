"""What GPU this machine has, read from nvidia-smi (no GPU library is imported): the inventory the
backends check themselves against, beside the harness's."""
from __future__ import annotations

import functools
import re
import shutil
import subprocess

QUERY = "index,uuid,name,compute_cap,driver_version,memory.total,clocks.max.sm,clocks.max.mem,pci.bus_id"


@functools.lru_cache(maxsize=1)
def gpus() -> tuple[dict, ...]:
    """One dict per visible NVIDIA GPU; empty when there is none (or no nvidia-smi)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return ()
    try:
        out = subprocess.run([smi, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30)
        banner = subprocess.run([smi], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    if out.returncode != 0:
        return ()
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", banner)
    found = []
    for line in out.stdout.strip().splitlines():
        index, uuid, name, cc, driver, mem, sm_clock, mem_clock, bus = (f.strip() for f in line.split(","))
        found.append({"index": _int(index), "uuid": uuid, "name": name, "compute_capability": cc, "driver": driver,
                      "driver_cuda": cuda.group(1) if cuda else "", "memory_mib": _int(mem),
                      "max_sm_clock_mhz": _int(sm_clock), "max_mem_clock_mhz": _int(mem_clock),
                      "pci_bus_id": bus})
    return tuple(found)


def model(device_name: str | bytes) -> str:
    """The GPU's model in a device name as a tool reports it ('NVIDIA H200' -> 'H200', 'NVIDIA H100 80GB
    HBM3' -> 'H100'; '' where it names none): the key under which an implementation keeps a launch
    configuration that a committed sweep chose on that kind of GPU."""
    if isinstance(device_name, bytes):
        device_name = device_name.decode(errors="replace")
    found = re.search(r"\b([A-Z]{1,2}\d{2,3})\b", device_name or "")
    return found.group(1) if found else ""


@functools.cache
def this_gpu() -> str:
    """The model of the GPU this process computes on (the first that CUDA_VISIBLE_DEVICES leaves),
    asked of the CUDA driver through cuda.core; '' where there is none."""
    try:
        from cuda.core import Device
        return model(Device().name)
    except Exception:
        return ""


def tuned(by_gpu: dict, default):
    """What a committed sweep chose on this process's kind of GPU: each implementation that tunes per
    kind keeps one table, BY_GPU (GPU model -> value), and asks for its entry here; `default` on any
    other GPU (docs/ARCHITECTURE.md)."""
    return by_gpu.get(this_gpu(), default)


def _int(text: str) -> int | None:
    try:
        return int(float(text))
    except ValueError:
        return None


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:2])
