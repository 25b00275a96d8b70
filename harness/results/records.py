"""Results: JSON Lines while running, then one summary JSON (schema-versioned) and summary.csv."""
from __future__ import annotations

import csv
import json
import math
import os
import tempfile
import threading
from pathlib import Path

import backends

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("results.schema.json")
STATUSES = ("ok", "wrong", "failed", "skipped", "unavailable", "not_applicable", "compile_only")
# no verdict on the row: a later part of the run, or another lane, runs it again
UNSETTLED = ("failed", "skipped")
CSV_COLUMNS = ("problem", "case", "kind", "dtype", "backend", "variant", "status", "reason",
               "compile_cold_s", "compile_warm_s", "first_call_s", "loc", "kernel_loc",
               "device_ms_cold", "device_ms_warm", "host_ms", "achieved", "unit", "pct_of_peak",
               "max_rel_err", "device_ms_sustained", "pct_of_peak_sustained", "sm_clock_mhz_cold",
               "sm_clock_mhz_sustained", "flag", "flag_reason")


def new_record(problem: str, case, backend: str, variant: str) -> dict:
    """A result row for one implementation x case, every field present."""
    return {"problem": problem, "case": case.name, "kind": case.kind, "dtype": case.dtype,
            "shape": dict(case.shape), "backend": backend, "variant": variant,
            "status": "failed", "reason": "", "error": "",
            "seeds": [], "max_abs_err": None, "max_rel_err": None,
            "build_s": None, "first_call_s": None,
            "compile": None, "loc": None, "work": None, "timing": None}


