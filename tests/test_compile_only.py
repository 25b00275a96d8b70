"""Without a GPU, a backend that compiles ahead of time (cuTile: export_kernel; NVRTC: a cubin
through cuda.core; CuTe DSL: cute.compile for sm_90a; TileLang: its nvcc-built library, from its site;
Gluon: triton.compile for sm_90a)
still compiles its test cases for sm_90: every test case of the problem's first dtype and the last (the
largest) of each other dtype, so every dtype's kernels and every odd shape are built (a build a case
takes seconds: all of them were most of CI's time). The records say compile_only and, for one problem
a backend, the compile figures say ahead_of_time."""
import importlib.metadata
import os

import pytest

import backends
import problems
from harness.measure import gpu
from tests.conftest import ROOT, dtype_sample, run_lab


def distribution(name: str, extra: str):
    """A toolchain check: None when the distribution is installed, else why not."""
    def missing() -> str | None:
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return f"{name} not installed (pip install '.[{extra}]')"
        return None
    return missing


def nvrtc_library() -> str | None:
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib
        load_nvidia_dynamic_lib("nvrtc")
    except Exception as exc:          # not installed, or not loadable: say which
        return f"NVRTC not loadable (pip install '.[nvrtc-aot]'): {exc}"
    return None


def tilelang_site() -> str | None:
    site = backends.get("tilelang").search_paths().get("PYTHONPATH")
    if not site or not os.path.isdir(os.path.join(site, "tilelang")):
        return "no TileLang site (make test installs one in the environment, or name one with WAYS_TILELANG_SITE)"
    return None


TOOLCHAIN = {"cutile": distribution("nvidia-cuda-tileiras", "cutile-aot"), "nvrtc": nvrtc_library,
             "cute_dsl": distribution("nvidia-cutlass-dsl", "cute"), "tilelang": tilelang_site,
             "gluon": distribution("triton", "triton")}
PAIRS = [pytest.param(b, p, id=f"{b}-{p}") for b in TOOLCHAIN for p in sorted(backends.problems_of(b))]
COMPILE_TIMED = "elementwise"        # the problem whose compile figures each backend's test checks



@pytest.mark.skipif(bool(gpu.gpus()), reason="a GPU is here: these backends run for real (tests/test_gpu.py)")
@pytest.mark.parametrize("backend,problem", PAIRS)
def test_compiles_ahead_of_time_without_a_gpu(tmp_path, backend, problem):
    if not backends.get(backend).exports():
        pytest.skip(f"{backend}: its compiler package is not installed")
    missing = TOOLCHAIN[backend]()
    if missing:
        pytest.skip(missing)
    before = set(ROOT.iterdir())
    timed = problem == COMPILE_TIMED      # the compile-time processes (cold, warm) once a backend: they add minutes
    doc = run_lab(tmp_path, problems=[problem], backends_=[backend], measure_compile=timed, compile_repeats=1,
                  case_names=dtype_sample(problem))
    assert set(ROOT.iterdir()) == before, "compiling left files in the checkout"
    rows = [r for r in doc["records"] if r["backend"] == backend and r["status"] != "not_applicable"]
    not_compiled = [(r["case"], r["status"], r["error"][-300:]) for r in rows if r["status"] != "compile_only"]
    assert rows and not not_compiled, not_compiled
    assert all("sm_90" in r["reason"] and "not run" in r["reason"] and r["build_s"] > 0 for r in rows)
    if not timed:
        return
    comp = rows[0]["compile"]
    assert comp["ahead_of_time"] and comp["cold_s"] > 0 and comp["warm_s"] > 0 and comp["first_call_s"] is None


def test_every_dtype_and_each_first_dtypes_shape_is_compiled():
    for name in problems.names():
        tests = [c for c in problems.get(name).cases() if c.kind == "test"]
        kept = dtype_sample(name)
        assert {problems.get(name).case(n).dtype for n in kept} == {c.dtype for c in tests}
        assert {c.name for c in tests if c.dtype == tests[0].dtype} <= set(kept)


def test_cutiles_one_pass_scan_compiles_for_sm90():
    """cuTile's windowed look-back scan (build's one_pass, a sweep candidate) compiles for the H100."""
    pytest.importorskip("cuda.tile", reason="cuda-tile not installed (pip install '.[cutile-aot]')")
    missing = TOOLCHAIN["cutile"]()
    if missing:
        pytest.skip(missing)
    from backends.cutile import array_param, cubin
    from backends.cutile.scan import TILE, WINDOW, look_back_scan
    n = 2**20 + 3
    words = 1 + WINDOW + -(-n // TILE)
    params = [array_param("bfloat16", (n,)), array_param("float32", (n,)), array_param("int64", (words,)), TILE]
    assert cubin(look_back_scan, params, "sm_90")
