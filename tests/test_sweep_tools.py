"""The sweep tools' CPU parts: tables from recorded sweeps (both tools' row formats) and the
reference percentages a sweep reports."""
import json

import pytest

import backends
import problems
from tools.sweep import pct_of_reference
from tools.sweep_table import tables


def test_table_names_variant_and_build_time_fastest_first(tmp_path):
    rows = [
        {"problem": "gemm", "case": "c", "variant": "pipeline", "plan": {"tile": [128, 256, 64], "block": 256},
         "reference": "cuBLAS", "reference_ms": 1.5, "status": "ok", "cold_ms": 2.0, "tflops": 500.0,
         "gb_per_s": 1.0, "pct_of_reference": 75.0, "build_s": 263.4},
        {"problem": "gemm", "case": "c", "variant": "", "plan": {"tile": [256, 128, 32], "block": 256},
         "reference": "cuBLAS", "reference_ms": 1.5, "status": "ok", "cold_ms": 66.0, "tflops": 16.0,
         "gb_per_s": 1.0, "pct_of_reference": 2.3},
        {"problem": "gemm", "case": "c", "tiles": {"m": 64}, "reference": "cuBLAS", "reference_ms": 1.5,
         "status": "failed", "error": "CUDAError: boom"},
    ]
    path = tmp_path / "3-pipeline.json"
    path.write_text(json.dumps(rows))
    text = tables([path])
    lines = [line for line in text.splitlines() if line.startswith("| ")][1:]     # after the header
    assert lines[0].startswith("| [pipeline] tile=[128, 256, 64], block=256 | 2.0000 | 500.0 TFLOP/s | 75.0 | 263 |")
    assert lines[1].startswith("| tile=[256, 128, 32], block=256 | 66.0000 |") and "| 2.3 |  | 3-pipeline |" in lines[1]
    assert "failed: CUDAError: boom" in lines[2]


def test_pct_of_reference():
    gemm, seg = problems.get("gemm"), problems.get("segreduce")
    assert pct_of_reference("gemm", gemm.case("8192x8192x8192-float16"), 2.0, 1.5) == 75.0
    attention = problems.get("attention")        # compute-bound too: time against cuDNN's
    assert pct_of_reference("attention", attention.case("4x32x4096x128-full-bfloat16"), 2.0, 1.5) == 75.0
    case = seg.case("8192x32768-float32")           # 1 GiB read, 32 KiB written
    nbytes = seg.work(case)[0]
    # the copy moves 2 GiB (read + written) in ref_ms: same time for nbytes gives nbytes / 2 GiB
    assert abs(pct_of_reference("segreduce", case, 1.0, 1.0) - 100 * nbytes / (2 << 30)) < 1e-9


def test_the_sweeps_knobs_are_the_builds_keywords():
    """Every knob a scan's sweep (and JAX Pallas's, nvrtc's and TileLang's attention sweeps, the row
    sums' of cuda.coop, Triton, nvrtc and cuTile) tries is a keyword its build() takes (read from the
    source: nothing imported), and the sweep names real bench cases."""
    import ast

    import backends
    import problems
    from tools.knob_sweep import CANDIDATES
    for (backend, problem), (make, cases) in CANDIDATES.items():
        if problem not in ("scan", "segreduce") and (backend, problem) not in {
                ("jax_pallas", "attention"), ("nvrtc", "attention"), ("tilelang", "attention")}:
            continue
        tree = ast.parse(backends.source_path(backend, problem).read_text())
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        build = functions["build"]
        if build.args.kwarg:          # build(**knobs) hands them to knobs_of(), which names them
            build = functions["knobs_of"]
        takes = {a.arg for a in build.args.args + build.args.kwonlyargs}
        for name in cases:
            knobs = make(problems.get(problem).case(name), "")
            assert knobs and all(set(k) <= takes for k in knobs), (backend, knobs)


