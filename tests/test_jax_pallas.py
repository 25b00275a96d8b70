"""jax_pallas without a GPU, beyond what test_simulators runs through the harness: every case
(bench ones too) lowered for an abstract H100, and the Mosaic GPU kernels on tile-aligned shapes
in JAX's GPU interpreter (of the lab's test cases only attention's S = 1000 ones are aligned for them,
and they are slow to interpret)."""
import functools
import importlib.util

import numpy as np
import pytest

import problems

pytestmark = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax not installed")


@pytest.fixture(autouse=True)
def cpu_only(monkeypatch):
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")


@pytest.mark.parametrize("problem", ["elementwise", "segreduce", "gemm", "attention", "scan", "gemm_fp8"])
@pytest.mark.parametrize("variant", ["", "mosaic_gpu"])
def test_every_case_lowers_for_h100(problem, variant):
    import backends
    if variant not in backends.get("jax_pallas").variants_of(problem):
        pytest.skip(f"jax_pallas[{variant}] has no {problem} kernel")
    from backends.jax_pallas import lower_for_h100
    supports = getattr(importlib.import_module(f"backends.jax_pallas.{problem}"), "supports", None)
    lowered = 0
    for case in problems.get(problem).cases():
        if supports and supports(case, variant):
            continue
        text = lower_for_h100(problem, case, variant).as_text()
        assert ("mosaic_gpu" if variant else "__gpu$xla.gpu.triton") in text
        lowered += 1
    assert lowered


def test_mosaic_gpu_fp8_gemm_lowers_to_e4m3_wgmma():
    """Mosaic GPU's lowering goes down to the PTX of its wgmma: the FP8 GEMM's is e4m3 x e4m3 into fp32."""
    from backends.jax_pallas import lower_for_h100
    text = lower_for_h100("gemm_fp8", problems.get("gemm_fp8").case("8192x8192x8192-e4m3-blockwise"),
                          "mosaic_gpu").as_text()
    assert "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3" in text


def _jax_at_least(major, minor):
    from backends.jax_pallas import _jax_version
    return _jax_version() >= (major, minor)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_mosaic_gpu_kernels_in_the_interpreter(monkeypatch, dtype):
    monkeypatch.setenv("WAYS_PALLAS_INTERPRET", "1")
    if not _jax_at_least(0, 11):
        pytest.skip("JAX < 0.11's GPU interpreter does not simulate TMA bounds")
    import jax
    import jax.numpy as jnp
    from backends.jax_pallas import gemm, segreduce
    rng = np.random.default_rng(0)
    dt = getattr(jnp, dtype)
    a = jnp.asarray(rng.uniform(-1, 1, (136, 192)), dt)       # M % 8, K % 64: a partial M tile
    b = jnp.asarray(rng.uniform(-1, 1, (192, 128)), dt)
    c = jax.jit(functools.partial(gemm.matmul, variant="mosaic_gpu"))(a, b)
    ref = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    np.testing.assert_allclose(np.asarray(c, np.float64), ref, rtol=2e-2, atol=2e-2)
    x = jnp.asarray(rng.uniform(-1, 1, (72, 320)), dt)        # a partial 64-row block, 5 column tiles
    y = jax.jit(functools.partial(segreduce.row_sum, variant="mosaic_gpu"))(x)
    np.testing.assert_allclose(np.asarray(y), np.asarray(x, np.float64).sum(1), rtol=1e-5, atol=1e-4)


def test_mosaic_gpu_elementwise_takes_only_whole_16_byte_tails():
    """On the H100 the Mosaic GPU elementwise left the last n mod 4 fp32 (mod 8 16-bit) elements
    unwritten: those cases are not applicable, the aligned ones (the bench cases) stay."""
    from backends.jax_pallas.elementwise import supports
    from problems.base import Case
    def case(n, dtype):
        return Case(f"{n}-{dtype}", "test", dtype, {"n": n}, 0)
    assert "16-byte" in supports(case(1001, "float32"), "mosaic_gpu")
    assert "16-byte" in supports(case(1004, "bfloat16"), "mosaic_gpu")
    assert supports(case(1004, "float32"), "mosaic_gpu") is None
    assert supports(case(2**28, "float16"), "mosaic_gpu") is None


@pytest.mark.parametrize("causal", [0, 1])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_mosaic_gpu_attention_in_the_interpreter(monkeypatch, dtype, causal):
    """The warp-specialised kernel (memory warpgroup, K/V ring, turns, the causal early end) on
    S = 136: a partial key tile and a query block half past S, checked against the problem's own
    bound. The interpreter runs P V as a jnp.dot (it has no run_state, no wgmma from registers)."""
    monkeypatch.setenv("WAYS_PALLAS_INTERPRET", "1")
    if not _jax_at_least(0, 11):
        pytest.skip("JAX < 0.11's GPU interpreter does not simulate TMA bounds")
    import jax
    from backends.jax_pallas import attention, jax_dtype
    from problems.attention import _case
    from problems.base import decode
    problem = problems.get("attention")
    case = _case("test", 1, 2, 136, 64, causal, dtype)
    inputs = problem.make_inputs(case, seed=3)
    q, k, v = (jax.numpy.asarray(decode(inputs[n], dtype, np.float32)).astype(jax_dtype(dtype)) for n in "qkv")
    o = jax.jit(functools.partial(attention.attention, causal=bool(causal), variant="mosaic_gpu"))(q, k, v)
    expected = problem.reference(case, inputs)["o"]
    err = np.abs(np.asarray(o, np.float64) - expected.value)
    worst = (err / expected.bound).max()
    assert (err <= expected.bound).all(), f"max |err| {err.max():.3e}, worst err/bound {worst:.2f}"


def test_mosaic_gpu_attention_takes_whole_8_row_tiles():
    from backends.jax_pallas.attention import supports
    from problems.attention import _case
    for s in (1, 17, 127):
        assert "8-row" in supports(_case("test", 1, 1, s, 64, 1, "bfloat16"), "mosaic_gpu")
    assert supports(_case("test", 1, 1, 1000, 128, 0, "float16"), "mosaic_gpu") is None
    assert supports(_case("test", 1, 1, 17, 64, 1, "bfloat16"), "") is None


@pytest.mark.parametrize("name", ["1-float32", "1000-float32", "4097-float16", "1048579-bfloat16"])
def test_one_pass_scan_in_the_interpreter(monkeypatch, name):
    """The look-back scan (build's one_pass, a knob_sweep candidate beside the default two passes)
    in Pallas's interpreter, through the sweep's own build-and-check: the interpreter runs the
    programs one by one in ticket order, so each finds its predecessor's prefix; the waits and the
    windows further back are the GPU's to exercise."""
    monkeypatch.setenv("WAYS_PALLAS_INTERPRET", "1")
    import problems
    from harness.run.session import Session
    from tools.sweep import build_and_check
    s, prob = Session("jax_pallas", ""), problems.get("scan")
    case = prob.case(name)
    build_and_check(s, "scan", case, s.arrays(prob, case, 0), {"one_pass": True, "block": 256})


def test_one_pass_scan_lowers_for_h100():
    """The look-back scan's atomics, spin loop and volatile loads lower to Triton IR for every case."""
    from backends.jax_pallas import lower_for_h100
    for case in problems.get("scan").cases():
        assert "__gpu$xla.gpu.triton" in lower_for_h100("scan", case, "", one_pass=True).as_text()
