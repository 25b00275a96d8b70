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


def test_workers_start_only_while_the_gpu_holds_what_they_need():
    """A job starts while the running workers and it need no more than the budget (the first in line
    that fits goes first); one that fits in no share runs once nothing else does, alone."""
    need = {"a": 60, "b": 60, "c": 30, "d": 120}
    jobs = [Job(Impl("array_api", "numpy", p), []) for p in ("a", "b", "c", "d")]
    slots = Slots(jobs, gpu_slots=4, build_slots=0, need=lambda j: need[j.impl.problem], budget=100)
    by = {j.impl.problem: j for j in jobs}
    assert slots.take() == ("fast", by["a"]) and slots.take() == ("fast", by["c"])     # b would make 120
    assert slots._pick() is None and slots.held == 90
    slots.done("fast", by["a"])
    assert slots.take() == ("fast", by["b"]) and slots._pick() is None               # d waits for an idle GPU
    slots.done("fast", by["b"])
    slots.done("fast", by["c"])
    assert slots.held == 0 and slots.take() == ("fast", by["d"])


def test_a_jobs_memory_need_comes_from_its_cases_and_its_tool():
    """array_api's materialised attention holds the float32 S matrix three times over; a fused
    kernel only the case's arrays (and a compute-bound case's adjacent reference's copy)."""
    import problems
    from harness.run.plan import MEMORY_MARGIN, WORKER_BYTES, memory_need
    case = problems.get("attention").case("4x32x4096x128-full-bfloat16")
    arrays = problems.get("attention").footprint(case)
    fused = memory_need(Job(Impl("triton", "", "attention"), [case]))
    materialised = memory_need(Job(Impl("array_api", "cupy", "attention"), [case]))
    assert fused == WORKER_BYTES + int(MEMORY_MARGIN * 2 * arrays)
    assert materialised == WORKER_BYTES + int(MEMORY_MARGIN * (2 * arrays + 3 * 4 * 32 * 4096 * 4096 * 4))
