"""Without a GPU, a backend that compiles ahead of time (cuTile: export_kernel to an sm_90 cubin)
still compiles every test case; the records say compile_only and the compile figures say so too."""
import importlib.metadata
import importlib.util

import pytest

from harness import gpu
from tests.conftest import run_lab


def toolchain_missing() -> str | None:
    if importlib.util.find_spec("cuda.tile") is None:
        return "cuda-tile not installed (pip install '.[cutile-aot]')"
    try:
        importlib.metadata.version("nvidia-cuda-tileiras")
    except importlib.metadata.PackageNotFoundError:
        return "tileiras not installed (pip install '.[cutile-aot]')"
    return None


@pytest.mark.skipif(bool(gpu.gpus()), reason="a GPU is here: cuTile runs for real (tests/test_gpu.py)")
@pytest.mark.parametrize("problem", ["segreduce", "elementwise", "gemm"])
def test_cutile_compiles_ahead_of_time_without_a_gpu(tmp_path, problem):
    missing = toolchain_missing()
    if missing:
        pytest.skip(missing)
    doc = run_lab(tmp_path, problems=[problem], backends_=["cutile"], measure_compile=True, compile_repeats=1)
    rows = [r for r in doc["records"] if r["backend"] == "cutile"]
    not_compiled = [(r["case"], r["status"], r["error"]) for r in rows if r["status"] != "compile_only"]
    assert rows and not not_compiled, not_compiled
    assert all("sm_90" in r["reason"] and "no NVIDIA GPU" in r["reason"] and r["build_s"] > 0 for r in rows)
    comp = rows[0]["compile"]
    assert comp["ahead_of_time"] and comp["cold_s"] > 0 and comp["warm_s"] > 0 and comp["first_call_s"] is None
