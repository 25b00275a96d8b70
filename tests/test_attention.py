"""The attention problem's check: a kernel computed the way tensor-core kernels do it (fp32 scores and
accumulator, an online softmax over blocks of keys, P rounded to the input dtype) passes on every test
case; the same kernel with a usual mistake fails on every case where the mistake changes the answer."""
import math

import numpy as np
import pytest

import problems
from problems.base import CheckError, decode, encode, poison

ATTENTION = problems.get("attention")
TESTS = [c for c in ATTENTION.cases() if c.kind == "test"]
KEY_BLOCK = 16


def flash(case, inputs, mistake=""):
    """O for every (batch, head) in NumPy float32, FlashAttention's way; `mistake` adds one bug."""
    b, h, s, d, causal = (case.shape[k] for k in ("B", "H", "S", "D", "causal"))
    q, k, v = (decode(inputs[n], case.dtype, np.float32).reshape(b * h, s, d) for n in ("q", "k", "v"))
    scale = np.float32(1.0 if mistake == "no scale" else 1.0 / math.sqrt(d))
    m = np.full((b * h, s, 1), -np.inf, np.float32)
    total = np.zeros((b * h, s, 1), np.float32)
    acc = np.zeros((b * h, s, d), np.float32)
    blocks = range(0, s, KEY_BLOCK)
    if mistake == "drops the last partial tile" and s % KEY_BLOCK:
        blocks = range(0, s - s % KEY_BLOCK, KEY_BLOCK)
    for j in blocks:
        kb, vb = k[:, j:j + KEY_BLOCK], v[:, j:j + KEY_BLOCK]
        sc = np.matmul(q, kb.transpose(0, 2, 1)) * scale
        if causal and mistake != "no mask":
            keys = np.arange(j, j + kb.shape[1])[None, :]
            sc = np.where(keys > np.arange(s)[:, None], np.float32(-np.inf), sc)
        if mistake == "no max subtraction":
            m_new, alpha = np.zeros_like(m), np.ones_like(m)
        else:
            m_new = np.maximum(m, sc.max(axis=-1, keepdims=True))
            alpha = np.where(np.isinf(m_new), 1, np.exp(m - m_new)).astype(np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            p = np.exp(sc - np.where(np.isinf(m_new), 0, m_new)).astype(np.float32)
            p = decode(encode(p, case.dtype), case.dtype, np.float32)       # fed to the second product
            total = total * alpha + p.sum(axis=-1, keepdims=True)
            acc = acc * alpha + np.matmul(p, vb)
        m = m_new
    with np.errstate(invalid="ignore", divide="ignore"):
        o = encode((acc / total).reshape(b, h, s, d), case.dtype)
    if mistake == "leaves the last query tile unwritten" and s % KEY_BLOCK:
        o[:, :, s - s % KEY_BLOCK:] = poison((b, h, s % KEY_BLOCK, d), case.dtype)
    return {"o": o}


def inputs_and_reference(case):
    inputs = ATTENTION.make_inputs(case, case.seed)
    return inputs, ATTENTION.reference(case, inputs)


@pytest.mark.parametrize("case", TESTS, ids=lambda c: c.name)
def test_a_correct_kernel_passes(case):
    inputs, ref = inputs_and_reference(case)
    ATTENTION.check(flash(case, inputs), ref, case)
    negated, ref_neg = ATTENTION.negated(case, inputs, ref)            # linear in V
    ATTENTION.check(flash(case, negated), ref_neg, case)


MISTAKES = {
    "no mask": lambda c: c.shape["causal"] and c.shape["S"] > 1,
    "no scale": lambda c: c.shape["S"] > 1,
    "no max subtraction": lambda c: c.shape["S"] > 1,
    "drops the last partial tile": lambda c: c.shape["S"] > KEY_BLOCK and c.shape["S"] % KEY_BLOCK,
    "leaves the last query tile unwritten": lambda c: c.shape["S"] % KEY_BLOCK,
}


@pytest.mark.parametrize("mistake", MISTAKES)
def test_each_usual_mistake_fails(mistake):
    caught = 0
    for case in TESTS:
        if not MISTAKES[mistake](case):
            continue
        inputs, ref = inputs_and_reference(case)
        with pytest.raises(CheckError):
            ATTENTION.check(flash(case, inputs, mistake), ref, case)
        caught += 1
    assert caught


def test_a_big_case_is_checked_on_sampled_rows_of_every_head():
    case = ATTENTION.case("1x16x16384x128-causal-bfloat16")
    rows = ATTENTION.reference(case, ATTENTION.make_inputs(case, case.seed))["o"].rows
    s = case.shape["S"]
    assert rows is not None and rows[0] == 0 and rows[-1] == 16 * s - 1
    assert len(np.unique(rows // s)) == 16                              # every head sampled


def test_the_flag_is_part_of_a_custom_case():
    case = ATTENTION.custom_case({"B": 1, "H": 2, "S": 33, "D": 64, "causal": 0}, "bf16")
    assert case.shape["causal"] == 0 and case.name == "custom-B1-H2-S33-D64-causal0-bfloat16"
    with pytest.raises(ValueError, match="flag"):
        ATTENTION.custom_case({"B": 1, "H": 2, "S": 33, "D": 64, "causal": 2}, "bf16")
    assert ATTENTION.work(case)[1] == 2 * ATTENTION.work(ATTENTION.custom_case({**case.shape, "causal": 1}, "bf16"))[1]


def test_numpy_takes_the_test_cases_and_leaves_the_bench_sizes():
    """NumPy's materialised attention runs every fp16 test case; at bench sizes (30 s a call on the
    H100 node's CPU) it is not applicable, with the reason, rather than a time-out."""
    import backends
    numpy_rows = backends.get("array_api", "numpy")
    cases = [c for c in problems.get("attention").cases() if c.dtype == "float16"]
    assert all(numpy_rows.why_not("attention", c) is None for c in cases if c.kind == "test")
    bench = [numpy_rows.why_not("attention", c) for c in cases if c.kind == "bench"]
    assert bench and all("tens of seconds" in reason for reason in bench)
