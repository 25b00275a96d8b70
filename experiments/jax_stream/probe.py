"""That DLPack hand-offs order JAX's work against the lab's (non-blocking, cuda.core)
stream both ways, so events on that stream time the jax_pallas kernels (the one thing the CPU could
not check). On the GPU node, from the lab's root:

    python -m experiments.jax_stream.probe
"""
import os
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import torch
from cuda.core import Device

from backends.jax_pallas import elementwise

dev = Device()
dev.set_current()
lab = dev.create_stream()                            # what harness/measure/device.py makes
ext = torch.cuda.ExternalStream(int(lab.handle))
n = 1 << 28
for variant in ("", "mosaic_gpu"):
    with torch.cuda.stream(ext):
        x = torch.ones(n, device="cuda")
        y = torch.zeros(n, device="cuda")
        run = elementwise.build(None, {"x": x, "y": y, "alpha": 2.0}, {"z": torch.empty_like(x)}, ext, variant=variant)
        torch.cuda.synchronize()
        # 1) lab -> JAX: a slow write on the lab stream right before run(); JAX must wait for it
        x.fill_(3.0)
        for _ in range(20):
            x.mul_(1.0)
        z = run()["z"]
        torch.cuda.synchronize()
        ok_in = bool((z == 6.0).all())
        # 2) JAX -> lab: events on the lab stream must see the kernel (~1.07 ms for 3 GiB at ~3 TB/s)
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(3):
            run()
        torch.cuda.synchronize()
        start.record(ext)
        for _ in range(10):
            run()
        stop.record(ext)
        t0 = time.perf_counter()
        stop.synchronize()
        ms = start.elapsed_time(stop) / 10
        print(f"jax_pallas[{variant}] inputs ordered: {ok_in}; lab-stream events: {ms:.3f} ms/call "
              f"(expect ~1.07 ms; ~0 means the work ran unseen on JAX's stream)")
