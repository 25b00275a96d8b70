"""The implementation contract of docs/ARCHITECTURE.md, followed by a new tool written from it alone:
a folder with a backend and one implementation file, found by name, checked by the harness, its
kernel's `supports` and its build parts honoured; the harness's one question and one build."""
import textwrap

import backends
import problems
from tests.conftest import run_lab

BACKEND = '''
import numpy as np
from backends.base import Backend

class Toy(Backend):
    family = "no kernel"
    variants = ("", "fast")
    variant_problems = {"fast": ("elementwise",)}

    def modules(self):
        return ("numpy",)

    def device(self):
        return "cpu"

    def supports(self, case):
        return "toy: no bfloat16" if case.dtype == "bfloat16" else None

    def to_device(self, a, dtype):
        return np.array(a, copy=True)

    def to_host(self, x):
        return np.asarray(x)

BACKEND = Toy()
'''

ELEMENTWISE = '''
import time
import numpy as np
from backends.base import compiling, timing_kernels

def supports(case, variant=""):
    return "toy fast: n up to 100000" if variant == "fast" and case.shape["n"] > 100000 else None

def build(case, inputs, outputs, stream, variant=""):
    x, y, z = inputs["x"], inputs["y"], outputs["z"]
    with compiling():
        time.sleep(0.05)
    with timing_kernels():
        time.sleep(0.02)

    def run():
        np.add(np.float32(inputs["alpha"]) * x.astype(np.float32), y, out=z, casting="unsafe")
    return run
'''


def toy_tool(tmp_path, monkeypatch):
    folder = tmp_path / "tools" / "toy"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(BACKEND))
    (folder / "elementwise.py").write_text(textwrap.dedent(ELEMENTWISE))
    monkeypatch.setenv("WAYS_BACKEND_PATH", str(folder.parent))


def test_a_tool_written_from_the_contract_runs_with_no_harness_change(tmp_path, monkeypatch):
    toy_tool(tmp_path, monkeypatch)
    assert "toy" in backends.names() and backends.problems_of("toy") == ["elementwise"]
    assert backends.variants("toy") == ["", "fast"]
    doc = run_lab(tmp_path, problems=["elementwise"], backends_=["toy", "toy[fast]"], jobs=1)
    rows = [r for r in doc["records"] if r["backend"] == "toy"]
    assert rows and {r["status"] for r in rows} <= {"ok", "not_applicable"}
    by_status = {}
    for r in rows:
        by_status.setdefault((r["variant"], r["status"]), []).append(r)
    assert by_status[("", "ok")] and by_status[("fast", "ok")]
    reasons = {r["reason"] for r in rows if r["status"] == "not_applicable"}
    assert "toy: no bfloat16" in reasons                       # the tool's reason
    assert "toy fast: n up to 100000" in reasons               # the kernel's, for its variant only
    assert not any(r["variant"] == "" and "100000" in (r["reason"] or "") for r in rows)


def test_build_parts_are_measured_by_the_harness(tmp_path, monkeypatch):
    from harness.run.session import Session
    toy_tool(tmp_path, monkeypatch)
    problem = problems.get("elementwise")
    case = problem.case("1001-float32")
    parts = Session("toy", "").prepare(problem, case, case.seed).parts
    assert parts["tool_compile_s"] >= 0.05 and parts["autotune_s"] >= 0.02


def test_a_bound_backend_stands_for_one_variant(tmp_path, monkeypatch):
    toy_tool(tmp_path, monkeypatch)
    fast = backends.get("toy", "fast")
    assert fast.label() == "toy[fast]" and backends.get("toy").label() == "toy"
    assert fast.variants_of("elementwise") == ("", "fast") and fast.variants_of("gemm") == ("",)
    big = problems.get("elementwise").case("1048579-float32")
    assert fast.why_not("elementwise", big) == "toy fast: n up to 100000"
    assert backends.get("toy").why_not("elementwise", big) is None


def test_every_backend_answers_the_planners_questions_bound_to_each_variant():
    """What the parent process asks of each `name[variant]`, without importing the tool: no method
    takes a variant, and none mistakes the bound object for something else."""
    for name in backends.names():
        for variant in backends.variants(name):
            b = backends.get(name, variant)
            assert b.variant == variant and b.label() == backends.label(name, variant)
            assert b.device() in ("cuda", "cpu") and isinstance(b.modules(), tuple)
            ok, why = b.available()
            assert ok or why
            for problem in backends.problems_of(name):
                if variant not in b.variants_of(problem):
                    continue
                case = problems.get(problem).cases()[0]
                assert b.first_build_s(problem) > 0 and isinstance(b.build_times_kernels(problem), bool)
                b.build_key(problem, case)
                assert b.supports(case) is None or isinstance(b.supports(case), str)
            if hasattr(b, "warp_device"):
                assert b.warp_device() == ("cpu" if variant == "cpu" else "cuda:0")
