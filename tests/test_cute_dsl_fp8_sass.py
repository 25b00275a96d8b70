"""What docs/BACKENDS.md says of CuTe DSL's FP8 GEMM, checked in its compiled code without a GPU: per K
block four FP8 wgmmas (QGMMA), three scale loads (a thread's two rows of A and the tile's B block: the
per-element reads of its source fold into them) and one FFMA an accumulator element (the promotion)."""
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

CASE = "200x264x384-e4m3-blockwise"
EXPORT = """
import sys
import backends
backend = backends.get("cute_dsl")
import problems
open(sys.argv[1], "wb").write(backend.export("gemm_fp8", problems.get("gemm_fp8").case(sys.argv[2])))
"""


def _cuobjdump() -> str | None:
    if importlib.util.find_spec("triton") is None:
        return shutil.which("cuobjdump")
    import triton
    bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    return str(bundled) if bundled.exists() else shutil.which("cuobjdump")


@pytest.mark.skipif(importlib.util.find_spec("cutlass") is None, reason="no CuTe DSL here (pip install '.[cute]')")
@pytest.mark.skipif(_cuobjdump() is None, reason="no cuobjdump here (triton's, or the CUDA toolkit's)")
def test_each_k_block_is_four_qgmmas_three_scale_loads_and_one_ffma_an_element(tmp_path):
    import backends
    cubin = tmp_path / "gemm_fp8.cubin"
    env = {**os.environ, **backends.get("cute_dsl").aot_environment(), "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", EXPORT, str(cubin), CASE], env=env, cwd=ROOT, check=True)
    sass = subprocess.run([_cuobjdump(), "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    ops = [line.split("*/")[1].split()[0] for line in sass.splitlines()
           if "*/" in line and ";" in line and line.split("*/")[1].split()]
    count = {op: sum(o.startswith(op) for o in ops) for op in ("QGMMA", "LDG", "FFMA", "WARPGROUP.DEPBAR")}
    tile_elements_a_thread = 128 * 128 // 256          # the 128 x 128 tile over two warpgroups' 256 threads
    assert count == {"QGMMA": 4, "LDG": 3, "FFMA": tile_elements_a_thread, "WARPGROUP.DEPBAR": 1}, count
