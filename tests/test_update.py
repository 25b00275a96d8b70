"""`ways run --update RESULTS` without a GPU: a row whose recorded fingerprint no longer matches what it
would get now (its implementation's source changed, as far as RESULTS can tell) runs again, and only
those rows; RESULTS takes them in, keeps the rest as they were, and says so."""
import json

from harness.results import records
from harness.run import fingerprint
from tests.test_cli import ran, ways

SELECTION = ("-b", "array_api[numpy]", "-b", "array_api[dask]", "-p", "segreduce", "--cases", "test", "--no-compile")


def test_a_changed_source_reruns_exactly_its_rows(tmp_path):
    doc = ran(tmp_path, *SELECTION)
    numpy_rows = {records.record_key(r) for r in doc["records"] if r["variant"] == "numpy"}
    assert numpy_rows and all(r["fingerprint"]["source"] for r in doc["records"])
    for r in doc["records"]:            # RESULTS made before numpy's implementation file last changed
        if r["variant"] == "numpy":
            r["fingerprint"]["source"] = "0" * fingerprint.HASH_CHARS
    (tmp_path / "results.json").write_text(json.dumps(doc, indent=1))
    before = {records.record_key(r): r for r in doc["records"]}

    r = ways("run", "--update", str(tmp_path / "results.json"))
    assert r.returncode == 0, r.stderr
    assert f"{len(numpy_rows)} row(s)" in r.stdout and "array_api[numpy]" in r.stdout
    rerun = json.loads((tmp_path / "updates" / "1" / "results.json").read_text())
    assert {records.record_key(x) for x in rerun["records"]} == numpy_rows       # those rows, and only those
    after = json.loads((tmp_path / "results.json").read_text())
    records.validate(after)
    assert len(after["records"]) == len(before) and after["run"]["updates"][0]["rows"] == len(numpy_rows)
    for x in after["records"]:
        key = records.record_key(x)
        if key in numpy_rows:
            assert x["fingerprint"]["source"] != "0" * fingerprint.HASH_CHARS and x["status"] == before[key]["status"]
        else:
            assert x == before[key]                                               # dask's rows untouched
    assert (tmp_path / "report.md").is_file()

    again = ways("run", "--update", str(tmp_path / "results.json"))
    assert again.returncode == 0 and "up to date" in again.stdout
    assert not (tmp_path / "updates" / "2").exists()


def test_update_needs_one_runs_results(tmp_path):
    missing = ways("run", "--update", str(tmp_path / "results.json"))
    assert missing.returncode == 2 and "no results file" in missing.stderr
    doc = ran(tmp_path, "-b", "array_api[numpy]", "-p", "segreduce", "--case", "1x1-float32", "--no-compile")
    del doc["run"]["selection"]
    (tmp_path / "results.json").write_text(json.dumps(doc))
    merged = ways("run", "--update", str(tmp_path / "results.json"))
    assert merged.returncode == 2 and "keep no selection" in merged.stderr
