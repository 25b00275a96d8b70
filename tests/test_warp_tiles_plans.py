"""Every kind of plan the Warp tile kernels can take (not only the one measured best, which
test_simulators runs through the harness), checked against the float64 reference on Warp's CPU
device with the lab's Session: poisoned outputs, fresh inputs, odd shapes."""
import pytest

pytest.importorskip("warp")

import problems                                              # noqa: E402
from backends.base import Unavailable                        # noqa: E402
from backends.warp_tiles import attention, elementwise, gemm, segreduce  # noqa: E402
from harness.run.session import Session                      # noqa: E402

P, S, E, A = gemm.Tiles, segreduce.Plan, elementwise.Plan, attention.Plan
PLANS = [
    ("gemm", "129x257x65-bfloat16", {"tiles": P(64, 64, 32, 128)}),
    ("gemm", "129x257x65-float16", {"tiles": P(32, 64, 16, 64)}),
    ("gemm", "129x257x65-float32", {"tiles": P(64, 32, 16, 64)}),
    ("gemm", "129x257x65-float32", {"tiles": P(64, 64, 32, 64, mathdx=False)}),
    ("segreduce", "37x4097-float32", {"plan": S("shared", 1, 1024, 64)}),
    ("segreduce", "3x4097-bfloat16", {"plan": S("prefetch", 1, 1024, 64)}),
    ("segreduce", "1000x1-float32", {"plan": S("prefetch", 1, 256, 32)}),
    ("segreduce", "64x1000-float32", {"plan": S("loop", 6, 1024, 32)}),    # a partial last block
    ("segreduce", "64x1000-float16", {"plan": S("loop", 4, 4096, 32)}),
    ("elementwise", "100003-float16", {"plan": E(256, 1024, 128)}),     # 2-D body and a 1-D tail
    ("elementwise", "1001-bfloat16", {"plan": E(1024, 2048, 64)}),      # all tail
    ("elementwise", "1048579-float32", {"plan": E(0, 4096, 256)}),
    # whole 16-byte-aligned tiles: loads without bounds or alignment checks (aligned=True)
    ("segreduce", {"rows": 5, "cols": 8192}, {"plan": S("shared", 1, 4096, 128)}),
    ("segreduce", {"rows": 5, "cols": 8192}, {"plan": S("shared", 1, 2048, 64)}),
    ("elementwise", {"n": 65536 + 7}, {"plan": E(256, 2048, 64)}),
    # query and key blocks of different sizes: a causal block's last key blocks lie inside it (BM > BN)
    # or cross past its last query (BM < BN)
    ("attention", "2x2x127x64-causal-bfloat16", {"plan": A(32, 16, 64)}),
    ("attention", "1x2x1000x64-causal-float16", {"plan": A(16, 64, 64)}),
    ("attention", "2x1x127x128-full-float16", {"plan": A(64, 32, 128)}),
]


@pytest.fixture(scope="module")
def session():
    try:
        return Session("warp_tiles", "cpu")
    except Unavailable as why:
        pytest.skip(str(why))


@pytest.mark.parametrize("problem,case,options", PLANS, ids=[f"{p}-{c}-{o}" for p, c, o in PLANS])
def test_plan_on_cpu(session, problem, case, options):
    prob = problems.get(problem)
    c = prob.case(case) if isinstance(case, str) else prob.custom_case(case, "bfloat16")
    b = session.prepare(prob, c, seed=123, **options)
    got, _ = session.call(b.run, b.outputs)
    prob.check(session.fetch(got), b.ref, c)        # the assertion: CheckError on a mismatch or poison


@pytest.mark.parametrize("problem,case", [("gemm", "129x257x65-float32"), ("segreduce", "37x4097-float32"),
                                          ("elementwise", "100003-float16"),
                                          ("attention", "1x2x17x64-causal-float16")])
def test_compiles_with_the_gpu_released(session, problem, case, monkeypatch, tmp_path):
    """Warp compiles a module at its first launch_tiled: build() must compile it first, inside
    compiling(), or the compile (24 s for a cuBLASDx GEMM) holds the GPU that other workers' timers
    wait for (`ways run --jobs`)."""
    import warp as wp

    from harness.schedule.gpu_lock import LOCK, NONE
    monkeypatch.setattr(LOCK, "path", str(tmp_path / "gpu.lock"))
    seen, load, launch = [], wp.load_module, wp.launch_tiled

    def loading(*args, **kwargs):
        seen.append(("load", LOCK.mode))
        return load(*args, **kwargs)

    def launching(*args, **kwargs):
        seen.append(("launch", LOCK.mode))
        return launch(*args, **kwargs)
    monkeypatch.setattr(wp, "load_module", loading)
    monkeypatch.setattr(wp, "launch_tiled", launching)
    prob = problems.get(problem)
    session.prepare(prob, prob.case(case), seed=5)
    assert seen and seen[0] == ("load", NONE), seen
    assert all(mode == NONE for what, mode in seen if what == "load"), seen


def test_each_attention_kernel_gets_a_worker_and_time_for_its_build():
    """Warp compiles an attention kernel per dtype, head dim and mask (66 s cold with cuBLASDx): a
    `--jobs` run gives each its own worker, and each case a time limit that holds such a build."""
    import problems
    from harness.run.plan import Job, Options, shards, time_limit
    from harness.run.registry import Impl
    impl = Impl("warp_tiles", "", "attention")
    cases = problems.get("attention").cases()
    parts = shards(Job(impl, cases))
    keys = {(c.dtype, c.shape["D"], c.shape["causal"]) for c in cases}
    assert len(parts) == len(keys) and sorted(len(p.cases) for p in parts) == sorted(
        sum(1 for c in cases if (c.dtype, c.shape["D"], c.shape["causal"]) == k) for k in keys)
    assert all(time_limit(impl, c, Options()) > 2 * 66 for c in cases)