def test_helions_attention_sweep_builds_configs_its_build_takes():
    """The Helion attention sweep's candidates are Configs of the kernel's block sizes (queries, then
    keys in each key loop: two loops causal), handed to
    build() by its `config` keyword, on real bench cases; as JSON they are plain dicts."""
    import ast

    import backends
    pytest.importorskip("helion")
    from tools.knob_sweep import CANDIDATES, shown
    make, cases = CANDIDATES["helion", "attention"]
    tree = ast.parse(backends.source_path("helion", "attention").read_text())
    build = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "build")
    assert "config" in {a.arg for a in build.args.args}
    for name in cases:
        case = problems.get("attention").case(name)
        knobs = make(case, "fixed")
        sizes = 2 + case.shape["causal"]
        assert len(knobs) > 4 and all(set(k) == {"config"} and len(k["config"]["block_sizes"]) == sizes for k in knobs)
        assert json.loads(json.dumps(shown(knobs[0])))["config"]["block_sizes"] == [128, 64, 64][:sizes]


@pytest.mark.parametrize("problem", ["scan", "attention", "elementwise", "segreduce"])
def test_nvrtcs_sweep_candidates_compile(problem):
    """Each candidate the nvrtc scan, attention, elementwise and row-sum sweeps try (scan tiles; attention
    tiles; elementwise plans, with and without streaming cache hints; short rows' loads at once or
    strided, warps a block) is a kernel NVRTC compiles for the H100 (no GPU needed), the default among
    them, so a sweep on the GPU node spends its time timing, not failing builds."""
    from tests.test_compile_only import nvrtc_library
    missing = nvrtc_library()
    if missing:
        pytest.skip(missing)
    from backends import implementation
    from backends.nvrtc import compile_cubin
    from tools.knob_sweep import CANDIDATES
    module = implementation("nvrtc", problem)
    make, cases = CANDIDATES["nvrtc", problem]
    for name in dict.fromkeys(cases):
        case = problems.get(problem).case(name)
        names = [module.kernel_name(case, **k) for k in make(case, "")]
        assert module.kernel_name(case) in names, name
        for kernel in dict.fromkeys(names):
            assert len(bytes(compile_cubin(module.SOURCE, kernel, "sm_90a").code)) > 0, kernel


def test_cute_dsls_scan_sweep_candidates_compile(tmp_path):
    """Each tile and sleep the CuTe DSL scan sweep tries compiles for sm_90a without a GPU (in a
    process of its own: the DSL reads its target at import)."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT
    pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl not installed (pip install '.[cute]')")
    script = """
import backends
import problems
from tools.knob_sweep import CANDIDATES
make, cases = CANDIDATES["cute_dsl", "scan"]
case = problems.get("scan").case(cases[-1])
for knobs in make(case, ""):
    assert backends.get("cute_dsl").export("scan", case, **knobs), knobs
print("compiled", len(make(case, "")))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUTE_DSL_ARCH": "sm_90a", "CUTE_DSL_DUMP_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-2000:]


def test_gluons_scan_sweep_candidates_compile_for_sm90a():
    """Every tile and warp count the sweep tries builds for sm_90a without a GPU (Gluon has no interpreter)."""
    pytest.importorskip("triton.experimental.gluon")
    import problems
    from backends.gluon import scan
    from tools.knob_sweep import CANDIDATES
    make, cases = CANDIDATES["gluon", "scan"]
    case = next(c for c in problems.get("scan").cases() if c.name == cases[0])
    for knobs in make(case, ""):
        assert scan.export(case, "", "sm_90a", **knobs), knobs


def test_only_keeps_the_candidates_it_names():
    """`--only TEXT` keeps the candidates whose knobs as JSON contain one of the texts; none given, all."""
    from tools.knob_sweep import CANDIDATES, selected
    make, cases = CANDIDATES["nvrtc", "scan"]
    every = make(problems.get("scan").case(cases[0]), "")
    assert selected(every, None) == every
    assert selected(every, ['"items": 12']) == [{"threads": 256, "items": 12}]
    assert len(selected(every, ['"items": 12', '"items": 32'])) == 2
    assert selected(every, ["no such knob"]) == []


def test_tilelangs_attention_sweep_candidates_lower_for_sm90a():
    """Each tile, stage count and thread count the TileLang attention sweep tries lowers to warpgroup
    MMA for sm_90a without a GPU (TileLang's own site, in a process of its own)."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT
    from tests.test_compile_only import tilelang_site
    missing = tilelang_site()
    if missing:
        pytest.skip(missing)
    site = backends.get("tilelang").search_paths()["PYTHONPATH"]
    script = """
