"""Results files: schema-valid, CSV columns exact, incremental JSONL survives an interruption."""
import csv
import json

import pytest

from harness.results import records
from harness.run.runner import summarize
from tests.conftest import ROOT, run_lab


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run")
    doc = run_lab(tmp, problems=["segreduce", "elementwise"], backends_=["array_api"], measure_compile=True,
                  compile_repeats=1)
    return tmp / "out", doc


def test_results_validate_against_the_schema(cpu_run):
    out, doc = cpu_run
    records.validate(doc)
    records.validate(json.loads((out / "results.json").read_text()))
    assert doc["schema_version"] == records.SCHEMA_VERSION and doc["run"]["complete"]
    env = doc["environment"]
    assert env["python"] and "numpy" in env["versions"]


def test_every_pair_and_case_has_a_row_with_a_status(cpu_run):
    _, doc = cpu_run
    rows = {(r["backend"], r["variant"], r["problem"], r["case"]) for r in doc["records"]}
    assert len(rows) == len(doc["records"])
    numpy_rows = [r for r in doc["records"] if r["variant"] == "numpy"]
    assert numpy_rows and all(r["status"] in ("ok", "not_applicable") for r in numpy_rows)
    assert any(r["status"] == "ok" for r in numpy_rows)
    for r in numpy_rows:
        if r["status"] == "ok":
            assert r["loc"]["total"] > 0 and r["compile"]["cold_s"] >= 0 and r["first_call_s"] is not None
            assert len(r["seeds"]) == 3 and r["max_rel_err"] is not None


def test_summary_csv_has_exactly_the_columns(cpu_run):
    out, doc = cpu_run
    with open(out / "summary.csv") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert tuple(reader.fieldnames) == records.CSV_COLUMNS
    assert len(rows) == len(doc["records"])
    assert {r["status"] for r in rows} <= set(records.STATUSES)


def test_interrupted_run_keeps_what_it_measured(cpu_run, tmp_path):
    out, _ = cpu_run
    lines = (out / "results.jsonl").read_text().splitlines()
    cut = [x for x in lines if json.loads(x)["type"] != "end"][: len(lines) // 2]
    partial = tmp_path / "results.jsonl"
    partial.write_text("\n".join(cut) + "\n")
    doc = summarize(partial)
    assert not doc["run"]["complete"] and doc["records"]
    records.validate(doc)


def test_committed_results_validate():
    from harness.results import merge
    found = sorted((ROOT / "reports").rglob("results.json")) + sorted((ROOT / "reports").rglob("results.json.gz"))
    for path in found:
        records.validate(merge.load(path))
    if not found:
        pytest.skip("no results committed under reports/ yet")


def test_non_finite_figures_become_null():
    """nvbench reports NaN statistics for a kernel it timed as nothing: the record stays JSON."""
    import json
    rec = {"timing": {"cold": {"noise": float("nan"), "samples": [1.0, float("inf")]}, "median_ms": 0.5}}
    assert json.loads(json.dumps(records.finite(rec), allow_nan=False)) == \
        {"timing": {"cold": {"noise": None, "samples": [1.0, None]}, "median_ms": 0.5}}


def test_case_store_round_trip_maps_arrays_writable(tmp_path):
    """Case data stored as a structure and one file per array comes back equal, writable (mapped
    copy-on-write: the file is never changed), scalars and empty arrays included."""
    import numpy as np

    from harness.run import case_store
    data = ({"x": np.arange(12, dtype=np.float32).reshape(3, 4), "alpha": 1.5, "none": np.zeros(0)},
            {"y": (np.ones(3), None)})
    case_store.save(tmp_path / "c", data)
    inputs, ref = case_store.load(tmp_path / "c")
    assert np.array_equal(inputs["x"], data[0]["x"]) and inputs["alpha"] == 1.5 and inputs["none"].size == 0
    inputs["x"][0, 0] = 99                     # writable, and the stored copy stays as it was
    assert case_store.load(tmp_path / "c")[0]["x"][0, 0] == 0
    assert np.array_equal(ref["y"][0], np.ones(3)) and ref["y"][1] is None


def test_an_interrupt_while_the_summary_is_written_waits_for_it():
    """A run stopped just as it ended (a step's timeout) lost its results.json: the signal now
    waits until the summary is written, then stops the run."""
    import os
    import signal

    from harness.run import supervise
    written = []
    with pytest.raises(KeyboardInterrupt), supervise.interrupts_held():
        os.kill(os.getpid(), signal.SIGINT)
        written.append("results.json")
    assert written == ["results.json"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_resume_refuses_a_run_made_on_other_gpus(tmp_path):
    from harness.run import resume
    with pytest.raises(resume.NothingToResume, match="no run to go on with"):
        resume.check(tmp_path, [], {})
    header = {"type": "run", "environment": {"gpus": [{"name": "NVIDIA H100 80GB HBM3"}]},
              "run": {"id": "a", "started": "", "argv": [], "kinds": ["test"]}}
    (tmp_path / "results.jsonl").write_text(json.dumps(header) + "\n")
    resume.check(tmp_path, [{"name": "NVIDIA H100 80GB HBM3"}], {})
    with pytest.raises(resume.NothingToResume, match="made with GPUs .'NVIDIA H100 80GB HBM3'.*has .'NVIDIA H200'"):
        resume.check(tmp_path, [{"name": "NVIDIA H200"}], {})
    (tmp_path / "results.jsonl").write_text(json.dumps(header) + "\n" + json.dumps({"type": "end", "run": {}}) + "\n")
    with pytest.raises(resume.NothingToResume, match="is complete"):
        resume.check(tmp_path, [{"name": "NVIDIA H100 80GB HBM3"}], {})


def test_resume_refuses_another_window_scale(tmp_path, monkeypatch):
    """A check resumed at another --window-scale would mix windows of two lengths in one table."""
    from harness.measure.stopping import WINDOW_SCALE_VAR
    from harness.run import resume
    header = {"type": "run", "environment": {"gpus": []},
              "run": {"id": "a", "started": "", "argv": [], "kinds": ["bench"], "window_scale": 4.0}}
    (tmp_path / "results.jsonl").write_text(json.dumps(header) + "\n")
    with pytest.raises(resume.NothingToResume, match="at scale 4, this one would at 1"):
        resume.check(tmp_path, [], {})
    monkeypatch.setenv(WINDOW_SCALE_VAR, "4")
    resume.check(tmp_path, [], {})


def test_timer_check_resume_needs_a_check_to_go_on_with(tmp_path):
    from tests.test_cli import ways
    r = ways("timer-check", "--resume", "-p", "segreduce", "--out", str(tmp_path / "none"))
    assert r.returncode == 2 and "no run to go on with" in r.stderr, r.stderr


def test_the_schema_takes_every_dtype_a_problem_has():
    import json

    import problems
    from harness import ROOT
    from problems.base import DTYPES
    schema = json.loads((ROOT / "harness" / "results" / "results.schema.json").read_text())
    enum = set(schema["$defs"]["record"]["properties"]["dtype"]["enum"])
    assert enum == set(DTYPES) >= {d for p in problems.names() for d in problems.get(p).dtypes}
