"""FP8 GEMM with block scales: the e4m3 codec, and the check against the right and wrong ways to
compute it (a model of the FP8 MMA's truncating accumulator, promoted to float32 or never)."""
import numpy as np
import pytest

import problems
from problems.base import E4M3_VALUES, CheckError, decode, encode, negate
from problems.gemm_fp8 import BLOCK, MMA_ACCUMULATOR_BITS, MMA_K, PROMOTE_K, dequantized, expand
from tests.conftest import ROOT

P = problems.get("gemm_fp8")
LONG_K = ("64x72x16384-e4m3-blockwise", "64x72x16384-e4m3-tensorwise")


def test_e4m3_decodes_and_rounds_as_ml_dtypes_does():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    theirs = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    assert np.array_equal(np.isnan(theirs), np.isnan(E4M3_VALUES))
    assert np.array_equal(theirs[~np.isnan(theirs)], E4M3_VALUES[~np.isnan(theirs)])
    rng = np.random.default_rng(0)
    x = rng.normal(size=100_000) * np.exp2(rng.uniform(-12, 10, 100_000))      # subnormals to saturation
    theirs_bits = np.clip(x, -448, 448).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    assert np.array_equal(encode(x, "float8_e4m3"), theirs_bits)


def test_e4m3_round_trip_negation_and_saturation():
    values = np.array([0.0, 1.5, -3.0, 448.0, 2.0**-9, 1e6, -1e6])
    back = decode(encode(values, "float8_e4m3"), "float8_e4m3")
    assert list(back) == [0.0, 1.5, -3.0, 448.0, 2.0**-9, 448.0, -448.0]
    assert list(decode(negate(encode(values[:3], "float8_e4m3"), "float8_e4m3"), "float8_e4m3")) == [-0.0, -1.5, 3.0]
    assert np.isnan(decode(encode(np.array([np.nan]), "float8_e4m3"), "float8_e4m3")[0])


def test_inputs_are_scaled_per_tile_and_fit_e4m3():
    case = P.case("129x257x256-e4m3-blockwise")
    x = P.make_inputs(case, 0)
    assert x["a"].dtype == np.uint8 and x["a_scale"].shape == (129, 2) and x["b_scale"].shape == (3, 2)
    a, b = dequantized(x, case)
    assert a.shape == (129, 256) and b.shape == (257, 256)
    assert np.abs(E4M3_VALUES[x["b"]]).max() <= 448 and len(np.unique(x["b_scale"])) == x["b_scale"].size
    np.testing.assert_array_equal(expand(x["b_scale"], 257, BLOCK)[256, 128:], x["b_scale"][2, 1])
    assert P.work(case) == (129 * 256 + 257 * 256 + 4 * (129 * 2 + 3 * 2) + 2 * 129 * 257, 2 * 129 * 257 * 256)


def _truncated(x, bits=MMA_ACCUMULATOR_BITS):
    mantissa, exponent = np.frexp(x)
    return np.ldexp(np.trunc(mantissa * 2.0**bits) / 2.0**bits, exponent)


def tensor_cores(case, inputs, promote_every):
    """C as the FP8 MMA computes it (the problem's docstring, steps 1-3): each MMA_K slice of products
    added into an accumulator truncated to MMA_ACCUMULATOR_BITS, which joins a float32 sum every
    `promote_every` of K; the result rounded to bfloat16."""
    a, b = dequantized(inputs, case)
    total, acc = np.zeros((a.shape[0], b.shape[0]), np.float32), 0.0
    for k0 in range(0, a.shape[1], MMA_K):
        acc = _truncated(acc + a[:, k0:k0 + MMA_K] @ b[:, k0:k0 + MMA_K].T)
        if (k0 + MMA_K) % promote_every == 0:
            total += np.float32(acc)
            acc = 0.0
    return {"c": encode(total + np.float32(acc), "bfloat16")}


@pytest.mark.parametrize("name", LONG_K + ("129x257x256-e4m3-blockwise",))
def test_a_kernel_that_promotes_to_float32_passes(name):
    case = P.case(name)
    inputs = P.make_inputs(case, 0)
    assert P.check(tensor_cores(case, inputs, PROMOTE_K), P.reference(case, inputs), case).ok


