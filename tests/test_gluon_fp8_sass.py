"""The claim behind Gluon's FP8 `overlap` variant, checked in the compiled code without a GPU: its
scaling of the previous K block's partial sum (FFMA) is scheduled among the current block's QGMMA
instructions, before the wgmma wait, where the default kernel scales only after the wait."""
import importlib.util
import itertools
import shutil
import subprocess
from pathlib import Path

import pytest

import problems


def _cuobjdump() -> str | None:
    if importlib.util.find_spec("triton") is None:
        return None
    import triton
    bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    return str(bundled) if bundled.exists() else shutil.which("cuobjdump")


def _zones(variant: str, tmp_path) -> list[tuple[str, int]]:
    """The FFMAs of the first K-loop iteration's code, by where they sit against its QGMMAs and wait."""
    from backends.gluon import gemm_fp8
    path = tmp_path / f"{variant or 'default'}.cubin"
    path.write_bytes(gemm_fp8.export(problems.get("gemm_fp8").headline_case(), variant, "sm_90a"))
    sass = subprocess.run([_cuobjdump(), "-sass", str(path)], capture_output=True, text=True, check=True).stdout
    ops = [line.split("*/")[1].split()[0] for line in sass.splitlines() if "*/" in line and ";" in line
           and line.split("*/")[1].split()]
    first = ops.index(next(o for o in ops if o.startswith("QGMMA")))
    wait = next(i for i, o in enumerate(ops) if o.startswith("WARPGROUP.DEPBAR"))
    last = max(i for i, o in enumerate(ops[:wait]) if o.startswith("QGMMA"))

    def zone(i):
        return "before" if i < first else "among the MMAs" if i < last else "before the wait" if i < wait else "after"
    return [(k, len(list(g))) for k, g in itertools.groupby((i for i, o in enumerate(ops) if o == "FFMA"), key=zone)]


@pytest.mark.skipif(_cuobjdump() is None, reason="no triton with its cuobjdump here (pip install '.[triton]')")
def test_the_overlap_variant_scales_while_its_wgmma_runs(tmp_path):
    default, overlap = dict(_zones("", tmp_path)), dict(_zones("overlap", tmp_path))
    assert "among the MMAs" not in default and default.get("after", 0) > 0
    assert overlap.get("among the MMAs", 0) >= 32
