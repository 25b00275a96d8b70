"""The measurements a contributor repeats besides a run are `ways` subcommands: the compile-time
table (here on NumPy, which needs no GPU), the timer check and the install footprint (their GPU and
network parts are tested in test_timer_check.py and test_footprint.py)."""
import json

import pytest

from tests.test_cli import ways


def test_compile_table_times_fresh_processes(tmp_path):
    r = ways("compile-table", "--impl", "array_api[numpy]", "--case", "129x257x65-float32", "--repeats", "1",
             "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    row, = json.loads((tmp_path / "compile_table.json").read_text())
    assert row["implementation"] == "array_api[numpy]" and row["case"] == "129x257x65-float32"
    assert row["cold_s"] > 0 and row["warm_s"] > 0 and len(row["cold_samples"]) == 1
    assert "array_api[numpy]" in r.stdout


@pytest.mark.parametrize("command", ["compile-table", "timer-check", "footprint"])
def test_each_measurement_says_what_it_takes(command):
    r = ways(command, "--help")
    assert r.returncode == 0 and "--out" in r.stdout
    missing = ways(command)
    assert missing.returncode == 2 and "--out" in missing.stderr


def test_a_tool_that_keeps_no_build_on_disk_gets_cold_compile_processes_only(tmp_path, monkeypatch):
    """nvmath's kernels link cuBLASDx code, which numba-cuda keeps no copy of on disk: a warm process
    would build all of it again (3-6 minutes), so only cold processes run and the figure says why."""
    import backends
    from harness.run import compile_times
    from harness.run.registry import Impl
    assert backends.get("nvmath_device").builds_cached is False and backends.get("triton").builds_cached
    monkeypatch.setattr(type(backends.get("array_api", "numpy")), "builds_cached", False)
    comp = compile_times.measure(Impl("array_api", "numpy", "segreduce"), tmp_path, tmp_path / "log", 2, 120.0, {})
    assert len(comp["cold_samples"]) == 2 and comp["cold_s"] > 0 and comp["processes"] == 2
    assert comp["warm_samples"] == [] and comp["warm_s"] is None and "kept on disk" in comp["warm_note"]
    import json

    import jsonschema
    from harness.results.records import SCHEMA_PATH
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.validate(comp, schema["$defs"]["record"]["properties"]["compile"])   # its record stays valid