import problems
from backends.tilelang import attention, compile_program
from tools.knob_sweep import CANDIDATES
make, cases = CANDIDATES["tilelang", "attention"]
for name in cases:
    case = problems.get("attention").case(name)
    for knobs in make(case, ""):
        kernel = compile_program(attention.program(case, **knobs), "sm_90a", attention.PASS_CONFIGS)
        assert "wgmma" in kernel.get_kernel_source(), (name, knobs)
print("lowered", len(cases))
"""
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}",
           "PATH": f"{site}/nvidia/cu13/bin{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and "lowered 2" in done.stdout, done.stderr[-2000:]


TRITON_ROW_SUM_KNOBS = r"""
import problems
from harness.run.session import Session
from tools.knob_sweep import CANDIDATES
from tools.sweep import build_and_check
s, prob = Session("triton", ""), problems.get("segreduce")
make, cases = CANDIDATES["triton", "segreduce"]
every = make(prob.case(cases[0]), "")
counts = sorted({k["per_program"] for k in every})
warps = len(every) // len(counts)
picked = [[k for k in every if k["per_program"] == r][i % warps] for i, r in enumerate(counts)]   # warps varied
for name in ("50000x3-float32", "64x1000-float16"):         # a partial last program at 32 and 64 rows
    case = prob.case(name)
    for knobs in picked:
        build_and_check(s, "segreduce", case, s.arrays(prob, case, 0), knobs)
print("checked")
"""


def test_tritons_row_sum_sweep_candidates_are_right_in_the_interpreter():
    """The rows a program and warps the Triton row-sum sweep tries, each built through the sweep's own
    build-and-check on short-row test cases (a partial last program among them) in Triton's
    interpreter; in a process of its own: the interpreter is chosen when the kernel is defined."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    out = subprocess.run([sys.executable, "-c", TRITON_ROW_SUM_KNOBS], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=600)
    assert out.returncode == 0 and "checked" in out.stdout, out.stderr[-3000:]


NUMBA_ROW_SUM_KNOBS = r"""
import problems
from harness.run.session import Session
from tools.knob_sweep import CANDIDATES
from tools.sweep import build_and_check
s, prob = Session("numba_simt", ""), problems.get("segreduce")
make, cases = CANDIDATES["numba_simt", "segreduce"]
# 264 columns: a lane's two vectors and a tail vector; 262: no whole 16-byte vectors a row (elements)
for shape in ({"rows": 13, "cols": 264}, {"rows": 13, "cols": 262}):
    case = prob.custom_case(shape, "float32", kind="test")
    for knobs in make(prob.case(cases[0]), ""):
        build_and_check(s, "segreduce", case, s.arrays(prob, case, 0), knobs)
print("checked")
"""


def test_numbas_row_sum_sweep_candidates_are_right_in_the_simulator():
    """numba_simt's short-row plans (elements; 16-byte vectors) built through the sweep's own
    build-and-check in numba's CUDA simulator, on rows of whole vectors with a partial last block of
    warps, and on rows that are not whole vectors (the element kernel takes them)."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT
    pytest.importorskip("numba")
    out = subprocess.run([sys.executable, "-c", NUMBA_ROW_SUM_KNOBS], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}, timeout=600)
    assert out.returncode == 0 and "checked" in out.stdout, out.stderr[-3000:]


def test_cutiles_row_sum_sweep_candidates_compile_for_sm90():
    """Each tile the cuTile row-sum sweep tries compiles for the H100 on its short-row case (no GPU)."""
    pytest.importorskip("cuda.tile", reason="cuda-tile not installed (pip install '.[cutile-aot]')")
    from tests.test_compile_only import TOOLCHAIN
    missing = TOOLCHAIN["cutile"]()
    if missing:
        pytest.skip(missing)
    from backends import implementation
    from tools.knob_sweep import CANDIDATES
    make, cases = CANDIDATES["cutile", "segreduce"]
    case = problems.get("segreduce").case(cases[0])
    for knobs in make(case, ""):
        assert implementation("cutile", "segreduce").export(case, "", "sm_90", **knobs), knobs
