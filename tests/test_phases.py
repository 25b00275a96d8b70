"""Where a run's time goes: phases are timed exclusively (nested ones stop the outer clock), and
a run's results.json accounts for its whole wall time by phase, workers' phases included."""
import json
import time

from harness.measure.phases import Phases
from tests.test_cli import ways


def test_nested_phases_are_exclusive():
    p = Phases()
    with p("outer"):
        time.sleep(0.03)
        with p("inner"):
            time.sleep(0.1)
        time.sleep(0.03)

    @p.timed("decorated")
    def f():
        time.sleep(0.02)
    f()
    assert 0.1 <= p.seconds["inner"] < 0.15
    assert 0.06 <= p.seconds["outer"] < 0.1          # the inner 0.1 s is not counted twice
    assert 0.02 <= p.seconds["decorated"] < 0.05
    assert list(p.as_dict()) == ["inner", "outer", "decorated"]      # largest first


def test_run_accounts_for_its_wall_time_by_phase(tmp_path):
    out = tmp_path / "out"
    r = ways("run", "-p", "segreduce", "-b", "array_api[numpy]", "--case", "64x1000-float32",
             "--case", "1048576x256-float32", "--compile-repeats", "1", "--out", str(out))
    assert r.returncode == 0, r.stderr
    run = json.loads((out / "results.json").read_text())["run"]
    phases = run["phases"]
    for name in ("inputs and float64 references", "uploads", "builds", "checked calls", "checks",
                 "sampling (cold)", "compile-time processes", "worker processes (start, pipe, unaccounted)"):
        assert phases[name] > 0, name
    assert abs(sum(phases.values()) - run["duration_s"]) < 0.05 * run["duration_s"] + 0.1
    assert "where the time went" in r.stdout


def test_the_profile_names_the_next_cut():
    """The workers' largest phase of their own work, the GPU wait left out (it shrinks as others do)."""
    from harness.report.terminal import next_cut
    from harness.schedule.gpu_lock import WAIT_PHASE
    line = next_cut({WAIT_PHASE: 1989.0, "builds": 424.0, "checks": 329.0})
    assert line == "next cut: builds, 424 s of the workers' 753 s of their own work"
    assert next_cut({}) is None