@pytest.mark.parametrize("name", LONG_K)
def test_a_kernel_that_never_promotes_fails_on_a_long_k(name):
    case = P.case(name)
    inputs = P.make_inputs(case, 0)
    with pytest.raises(CheckError, match="compared elements off"):
        P.check(tensor_cores(case, inputs, case.shape["K"]), P.reference(case, inputs), case)


def _wrong(case, inputs, **scales):
    """The exact product of the dequantized inputs with some scales replaced, in bfloat16."""
    a, b = dequantized({**inputs, **scales}, case)
    return {"c": encode((a @ b.T).astype(np.float32), "bfloat16")}


def test_a_dropped_scale_and_a_tensorwise_scale_on_blocks_fail():
    case = P.case("200x264x384-e4m3-blockwise")
    x = P.make_inputs(case, 1)
    ref = P.reference(case, x)
    assert P.check(_wrong(case, x), ref, case).ok                                       # all scales: right
    for wrong in ({"b_scale": np.ones_like(x["b_scale"])},                              # B's scale dropped
                  {"b_scale": np.full_like(x["b_scale"], x["b_scale"][0, 0])},          # one scale for B's blocks
                  {"a_scale": np.full_like(x["a_scale"], x["a_scale"][0, 0])}):         # one for A's tiles
        with pytest.raises(CheckError):
            P.check(_wrong(case, x, **wrong), ref, case)


def test_k_must_fill_the_scales_tiles():
    with pytest.raises(ValueError, match="multiple of 128"):
        P.custom_case({"M": 8, "N": 8, "K": 100, "blockwise": 1}, "e4m3")
    assert P.custom_case({"M": 8, "N": 8, "K": 256, "blockwise": 0}, "fp8").dtype == "float8_e4m3"


def test_the_vendor_row_hands_cublaslt_the_layouts_its_block_scaling_takes(monkeypatch):
    """torch_scaled_mm on the CPU, F.scaled_mm replaced by what cuBLASLt's block scaling computes from
    the layouts it takes (A's scales (M4, L) outer-dim-major, B's (L4, ceil(N / 128)) K-major, M a
    multiple of 4, N of 16): the padding and the layouts give the reference's C on ragged cases."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    import backends

    def cublaslt(a8, b8, a_s, recipe_a, b_s, recipe_b, output_dtype):
        assert a8.shape[0] % 4 == 0 and b8.shape[1] % 16 == 0 and b8.stride(0) == 1    # B given as (K, N), K-major
        a, b = a8.float(), b8.float()
        if recipe_a == F.ScalingType.TensorWise:
            return (a @ b * a_s * b_s).to(output_dtype)
        k_blocks = a.shape[1] // BLOCK
        assert a_s.stride(0) == 1 and b_s.shape[0] % 4 == 0 and b_s.stride(0) == 1
        a = a * a_s[:, :k_blocks].repeat_interleave(BLOCK, dim=1)
        per_block = b_s[:k_blocks].repeat_interleave(BLOCK, dim=0).repeat_interleave(BLOCK, dim=1)
        return (a @ (b * per_block[:, :b.shape[1]])).to(output_dtype)

    monkeypatch.setattr(F, "scaled_mm", cublaslt)
    impl = backends.implementation("torch_scaled_mm", "gemm_fp8")
    for name in ("129x257x256-e4m3-blockwise", "1x264x128-e4m3-blockwise", "200x264x384-e4m3-tensorwise"):
        case = P.case(name)
        host = P.make_inputs(case, 0)
        got = impl.build(case, {k: torch.from_numpy(v) for k, v in host.items()}, {}, None)()["c"]
        out = got.contiguous().view(torch.int16).numpy().view(np.uint16)
        assert P.check({"c": out}, P.reference(case, host), case).ok, name


TRITON_FP8_IN_THE_INTERPRETER = r'''
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
import numpy as np, torch, triton
import problems
from triton.tools.tensor_descriptor import TensorDescriptor
from backends.triton.gemm_fp8 import BK, scaled_matmul, scaled_matmul_tma
p = problems.get("gemm_fp8")
scaled_matmul_tma.configs = scaled_matmul_tma.configs[:1]         # one config: the interpreter is slow
for case in (c for c in p.cases() if c.kind == "test"):
    inputs = p.make_inputs(case, case.seed)
    m, n = case.shape["M"], case.shape["N"]
    a, b = (torch.from_numpy(inputs[x]) for x in ("a", "b"))
    a_scale, b_scale = (torch.from_numpy(inputs[x]) for x in ("a_scale", "b_scale"))
    strides = (*a_scale.stride(), *b_scale.stride()) if case.shape["blockwise"] else (0, 0, 0, 0)
    grid = lambda meta: (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)
    descs = [TensorDescriptor.from_tensor(x.view(torch.float8_e4m3fn), [1, 1]) for x in (a, b)]
    for kernel, operands in ((scaled_matmul, (a, b)), (scaled_matmul_tma, descs)):
        c = torch.full((m, n), float("nan"))
        kernel[grid](*operands, c, a_scale, b_scale, m, n, case.shape["K"], *strides, BK=BK)
        bits = c.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)     # to nearest, as a GPU stores
        assert p.check({"c": bits}, p.reference(case, inputs), case).ok, case.name
        print(case.name, "ok")
'''


def test_tritons_fp8_kernel_sums_right_in_the_interpreter(tmp_path):
    """backends/triton/gemm_fp8.py's kernels (pointers, and the `tma` variant's descriptors) in Triton's
    interpreter, every test case: each one's float32 C,
    rounded to bfloat16 to nearest as a GPU stores it, passes the problem's check (the interpreter
    itself rounds toward zero, so the lab's run there leaves the case out and says so)."""
    import subprocess
    import sys
    pytest.importorskip("triton", reason="triton not installed (pip install '.[triton]')")
    pytest.importorskip("torch", reason="torch not installed")
    script = tmp_path / "fp8.py"
    script.write_text(TRITON_FP8_IN_THE_INTERPRETER)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count(" ok") == 2 * sum(c.kind == "test" for c in P.cases())      # both kernels


