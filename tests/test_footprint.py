"""The scorecard's install footprint comes from pip's resolver: `ways footprint` resolves a small
extra in a fresh virtual environment, and the scorecard shows what it measured."""
import json

import pytest

from harness.report import scorecard
from tests.conftest import ROOT


def test_footprint_of_the_cpu_extra_reaches_the_scorecard(tmp_path):
    from harness.report import footprint
    try:
        measured = footprint.footprint("cpu", install=False)
    except Exception as exc:                     # no index reachable: nothing to measure
        pytest.skip(f"pip could not resolve the extra here: {exc}")
    names = {p["name"].lower() for p in measured["resolved"]}
    assert {"array-api-compat", "numpy"} <= names and "ways" not in names
    assert all("licence" in p for p in measured["resolved"])           # what pip's report says (often blank)
    assert measured["packages"] == len(measured["resolved"])
    doc = json.loads((ROOT / "tests/fixtures/results/nvrtc-h100.json").read_text())
    doc["footprint"] = {"extras": {"cpu": measured}}
    numpy_rows = [r for r in doc["records"] if r["backend"] == "array_api" and r["variant"] == "numpy"]
    if not numpy_rows:                           # give the document a NumPy row to score
        rec = dict(doc["records"][0], backend="array_api", variant="numpy", timing=None, compile=None)
        doc["records"].append(rec)
    row = {r["implementation"]: r for r in scorecard.rows(doc)}["array_api[numpy]"]
    assert row["packages"] == measured["packages"]
    if measured["download_bytes"]:
        assert row["install MB"] == measured["download_bytes"] / 1e6


def test_recorded_installed_size_and_not_applicable_reasons_reach_the_scorecard():
    """The committed footprint (`ways footprint` --install for the extras small enough to install)
    gives the installed size; the not-applicable reasons of the records say what a tool does not take."""
    recorded = json.loads((ROOT / "reports/evidence/footprint/linux-x86_64-cp311.json").read_text())
    installed = {e: v["installed_bytes"] for e, v in recorded["extras"].items() if v.get("installed_bytes")}
    assert installed, "no extra's installed size recorded"
    doc = json.loads((ROOT / "reports/h100/results.json").read_text())
    doc["footprint"] = recorded
    rows = {r["implementation"]: r for r in scorecard.rows(doc)}
    assert rows["nvrtc"]["installed MB"] == installed["nvrtc"] / 1e6
    assert any("float32" in reason for reason in rows["cute_dsl"]["not applicable"])
    numpy_reasons = rows["array_api[numpy]"]["not applicable"]
    assert numpy_reasons and all("NumPy" in r or "on the CPU" in r for r in numpy_reasons)
    assert any("bfloat16" in r for r in numpy_reasons) and any("attention" in r for r in numpy_reasons)


def test_min_driver_cuda_is_read_from_the_extras_packages():
    """A CUDA wheel names its release (cupy-cuda13x, nvidia-libmathdx-cu13) or, for NVIDIA's CUDA wheels,
    carries it as its version's major; an extra with none falls back to what the backend declares."""
    assert scorecard.cuda_from_packages([{"name": "numpy", "version": "2.4.6"}]) == ""
    assert scorecard.cuda_from_packages([{"name": "cupy-cuda13x", "version": "14.2.0"},
                                         {"name": "cuda-bindings", "version": "12.9.0"}]) == "13 (cupy-cuda13x)"
    assert scorecard.cuda_from_packages([{"name": "cuda-bindings", "version": "13.5.0"}]) == "13 (cuda-bindings 13.5.0)"
    recorded = json.loads((ROOT / "reports/evidence/footprint/linux-x86_64-cp311.json").read_text())
    doc = json.loads((ROOT / "reports/h100/results.json").read_text())
    doc["footprint"] = recorded
    rows = {r["implementation"]: r for r in scorecard.rows(doc)}
    assert rows["array_api[cupy]"]["min driver CUDA"] == "13 (cupy-cuda13x)"
    assert rows["warp_tiles"]["min driver CUDA"].endswith("(declared)")       # warp-lang's name says no CUDA


def test_a_licence_not_installed_here_is_read_from_the_extras_resolution():
    resolved = [{"name": "Some_Tool", "version": "1.0", "licence": "Apache-2.0"}]
    assert scorecard.licence("some-tool", resolved) == "Apache-2.0"
    assert scorecard.licence("some-tool") == ""
    assert scorecard.licence_text(None, "x" * 200, ["License :: OSI Approved :: MIT License"]) == "MIT License"
    bsd = "A licence pasted whole, over lines:\n\nRedistribution and use in source\nand binary forms, with or"
    assert scorecard.licence_text(None, bsd, ["Programming Language :: Python :: 3"]) == "BSD (text)"


def test_installed_licences_are_read_from_the_environments_metadata():
    import sys

    from harness.report import footprint
    found = footprint.installed_licences(sys.executable)       # this environment: pytest is installed in it
    assert "MIT" in found.get("pytest", "")
