"""On a GPU: a faulting kernel is contained (its cases 'failed', the rest of the sweep runs), and
the array-API rows time their bench cases with the lab's engine."""
import pytest

from tests.conftest import needs_gpu, run_lab

pytestmark = [needs_gpu]


def test_illegal_memory_access_is_contained(tmp_path, bad_backends):
    pytest.importorskip("cupy", reason="the fault fixture is written with CuPy")
    doc = run_lab(tmp_path, backends_=["gpufault"], problems=["segreduce", "elementwise"])
    seg = [r for r in doc["records"] if r["problem"] == "segreduce" and r["status"] != "not_applicable"]
    ew = [r for r in doc["records"] if r["problem"] == "elementwise" and r["status"] != "not_applicable"]
    assert seg and all(r["status"] == "failed" for r in seg)
    assert any("illegal" in r["error"].lower() for r in seg), seg[0]["error"][-800:]
    assert ew and all(r["status"] == "ok" for r in ew)
    assert doc["run"]["complete"]


def _only(monkeypatch, names):
    from harness.run import registry
    real = registry.cases_for
    monkeypatch.setattr(registry, "cases_for",
                        lambda p, kinds, custom=None: [c for c in real(p, kinds, custom) if c.name in names])


def test_uploads_on_another_stream_come_out_ok(tmp_path, bad_backends, monkeypatch):
    """CuPy copies on a non-blocking stream of its own, the kernel runs on the lab's: the whole-
    device synchronization makes the correct axpy 'ok', on a test case and the 1 GiB bench case."""
    pytest.importorskip("cupy", reason="the fixture is written with CuPy")
    _only(monkeypatch, {"1001-float32", "268435456-float32"})
    doc = run_lab(tmp_path, backends_=["sidestream[cupy]"], problems=["elementwise"], kinds=("test", "bench"))
    rows = [r for r in doc["records"] if r["backend"] == "sidestream"]
    assert {r["case"] for r in rows} == {"1001-float32", "268435456-float32"}
    assert all(r["status"] == "ok" for r in rows), [r["error"][:300] for r in rows]


def test_cheats_on_the_gpu_come_out_wrong_or_suspect(tmp_path, bad_backends, monkeypatch):
    """A replayed axpy (150% of the copy) is wrong; row sums on a private stream pass the check
    but their timing is suspect, in every view."""
    pytest.importorskip("cupy", reason="the fixtures are written with CuPy")
    from harness.report import markdown
    from harness.report.terminal import print_summary
    from harness.results import records
    _only(monkeypatch, {"268435456-float32", "8192x32768-float32"})
    doc = run_lab(tmp_path, backends_=["cheat[cupy]", "offstream"], problems=["elementwise", "segreduce"],
                  kinds=("bench",))
    [replay] = [r for r in doc["records"] if r["backend"] == "cheat" and r["problem"] == "elementwise"]
    assert replay["status"] == "wrong" and "new values written into the same input arrays" in replay["error"]
    [hidden] = [r for r in doc["records"] if r["backend"] == "offstream"]
    assert hidden["status"] == "ok" and hidden["timing"]["suspect"], (hidden["error"][-3000:], hidden["timing"])
    assert records.flag(hidden) == "suspect"
    text = markdown.markdown(doc)
    assert "**SUSPECT**" in text.split("## Headline")[1].split("\n## ")[0] and "**WRONG**" in text
    csv_text = (tmp_path / "out" / "summary.csv").read_text()
    assert ",suspect," in csv_text and ",wrong," in csv_text
    print_summary(doc)
    assert markdown.per_impl(doc["records"])[("segreduce", "offstream[cupy]")]["best_pct"] is None


def test_both_timing_modes_carry_their_clock(tmp_path, monkeypatch):
    """Each timed case has a cold and a sustained figure with the mean SM clock of each."""
    pytest.importorskip("torch")
    _only(monkeypatch, {"8192x32768-float32"})
    doc = run_lab(tmp_path, backends_=["array_api[torch]"], problems=["segreduce"], kinds=("bench",))
    [r] = [r for r in doc["records"] if r["variant"] == "torch"]
    t = r["timing"]
    assert r["status"] == "ok" and t["device_ms_cold"] > 0 and t["device_ms_sustained"] > 0
    assert t["sustained"]["calls"] >= 10 and t["sustained"]["sm_clock_mhz"] > 0, t["sustained"]
    assert t["cold"]["sm_clock_mhz"] > 0 and t["pct_of_peak_sustained"] > 50
