"""experiments/jax_gemv on JAX's CPU backend: every form of the one-row bf16 product is judged against
the problem's bound and matched element for element against the host models of its arithmetic (CPU
XLA accumulates in fp32 and rounds once, as the problem asks), and each form's optimised HLO is kept."""
import json

import pytest

pytest.importorskip("jax", reason="jax not installed (pip install '.[pallas-cpu]')")


def test_the_probe_names_the_arithmetic_of_each_form(tmp_path):
    from experiments.jax_gemv import probe
    assert probe.main(["--shape", "1,264,104", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "probe.json").read_text())
    assert [r["form"] for r in rows] == list(probe.forms())
    for r in rows:
        assert r["beyond_bound"] == 0 and r["elements"] == 264
        assert r["equal_to_model"]["fp32 sum, one rounding"] == 1.0
        assert r["equal_to_model"]["bf16 products, fp32 sum"] < 1.0          # the models tell them apart
    assert len(list(tmp_path.glob("1x264x104-*.hlo.txt"))) == len(rows)
