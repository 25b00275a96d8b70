"""How busy a run's cores were (harness/schedule/cpu_load.py): /proc/stat read per usable core."""
import sys
import time

import pytest

from harness.schedule import cpu_load

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/stat (Linux)")


def test_reads_only_the_usable_cores(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    stat.write_text("cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 5 0 5 40 0 0 0 0 0 0\ncpu1 30 0 10 0 0 0 0 0 0 0\n"
                    "intr 1 2\nprocs_running 7\n")
    monkeypatch.setattr(cpu_load, "STAT", stat)
    per, running = cpu_load._read({1})
    assert per == {1: (40, 40)} and running == 7


def test_a_busy_loop_shows_as_load():
    import os
    before = os.sched_getaffinity(0)
    core = sorted(before)[0]
    os.sched_setaffinity(0, {core})
    try:
        with cpu_load.CpuLoad([core], every_s=0.1) as load:
            end = time.perf_counter() + 0.6
            while time.perf_counter() < end:
                pass
    finally:
        os.sched_setaffinity(0, before)
    s = load.summary()
    assert s["samples"] >= 3 and s["busy_mean"] > 0.5 and s["runnable_max"] >= 1 and s["cores"] == 1
    assert "cores busy on average" in cpu_load.line(s)
