"""The GPU's state now (clocks, throttle reasons, temperature, power), read from nvidia-smi; the
inventory itself (gpus(), version_tuple()) is the backends' (backends/gpus.py)."""
from __future__ import annotations

import shutil
import subprocess

from backends.gpus import gpus, version_tuple  # noqa: F401 (the harness reads the inventory here too)

STATE_QUERY = "clocks.sm,clocks.mem,clocks.max.sm,clocks_event_reasons.active,temperature.gpu,power.draw,pstate"


def state(index: str | None = None) -> dict | None:
    """Clocks, active clock-event (throttle) reasons, temperature and power now, of GPU `index`
    (nvidia-smi's numbering; default the first); None without a GPU."""
    smi = shutil.which("nvidia-smi")
    if not smi or not gpus():
        return None
    try:
        out = subprocess.run([smi, f"--query-gpu={STATE_QUERY}", "--format=csv,noheader,nounits",
                              *(["-i", index] if index is not None else [])],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    fields = [f.strip() for f in out.stdout.strip().splitlines()[0].split(",")]
    keys = ("sm_clock_mhz", "mem_clock_mhz", "max_sm_clock_mhz", "clock_event_reasons", "temperature_c",
            "power_w", "pstate")
    return dict(zip(keys, fields, strict=False))
