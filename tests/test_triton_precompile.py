"""Triton's GEMM build compiles every autotune config with the GPU free (Autotuner.warmup), then
holds the GPU alone only while the autotuner times them: that split helps only if the autotuner's
own calls find those kernels compiled. Checked without a GPU: Triton compiles for sm_90 on the CPU
(its bundled ptxas) behind a stand-in driver, in a process of its own (the driver is global)."""
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SCRIPT = r'''
import torch
from triton.backends.compiler import GPUTarget
from triton.runtime import driver

class CpuOnly:                      # what JITFunction.run asks of the driver, for an H100 target
    def get_current_device(self): return 0
    def get_current_stream(self, device=None): return 0
    def get_current_target(self): return GPUTarget("cuda", 90, 32)
    def get_device_interface(self): return torch.cuda
    def get_active_torch_device(self): return torch.device("cpu")

driver.set_active(CpuOnly())
from backends.triton import gemm
a, b = torch.randn(1000, 1000, dtype=torch.float16), torch.randn(1000, 1000, dtype=torch.float16)
c = torch.empty_like(a)
grid = lambda meta: (1,)
gemm.matmul.warmup(a, b, c, 1000, 1000, 1000, PRECISION="tf32", grid=grid)
cache = gemm.matmul.fn.device_caches[0][0]
compiled = len(cache)
for config in gemm.matmul.configs:  # the call the autotuner makes for each config, compiled if missing
    gemm.matmul.fn.run(a, b, c, 1000, 1000, 1000, grid=grid, warmup=True, PRECISION="tf32", **config.all_kwargs())
print(len(gemm.matmul.configs), compiled, len(cache))
'''


def test_the_autotuners_calls_find_every_config_compiled(tmp_path):
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path)          # compiled here, not read from an earlier run's cache
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    configs, compiled, after = map(int, out.stdout.split()[-3:])
    assert configs == 6 and compiled == configs and after == compiled
