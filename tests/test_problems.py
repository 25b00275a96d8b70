"""Problem specs: dtypes, references and the check (which must catch wrong data)."""
import numpy as np
import pytest

import problems
from problems.base import CheckError, decode, dtype_of, encode, poison


def test_bfloat16_round_trip_and_rounding():
    values = np.array([1.0, -2.5, 3.140625, 1e-3, 65504.0], dtype=np.float32)
    bits = encode(values, "bfloat16")
    assert bits.dtype == np.uint16
    back = decode(bits, "bfloat16")
    assert np.all(np.abs(back - values) <= np.abs(values) * 2.0**-8)
    assert decode(encode(np.array([1.0 + 2.0**-9], np.float32), "bfloat16"), "bfloat16")[0] == 1.0  # ties to even


def test_poison_is_nan_in_every_dtype():
    for dt in ("float32", "float16", "bfloat16"):
        assert np.isnan(decode(poison((3,), dt), dt)).all()


@pytest.mark.parametrize("alias,name", [("bf16", "bfloat16"), ("FP16", "float16"), ("fp32", "float32")])
def test_dtype_aliases(alias, name):
    assert dtype_of(alias).name == name


def test_unknown_dtype_lists_valid_names():
    with pytest.raises(ValueError, match="bfloat16"):
        dtype_of("int8")


@pytest.mark.parametrize("name", problems.names())
def test_cases_are_named_seeded_and_cover_both_kinds(name):
    p = problems.get(name)
    cases = p.cases()
    assert len({c.name for c in cases}) == len(cases)
    assert {c.kind for c in cases} == {"test", "bench"}
    assert p.case(p.compile_case_name).kind == "test"
    a = p.make_inputs(cases[0], 1)
    b = p.make_inputs(cases[0], 1)
    c = p.make_inputs(cases[0], 2)
    key = next(k for k, v in a.items() if isinstance(v, np.ndarray))
    assert np.array_equal(a[key], b[key]) and not np.array_equal(a[key], c[key]) or a[key].size == 1


def test_required_case_shapes_exist():
    seg = {tuple(c.shape.values()) for c in problems.get("segreduce").cases()}
    assert {c for r, c in seg} >= {1, 1000, 4097} and any(r == 1 for r, _ in seg)
    assert (8192, 32768) in seg and (2**20, 256) in seg
    ew = [c for c in problems.get("elementwise").cases()]
    assert all(c.shape["n"] % 8 for c in ew if c.kind == "test")
    assert any(c.kind == "bench" and c.shape["n"] == 2**28 for c in ew)
    gemm = {(c.shape["M"], c.shape["N"], c.shape["K"], c.dtype) for c in problems.get("gemm").cases()}
    assert {(1, 1, 1, "float32"), (129, 257, 65, "bfloat16"), (1000, 1000, 1000, "float16"),
            (8192, 8192, 8192, "bfloat16"), (8192, 8192, 8192, "float16"), (16384, 16384, 512, "bfloat16")} <= gemm


def _solve(problem, case, inputs):
    """A correct answer in storage form, from the float64 reference."""
    ref = problem.reference(case, inputs)
    return {k: encode(ref[k].value.astype(np.float32), dt) for k, (_, dt) in problem.output_spec(case).items()}


@pytest.mark.parametrize("name", problems.names())
def test_reference_answer_passes_and_perturbed_answers_fail(name):
    p = problems.get(name)
    dtype = next(d for d in ("float32", "float16", *p.dtypes) if d in p.dtypes)
    case = next(c for c in p.cases() if c.kind == "test" and c.dtype == dtype and
                min(v for k, v in c.shape.items() if k not in p.flags) > 1)
    inputs = p.make_inputs(case, 0)
    ref = p.reference(case, inputs)
    good = _solve(p, case, inputs)
    assert p.check(good, ref, case).ok
    out_name = next(iter(good))
    nan = {k: v.copy() for k, v in good.items()}
    out_dtype = p.output_spec(case)[out_name][1]
    nan[out_name].reshape(-1)[-1] = encode(np.array([np.nan]), out_dtype)[0]
    with pytest.raises(CheckError, match="NaN"):
        p.check(nan, ref, case)
    off = {k: v.copy() for k, v in good.items()}
    first = decode(off[out_name].reshape(-1)[:1], out_dtype)
    off[out_name].reshape(-1)[0] = encode(first + 0.25 * (1 + np.abs(first)), out_dtype)[0]
    with pytest.raises(CheckError, match="first at"):
        p.check(off, ref, case)
    with pytest.raises(CheckError, match="dtype"):
        p.check({k: v.astype(np.float64) for k, v in good.items()}, ref, case)
    with pytest.raises(CheckError, match="shape"):
        p.check({k: v[..., :-1] for k, v in good.items()}, ref, case)


def test_segreduce_check_catches_one_missing_column():
    p = problems.get("segreduce")
    case = p.case("37x4097-float32")
    inputs = p.make_inputs(case, 0)
    x = decode(inputs["x"], "float32")
    partial = {"y": x[:, :-1].sum(axis=1).astype(np.float32)}
    with pytest.raises(CheckError):
        p.check(partial, p.reference(case, inputs), case)


def test_gemm_big_case_is_checked_on_sampled_rows():
    p = problems.get("gemm")
    case = p.custom_case({"M": 8192, "N": 1024, "K": 1024}, "bf16")
    inputs = p.make_inputs(case, 0)
    ref = p.reference(case, inputs)["c"]
    assert ref.rows is not None and 0 in ref.rows and 8191 in ref.rows and ref.value.shape[0] == len(ref.rows)


@pytest.mark.parametrize("shape,msg", [({"M": 1, "N": 1}, "missing: K"), ({"M": 1, "N": 1, "K": 0}, "positive"),
                                       ({"M": 1, "N": 1, "K": 1, "Q": 2}, "unknown: Q"),
                                       ({"M": 2**20, "N": 2**20, "K": 8}, "too large")])
def test_custom_case_validation(shape, msg):
    with pytest.raises(ValueError, match=msg):
        problems.get("gemm").custom_case(shape, "bf16")


def test_work_counts():
    assert problems.get("gemm").work(problems.get("gemm").case("8192x8192x8192-bfloat16"))[1] == 2 * 8192**3
    assert problems.get("elementwise").work(problems.get("elementwise").case("7-float16"))[0] == 3 * 7 * 2


@pytest.mark.parametrize("name", problems.names())
def test_negated_inputs_give_the_negated_reference(name):
    """The harness's refresh check relies on it: the problem is linear in `linear_inputs`."""
    p = problems.get(name)
    for case in [c for c in p.cases() if c.kind == "test"][:4]:
        inputs = p.make_inputs(case, 3)
        ref = p.reference(case, inputs)
        new_inputs, new_ref = p.negated(case, inputs, ref)
        direct = p.reference(case, new_inputs)
        assert any(not np.array_equal(new_inputs[k], inputs[k]) for k in p.linear_inputs)
        for out, e in new_ref.items():
            np.testing.assert_array_equal(e.value, direct[out].value)
            assert not np.array_equal(e.value, ref[out].value) or not np.any(ref[out].value)
