"""What docs/BACKENDS.md says of CuTe DSL's FP8 GEMM, checked in its compiled code without a GPU: per K
block four FP8 wgmmas (QGMMA), three scale loads (a thread's two rows of A and the tile's B block: the
per-element reads of its source fold into them) and one FFMA an accumulator element (the promotion);
in `overlap`, the previous block's FFMAs between this block's QGMMAs and their wait, and no wgmma
serialized (one wait a block, not one a QGMMA)."""
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
import problems
backend = backends.get("cute_dsl", sys.argv[3])
open(sys.argv[1], "wb").write(backend.export("gemm_fp8", problems.get("gemm_fp8").case(sys.argv[2])))
"""


def _cuobjdump() -> str | None:
    if importlib.util.find_spec("triton") is None:
        return shutil.which("cuobjdump")
    import triton
    bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    return str(bundled) if bundled.exists() else shutil.which("cuobjdump")


def _ops(tmp_path, case: str, variant: str = "") -> list[str]:
    """The SASS opcodes of the case's kernel, compiled for sm_90a in a process of its own (the DSL reads
    its target at import)."""
    import backends
    cubin = tmp_path / f"{variant or 'default'}.cubin"
    env = {**os.environ, **backends.get("cute_dsl").aot_environment(), "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", EXPORT, str(cubin), case, variant], env=env, cwd=ROOT, check=True)
    sass = subprocess.run([_cuobjdump(), "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    return [line.split("*/")[1].split()[0] for line in sass.splitlines()
            if "*/" in line and ";" in line and line.split("*/")[1].split()]


NEEDS = [pytest.mark.skipif(importlib.util.find_spec("cutlass") is None,
                            reason="no CuTe DSL here (pip install '.[cute]')"),
         pytest.mark.skipif(_cuobjdump() is None, reason="no cuobjdump here (triton's, or the CUDA toolkit's)")]
TILE_ELEMENTS_A_THREAD = 128 * 128 // 256          # the 128 x 128 tile over two warpgroups' 256 threads


@NEEDS[0]
@NEEDS[1]
def test_each_k_block_is_four_qgmmas_three_scale_loads_and_one_ffma_an_element(tmp_path):
    ops = _ops(tmp_path, CASE)
    count = {op: sum(o.startswith(op) for o in ops) for op in ("QGMMA", "LDG", "FFMA", "WARPGROUP.DEPBAR")}
    assert count == {"QGMMA": 4, "LDG": 3, "FFMA": TILE_ELEMENTS_A_THREAD, "WARPGROUP.DEPBAR": 1}, count


@NEEDS[0]
@NEEDS[1]
def test_overlap_scales_the_last_block_while_the_next_blocks_wgmmas_run(tmp_path):
    ops = _ops(tmp_path, "64x72x16384-e4m3-blockwise", "overlap")      # a long K: the loop is not unrolled
    qgmma = [i for i, o in enumerate(ops) if o.startswith("QGMMA")]
    waits = [i for i, o in enumerate(ops) if o.startswith("WARPGROUP.DEPBAR")]
    assert len(qgmma) == 4 * len(waits)                   # one wait a block of four: none serialized
    between = [sum(o == "FFMA" for o in ops[q:next(w for w in waits if w > q)]) for q in qgmma[3::4]]
    assert max(between) >= TILE_ELEMENTS_A_THREAD - 1    # a block's promotion after its successor's issue


@NEEDS[0]
def test_the_scheduler_pads_no_tile_that_would_alias_tile_0():
    """A swizzle of 8 over one column tile padded it to eight, seven of them folded onto tile 0 (their
    stores raced its own: 64x72x16384 came back NaN on the H200)."""
    from backends.cute_dsl.gemm import unpadded_swizzle
    assert [unpadded_swizzle(n, 8) for n in (1, 2, 3, 6, 9, 56, 64)] == [1, 2, 1, 2, 1, 8, 8]
