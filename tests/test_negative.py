"""Deliberately bad implementations (tests/fixtures/bad_backends) through the real harness:
wrong ones come out 'wrong', crashing/hanging/raising ones 'failed', and the sweep goes on."""
import pytest

from harness.run import registry, supervise
from problems.base import Case
from tests.conftest import run_lab


def _by(doc, backend, problem):
    return {r["case"]: r for r in doc["records"] if r["backend"] == backend and r["problem"] == problem}


# One term missing from a row this long or longer hides inside the summation bound (problems/base.py:
# u (2 sqrt(n) + 16) sum|x| leaves room for any order of float32 additions): the faulty row sum drops
# one, so only shorter rows can show it
BOUND_HIDES_ONE_TERM = 16384


def _detectable(r):
    return r["dtype"] != "bfloat16" and not (r["problem"] == "segreduce" and r["shape"]["cols"] >= BOUND_HIDES_ONE_TERM)


def test_wrong_implementations_are_never_ok(tmp_path, bad_backends):
    doc = run_lab(tmp_path, backends_=["faulty"])
    statuses = {r["status"] for r in doc["records"] if _detectable(r)}
    assert statuses == {"wrong"}
    assert all(r["status"] in ("wrong", "ok") for r in doc["records"] if r["dtype"] != "bfloat16")
    seg = _by(doc, "faulty", "segreduce")
    assert "off" in seg["64x1000-float32"]["error"]           # the partial sum
    assert "NaN" in _by(doc, "faulty", "elementwise")["1001-float32"]["error"]   # the unwritten element
    assert "dtype float64" in _by(doc, "faulty", "gemm")["1x1x1-float32"]["error"]


FEW = {"segreduce": ["1x1-float32", "64x1000-float32"],
       "elementwise": ["1-float32", "7-float32", "1001-float32", "100003-float32"], "gemm": ["1x1x1-float32"]}


@pytest.fixture
def few_cases(monkeypatch):
    real = registry.cases_for

    def cases_for(problem, kinds, custom=None):
        return [c for c in real(problem, kinds, custom) if c.name in FEW.get(problem, ())]
    monkeypatch.setattr(registry, "cases_for", cases_for)


def _first_line(r):
    return r["error"].splitlines()[0]


def test_crash_hang_and_exception_are_contained(tmp_path, bad_backends, few_cases):
    doc = run_lab(tmp_path, backends_=["broken", "array_api[numpy]"], item_timeout=3, startup_timeout=60)
    seg = sorted(_by(doc, "broken", "segreduce").values(), key=lambda r: r["status"])
    # one hang costs one timeout: the implementation's other cases are skipped, saying why
    assert [r["status"] for r in seg] == ["failed", "skipped"]
    assert _first_line(seg[0]) == "timed out after 3 s of its own work"
    assert _first_line(seg[1]).startswith(f"not run: case {seg[0]['case']} of this implementation timed out")
    ew = _by(doc, "broken", "elementwise")
    assert ew["7-float32"]["status"] == "failed" and _first_line(ew["7-float32"]) == "worker died: SIGSEGV"
    assert ew["100003-float32"]["status"] == "failed"
    assert _first_line(ew["100003-float32"]) == "worker exited (code 0) without finishing"
    assert ew["1-float32"]["status"] == "ok" and ew["1001-float32"]["status"] == "ok"   # after the crash
    gemm = _by(doc, "broken", "gemm")["1x1x1-float32"]
    assert _first_line(gemm) == "RuntimeError: this implementation refuses to build"
    assert all(r["status"] == "ok" for r in doc["records"] if r["backend"] == "array_api")
    assert doc["run"]["complete"]
    # 40 MiB of prints: the log keeps its cap and says what it dropped
    log = tmp_path / "out" / "logs" / "broken[numpy].elementwise.log"
    assert log.stat().st_size < supervise.LOG_CAP_BYTES + (1 << 20)
    assert "bytes of output dropped" in log.read_text()


def test_retry_after_timeout_runs_the_rest(tmp_path, bad_backends, few_cases):
    doc = run_lab(tmp_path, backends_=["broken"], problems=["segreduce"], item_timeout=2, startup_timeout=60,
                  retry_after_timeout=True)
    seg = _by(doc, "broken", "segreduce").values()
    assert len(seg) == 2
    assert all(r["status"] == "failed" and _first_line(r) == "timed out after 2 s of its own work" for r in seg)


def test_case_json_round_trip():
    c = Case("x", "test", "float32", {"n": 3}, 4)
    assert Case(**c.to_json()) == c


def test_cheats_come_out_wrong(tmp_path, bad_backends):
    """A result replayed from the first call, work done in build(), an input used as scratch."""
    doc = run_lab(tmp_path, backends_=["cheat[numpy]"])
    rows = [r for r in doc["records"] if r["status"] != "not_applicable"]
    assert rows and all(r["status"] == "wrong" for r in rows), [(r["case"], r["status"]) for r in rows]
    for problem in ("elementwise", "gemm"):
        assert all("new values written into the same input arrays" in r["error"]
                   for r in rows if r["problem"] == problem)
    assert all("modified its input 'x'" in r["error"] for r in rows if r["problem"] == "segreduce")
