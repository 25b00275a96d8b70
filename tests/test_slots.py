"""`ways run --jobs N`: which job a free worker slot takes (harness/schedule/slots.py)."""
import pytest

import backends
from harness.run.plan import Job, first_build_s, slow_builder
from harness.run.registry import Impl
from harness.schedule.slots import Slots

KINDS = {"slow": lambda j: slow_builder(j.impl), "build_s": lambda j: first_build_s(j.impl)}


@pytest.fixture
def jobs(monkeypatch):
    """Three jobs of a slow builder (nvrtc, said to take 60-100 s a build) and three quick ones."""
    build_s = {"cutlass": 100.0, "": 60.0}
    monkeypatch.setattr(type(backends.get("nvrtc")), "first_build_s",
                        lambda self, problem: build_s[self.variant])
    slow = [Job(Impl("nvrtc", v, "gemm"), []) for v in ("", "cutlass", "")]
    fast = [Job(Impl("array_api", "numpy", p), []) for p in ("gemm", "segreduce", "elementwise")]
    return slow, fast


def test_slow_builders_get_their_own_slots_and_the_gpu_slots_stay_capped(jobs):
    slow, fast = jobs
    slots = Slots(slow + fast, gpu_slots=2, build_slots=1, **KINDS)
    assert slots.width == 3 and slots.count == 6
    first = [slots.take() for _ in range(3)]
    assert first == [("slow", slow[1]), ("fast", fast[0]), ("fast", fast[1])]    # slowest build first
    assert slots._pick() is None               # both kinds at their limits: a free thread waits
    slots.done("fast")
    assert slots.take() == ("fast", fast[2])
    slots.done("fast")
    slots.done("fast")
    # no quick job left: the slow builder's remaining jobs take the threads the GPU slots freed
    assert [slots.take() for _ in range(2)] == [("slow", slow[0]), ("slow", slow[2])]


def test_a_waiting_slot_gives_up_when_the_run_stops(jobs):
    slow, fast = jobs
    stop = []
    slots = Slots(fast, gpu_slots=1, build_slots=0, stopping=lambda: bool(stop), **KINDS)
    assert slots.width == 1 and slots.take() == ("fast", fast[0])
    stop.append(True)
    with pytest.raises(KeyboardInterrupt):
        slots.take()


def test_quick_runs_one_worker_per_implementation_longest_builds_first():
    """--quick: an implementation's problems share one worker (one start-up for its six cases)."""
    from harness.run.plan import Options, by_implementation, first_build_s, plan
    jobs = plan(Options(backends=["array_api[numpy]", "warp_tiles", "triton"], quick=True))
    merged = by_implementation(jobs)
    builds = [sum(first_build_s(p.impl) for p in (j, *j.also)) for j in merged]
    assert builds == sorted(builds, reverse=True) and builds[0] > builds[-1]
    for j in merged:
        parts = (j, *j.also)
        assert {p.impl.label for p in parts} == {j.impl.label}
        assert len({p.impl.problem for p in parts}) == len(parts)
    assert sorted((p.impl.label, p.impl.problem) for j in merged for p in (j, *j.also)) == \
        sorted((j.impl.label, j.impl.problem) for j in jobs)