def finite(obj):
    """`obj` with every NaN or infinite float (a timer's statistic of nothing) made None, so it
    stays valid JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


class JsonlWriter:
    """Appends one JSON object a line and flushes it: an interrupted run keeps what it measured
    (`append`: after an earlier run's lines, `ways run --resume`)."""

    def __init__(self, path: Path, append: bool = False):
        self.path = path
        self._f = open(path, "a" if append else "w")  # noqa: SIM115 (kept open for the run, closed by close())
        self._lock = threading.Lock()       # `ways run --jobs`: several workers' threads write

    def write(self, obj: dict) -> None:
        line = json.dumps(obj, allow_nan=False) + "\n"
        with self._lock:
            self._f.write(line)
            self._f.flush()

    def close(self) -> None:
        self._f.close()


def read_jsonl(path: Path) -> list[dict]:
    lines = Path(path).read_text().splitlines()
    return [json.loads(x) for x in lines if x.strip()]


def record_key(r: dict) -> tuple[str, str, str, str]:
    return r["backend"], r["variant"], r["problem"], r["case"]


def merge(lines: list[dict]) -> dict:
    """Summary document from the JSONL lines: compile figures joined onto their records. A run
    resumed (`ways run --resume`) has several parts, each from a "run" or "resumed" line to its
    "end" or "stopped" one: a row redone in a later part replaces the earlier one, the parts' times
    add up, and the run is complete when its last part ended."""
    header = next(x for x in lines if x["type"] == "run")
    records = list({record_key(x["record"]): x["record"] for x in lines if x["type"] == "record"}.values())
    compiles = {(c["backend"], c["variant"], c["problem"]): c["compile"]
                for c in (x for x in lines if x["type"] == "compile")}
    for r in records:
        r["compile"] = compiles.get((r["backend"], r["variant"], r["problem"]), r["compile"])
    # a --gpus run measures an implementation's compile figures in one lane while a resumed part may
    # deal its rows to another: such figures are kept for the lanes' merge to join to those rows
    held = {(r["backend"], r["variant"], r["problem"]) for r in records}
    orphans = [{"backend": k[0], "variant": k[1], "problem": k[2], "compile": c}
               for k, c in compiles.items() if k not in held]
    parts = [x for x in lines if x["type"] in ("run", "resumed", "end", "stopped")]
    ends = [x for x in parts if x["type"] in ("end", "stopped")]     # "stopped": an interrupted part's profile
    environment = dict(header["environment"])
    for x in lines:
        if x["type"] == "device":
            environment["device"] = {**(environment.get("device") or {}), **x["device"]}
        elif x["type"] == "gpu_state" and (x["when"] == "after" or "gpu_state_before" not in environment):
            environment[f"gpu_state_{x['when']}"] = x["state"]
    doc = {"schema_version": SCHEMA_VERSION, "run": {**header["run"], **(ends[-1]["run"] if ends else {})},
           "environment": environment, "records": records,
           "crosscheck": [x["crosscheck"] for x in lines if x["type"] == "crosscheck"]}
    if orphans:
        doc["compiles"] = orphans
    doc["run"]["complete"] = parts[-1]["type"] == "end"
    resumed = [x["run"] for x in parts if x["type"] == "resumed"]
    if resumed:
        doc["run"]["resumed"] = resumed
        doc["run"]["duration_s"] = round(sum(x["run"].get("duration_s", 0.0) for x in ends), 3)
        for key in ("phases", "worker_phases"):
            total: dict[str, float] = {}
            for x in ends:
                for name, sec in (x["run"].get(key) or {}).items():
                    total[name] = round(total.get(name, 0.0) + sec, 3)
            doc["run"][key] = dict(sorted(total.items(), key=lambda kv: -kv[1]))
    for kind in ("gpu_lock", "cpu_load"):       # the last part's, for a resumed run
        found = [x[kind] for x in lines if x["type"] == kind]
        if found:
            doc["run"][kind] = found[-1]
    extra = [x for x in lines if x["type"] == "references"]
    doc["references"] = extra[-1]["references"] if extra else None
    return doc


def impl_label(r: dict) -> str:
    """backend[variant], with the GPU appended when a merged document spans several GPUs."""
    base = backends.label(r["backend"], r["variant"])
    tag = (r.get("source") or {}).get("tag")
    return f"{base} @ {tag}" if tag else base


def flag(r: dict) -> str:
    """The integrity flag every view shows beside a timed row: its status where it is not ok (and the
    cause its tool names for a wrong one, e.g. "wrong (the library's float32 sequential sum)"),
    'suspect' where roofline found the figure unbelievable, 'clock off' where its cold samples ran at
    a clock off its reference's, 'unconfirmed' where it beats its ceiling in one mode only, 'low
    clock' where its cold samples ran under the clock a fair comparison assumes, 'host exposed' where
    its tool's host showed through a timing mode (the figure still counts); "" otherwise."""
    if r["status"] != "ok":
        return f"{r['status']} ({r['cause']})" if r.get("cause") else r["status"]
    t = r.get("timing") or {}
    return "suspect" if t.get("suspect") else "clock off" if t.get("clock_off") else \
        "unconfirmed" if t.get("unconfirmed") else "low clock" if t.get("low_clock") else \
        "host exposed" if host_exposed(t) else ""


def host_exposed(t: dict) -> bool:
    """Whether a row's tool's host showed through a timing mode: most cold samples started after the
    gate, or its sustained calls were still being queued when the gate ended."""
    return bool((t.get("cold") or {}).get("host_exposed") or (t.get("sustained") or {}).get("exposed"))


def loud(flag_text: str) -> str:
    """A flag as a badge shows it: its word in capitals, the cause after it as written."""
    word, sep, cause = flag_text.partition(" (")
    return word.upper() + sep + cause


def counts(r: dict) -> bool:
    """Whether a row's figures count: ok and not suspect (a low clock is said, not held against it)."""
    return r["status"] == "ok" and not (r.get("timing") or {}).get("suspect")


QUICK_NOTE = ("quick: `ways run --quick` (each problem's quick_case_names, first build instead of the "
              "cold/warm compile processes, the cold timing mode alone)")


def quick_runs(doc: dict) -> bool:
    """Whether any record of `doc` comes from a `ways run --quick`."""
    return any(r.get("quick") for r in doc["records"])


def flag_note(r: dict) -> str:
    """The flag and why, for notes and tooltips."""
    t = r.get("timing") or {}
    exposed = ((t.get("cold") or {}).get("host_exposed") and "most cold samples started after the gate: the tool "
               "waits for the GPU inside its call, so its figure holds its host's gaps") or \
        ((t.get("sustained") or {}).get("exposed") and "its sustained calls were still being queued when the "
         "GPU-side wait ended: the sustained figure holds its host's dispatch")
    why = (t.get("suspect") or t.get("clock_off") or t.get("unconfirmed") or t.get("low_clock") or exposed) \
        if r["status"] == "ok" \
        else error_line(r["error"] or r.get("reason"))
    return f"{flag(r)}: {why}" if flag(r) else ""


def error_line(error: str) -> str:
    """What happened, in one line: the first line of the lab's own messages, the last line (the
    exception) of a Python traceback."""
    lines = (error or "").strip().splitlines()
    if not lines:
        return ""
    return lines[-1] if lines[0].startswith("Traceback") else lines[0]


def csv_row(r: dict) -> dict:
    comp = r.get("compile") or {}
    loc = r.get("loc") or {}
    t = r.get("timing") or {}
    row = {"problem": r["problem"], "case": r["case"], "kind": r["kind"], "dtype": r["dtype"],
           "backend": r["backend"], "variant": r["variant"], "status": r["status"],
           "reason": r["reason"], "compile_cold_s": comp.get("cold_s"),
           "compile_warm_s": comp.get("warm_s"), "first_call_s": r.get("first_call_s"),
           "loc": loc.get("total"), "kernel_loc": loc.get("kernel"),
           "device_ms_cold": t.get("device_ms_cold"), "device_ms_warm": t.get("device_ms_warm"),
           "host_ms": t.get("host_ms"), "achieved": t.get("achieved"), "unit": t.get("unit"),
           "pct_of_peak": t.get("pct_of_peak"), "max_rel_err": r.get("max_rel_err"),
           "device_ms_sustained": t.get("device_ms_sustained"), "pct_of_peak_sustained": t.get("pct_of_peak_sustained"),
           "sm_clock_mhz_cold": (t.get("cold") or {}).get("sm_clock_mhz"),
           "sm_clock_mhz_sustained": (t.get("sustained") or {}).get("sm_clock_mhz"),
           "flag": flag(r), "flag_reason": flag_note(r).partition(": ")[2]}
    return {k: "" if v is None else v for k, v in row.items()}


def atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)       # mkstemp makes it 0600; results are for everyone to read
    os.replace(tmp, path)


def write_summary(doc: dict, out_dir: Path) -> tuple[Path, Path]:
    json_path, csv_path = out_dir / "results.json", out_dir / "summary.csv"
    atomic_write(json_path, json.dumps(doc, indent=1, allow_nan=False) + "\n")
    import io
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in doc["records"]:
        w.writerow(csv_row(r))
    atomic_write(csv_path, buf.getvalue())
    return json_path, csv_path


def validate(doc: dict) -> None:
    """Raise jsonschema.ValidationError if `doc` does not follow the schema."""
    import jsonschema
    jsonschema.validate(doc, json.loads(SCHEMA_PATH.read_text()))
