"""One hung implementation among correct ones under `ways run --jobs`: only it fails. Its neighbours'
clocks stop while they wait for the GPU it keeps, and what was in flight beside it is judged again on
a quiet GPU, saying so. On CPU with a fixture that keeps the lab's GPU lock as a spinning kernel keeps
the GPU; on a GPU node with a kernel that really spins (test_a_spinning_kernel_fails_alone)."""
import json
import time

import pytest

import problems
from tests.conftest import needs_gpu
from tests.test_cli import ways

LIMIT_S = 6       # the cases' time limit: the neighbours wait for the wedge longer than that


def _records(out):
    return json.loads((out / "results.json").read_text())["records"]


def test_only_the_hung_implementation_fails(tmp_path, bad_backends):
    out = tmp_path / "out"
    r = ways("run", "-p", "segreduce", "--cases", "test", "-b", "wedge", "-b", "lockstep", "--jobs", "4",
             "--timeout", str(LIMIT_S), "--no-compile", "--out", str(out))
    assert r.returncode == 0, r.stderr
    recs = _records(out)
    wedged = [x for x in recs if x["backend"] == "wedge"]
    assert wedged[0]["status"] == "failed" and "timed out after 6 s of its own work" in wedged[0]["error"]
    assert {x["status"] for x in wedged[1:]} == {"skipped"}
    neighbours = [x for x in recs if x["backend"] == "lockstep"]
    tests = [c for c in problems.get("segreduce").cases() if c.kind == "test"]
    assert len(neighbours) == 3 * len(tests)          # three variants, every test case (bfloat16: not applicable)
    assert all(x["status"] == ("not_applicable" if x["dtype"] == "bfloat16" else "ok") for x in neighbours), \
        [(x["variant"], x["case"], x["status"], x["error"][:200]) for x in neighbours if x["status"] != "ok"]
    again = [x for x in neighbours if "rerun" in x]
    assert again, "the cases in flight beside the hang are judged again"
    assert all("wedge" in x["rerun"]["why"] and x["rerun"]["first"] for x in again)


def test_a_neighbour_timed_out_beside_a_hang_is_judged_again(tmp_path, bad_backends):
    """A neighbour whose own clock ran out beside the hang (here: a limit shorter than its wait, the
    clock not stopped) is run again once the GPU is quiet, and its skipped cases with it."""
    from harness.run.judged_again import Watch
    watch = Watch()
    hung, beside = ("wedge", "", "segreduce", "1x1-float32"), ("lockstep", "a", "segreduce", "1x1-float32")
    later, alone = ("lockstep", "a", "segreduce", "64x1000-float32"), ("lockstep", "b", "segreduce", "1x1-float32")
    watch.began(alone)
    watch.ended(alone)
    time.sleep(0.01)
    since = time.monotonic()
    watch.began(hung)
    watch.began(beside)
    with watch.hanging(beside, since, "timed out"):
        assert watch.others_hanging(hung) and not watch.others_hanging(beside)
    watch.skipped(later, beside)
    with watch.hanging(hung, since, "timed out"):
        pass
    again = watch.beside_hangs()
    assert set(again) == {hung, beside, later}        # the first run of `alone` ended before either hang
    assert "wedge" in again[beside] and "lockstep[a]" in again[hung] and "judged again" in again[later]


def test_a_row_out_of_memory_beside_others_is_judged_again_alone(tmp_path, bad_backends, monkeypatch):
    """A row that ran out of GPU memory while other workers shared the GPU (--jobs) is run again
    alone, its record saying why and what its first run came to; run on one worker, nobody else held
    memory and the failure stands."""
    crowded = lambda recs: [x for x in recs if x["backend"] == "crowded" and x["dtype"] != "bfloat16"]  # noqa: E731
    sel = ["-p", "segreduce", "--cases", "test", "-b", "crowded", "-b", "lockstep[a]", "--no-compile"]
    monkeypatch.setenv("WAYS_TEST_CROWDED", str(tmp_path / "shared"))
    (tmp_path / "shared").mkdir()
    r = ways("run", *sel, "--jobs", "2", "--out", str(tmp_path / "shared-out"))
    assert r.returncode == 0, r.stderr
    rows = crowded(_records(tmp_path / "shared-out"))
    assert rows and all(x["status"] == "ok" for x in rows), [(x["case"], x["status"]) for x in rows]
    assert all("out of GPU memory" in x["rerun"]["why"] and "Out of memory" in x["rerun"]["first"] for x in rows)
    monkeypatch.setenv("WAYS_TEST_CROWDED", str(tmp_path / "alone"))
    (tmp_path / "alone").mkdir()
    r = ways("run", *sel, "--jobs", "1", "--out", str(tmp_path / "alone-out"))
    assert r.returncode == 0, r.stderr
    rows = crowded(_records(tmp_path / "alone-out"))
    assert rows and all(x["status"] == "failed" and "Out of memory" in x["error"] and "rerun" not in x for x in rows)


def test_the_default_time_limit_fits_the_case():
    from harness.run.plan import Options, time_limit
    from harness.run.registry import Impl
    from problems import get
    small, big = get("segreduce").case("1x1-float32"), get("segreduce").case("8192x32768-float32")
    fast, slow = Impl("array_api", "numpy", "segreduce"), Impl("nvmath_device", "", "segreduce")
    assert time_limit(fast, small, Options()) == pytest.approx(62.5)
    assert time_limit(fast, big, Options()) == pytest.approx(82.5, abs=0.1)
    assert time_limit(slow, small, Options()) > 400          # a build of minutes
    assert time_limit(slow, small, Options(item_timeout=30)) == 30


def test_a_window_scale_lengthens_the_time_limit_of_a_cases_timing(monkeypatch):
    """`timer-check --window-scale 4` times every window and batch four times as long: so may the case."""
    from harness.measure.stopping import WINDOW_SCALE_VAR
    from harness.run.plan import Options, time_limit
    from harness.run.registry import Impl
    from problems import get
    fast, small = Impl("array_api", "numpy", "segreduce"), get("segreduce").case("1x1-float32")
    monkeypatch.setenv(WINDOW_SCALE_VAR, "4")
    assert time_limit(fast, small, Options()) == pytest.approx(4 * 60 + 2.5)
    monkeypatch.setenv(WINDOW_SCALE_VAR, "0.5")            # shorter windows keep the usual limit
    assert time_limit(fast, small, Options()) == pytest.approx(62.5)


@needs_gpu
def test_a_spinning_kernel_fails_alone(tmp_path, bad_backends):
    """On the GPU: a CuPy kernel that spins for ever beside correct implementations of three tools."""
    out = tmp_path / "out"
    sel = ["-b", "spin[cupy]", "-b", "array_api[cupy]", "-b", "numba_simt", "-b", "triton"]
    r = ways("run", "-p", "segreduce", "--cases", "all", *sel, "--jobs", "4", "--timeout", "45",
             "--no-compile", "--out", str(out))
    assert r.returncode == 0, r.stderr
    recs = _records(out)
    assert [x["status"] for x in recs if x["backend"] == "spin"][0] == "failed"
    bad = [(x["backend"], x["case"], x["status"], x["error"][:200]) for x in recs
           if x["backend"] != "spin" and x["status"] not in ("ok", "not_applicable")]
    assert not bad, bad