HELION_FP8_IN_THE_INTERPRETER = r'''
import os
os.environ["TRITON_INTERPRET"] = "1"
import helion, numpy as np, torch
import problems
from backends.helion import interpreter_stand_ins
from backends.helion.gemm_fp8 import blockwise, fixed, tensorwise
interpreter_stand_ins()
p = problems.get("gemm_fp8")
for case in (c for c in p.cases() if c.kind == "test"):
    m, n, k = case.shape["M"], case.shape["N"], case.shape["K"]
    if m * n * k > 2**25:                    # the interpreter runs a program's tiles as NumPy: minutes
        continue
    inputs = p.make_inputs(case, case.seed)
    a, b = (torch.from_numpy(inputs[x]).view(torch.float8_e4m3fn) for x in ("a", "b"))
    a_scale, b_scale = (torch.from_numpy(inputs[x]) for x in ("a_scale", "b_scale"))
    kernel = helion.kernel(blockwise if case.shape["blockwise"] else tensorwise, config=fixed(), static_shapes=True)
    c = torch.full((m, n), float("nan"))
    kernel(a, b, a_scale, b_scale, c)
    bits = c.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)     # to nearest, as a GPU stores
    assert p.check({"c": bits}, p.reference(case, inputs), case).ok, case.name
    print(case.name, "ok")
'''


def test_helions_fp8_kernels_sum_right_in_the_interpreter(tmp_path):
    """backends/helion/gemm_fp8.py's kernels (blockwise and tensorwise) in Triton's interpreter, the small
    test cases: each one's float32 C, rounded to bfloat16 to nearest as a GPU stores it, passes the
    problem's check (the interpreter itself rounds toward zero, so the lab's run there leaves it out)."""
    import subprocess
    import sys
    pytest.importorskip("helion", reason="helion not installed (pip install '.[helion]')")
    script = tmp_path / "fp8.py"
    script.write_text(HELION_FP8_IN_THE_INTERPRETER)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    small = [c for c in P.cases() if c.kind == "test" and c.shape["M"] * c.shape["N"] * c.shape["K"] <= 2**25]
    assert out.stdout.count(" ok") == len(small) and any(not c.shape["blockwise"] for c in small)
