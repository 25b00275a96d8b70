"""Timing through NVIDIA's nvbench (cuda.bench 0.3): cold samples with L2 flush, throttle
detection and a noise criterion. Its batch (hot) measurement is off (`batched=False` where the
worker calls `state.exec`): it took longer than the cold samples and the sustained mode
(timing.py) already measures back-to-back calls, as a loop in an application makes them.

nvbench runs its benchmarks once per process and writes its JSON at the end, so a worker
registers all its bench cases, runs them in one call and reads the figures back afterwards.
"""
from __future__ import annotations

import json
from pathlib import Path

from harness.measure.stopping import TIMEOUT_S
from harness.measure.timing import THROTTLE_FRACTION

# Criterion first: in 0.3.0 a later --stopping-criterion resets --max-noise/--min-time (nvbench #441).
ARGS = ["-d", "0", "-q", "--stopping-criterion", "stdrel", "--max-noise", "0.5", "--min-time", "0.25",
        "--min-samples", "10", "--timeout", f"{TIMEOUT_S:g}", "--throttle-threshold", f"{THROTTLE_FRACTION * 100:g}"]
MAX_NOISE = 0.005


def available() -> str | None:
    """None, or why nvbench cannot be the engine here."""
    try:
        from cuda import bench
        _ = bench.State   # touching it loads the native module, which needs a driver
        return None
    except Exception as exc:
        return f"cuda.bench unusable: {type(exc).__name__}: {exc}"


def run(benchmarks: list[tuple[str, object]], json_path: Path) -> dict[str, dict]:
    """Register (name, fn(state)) pairs, run them all, return figures per name."""
    from cuda import bench
    for name, fn in benchmarks:
        bench.register(fn).set_name(name)
    md = json_path.with_suffix(".md")        # keeps nvbench's log (throttle, timeout warnings)
    bench.run_all_benchmarks(["ways", *ARGS, "--jsonbin", str(json_path), "--md", str(md)])
    return parse(json_path)


def _value(summary: dict):
    data = {d["name"]: d for d in summary["data"]}
    d = data.get("value")
    if d is None:
        return None
    return int(d["value"]) if d["type"] == "int64" else float(d["value"]) if d["type"] == "float64" else d["value"]


def parse(json_path: Path) -> dict[str, dict]:
    doc = json.loads(Path(json_path).read_text())
    out = {}
    for b in doc["benchmarks"]:
        state = b["states"][0]
        if state.get("is_skipped"):
            out[b["name"]] = {"skipped": state.get("skip_reason", "")}
            continue
        s = {x["tag"]: _value(x) for x in state["summaries"]}

        def ms(tag, s=s):
            return s[tag] * 1e3 if s.get(tag) is not None else None
        noise = s.get("nv/cold/time/gpu/stdev/relative")
        walltime = s.get("nv/cold/walltime") or 0.0
        stopped = "timeout" if walltime >= TIMEOUT_S else "noise" if noise is not None and noise < MAX_NOISE \
            else "noise-stable"
        cold = {"median_ms": ms("nv/cold/time/gpu/median"), "q1_ms": ms("nv/cold/time/gpu/q1"),
                "q3_ms": ms("nv/cold/time/gpu/q3"), "mean_ms": ms("nv/cold/time/gpu/mean"),
                "min_ms": ms("nv/cold/time/gpu/min"), "noise": noise, "samples": s.get("nv/cold/sample_size"),
                "stopped_by": stopped, "walltime_s": walltime,
                "sm_clock_mhz": s["nv/cold/sm_clock_rate/mean"] / 1e6 if s.get("nv/cold/sm_clock_rate/mean") else None,
                "cpu_median_ms": ms("nv/cold/time/cpu/median")}
        warm = {"mean_ms": ms("nv/batch/time/gpu/mean"), "samples": s.get("nv/batch/sample_size")} \
            if s.get("nv/batch/time/gpu/mean") is not None else None
        out[b["name"]] = {"engine": "nvbench", "cold": cold, "warm": warm, "device_ms_cold": cold["median_ms"],
                          "device_ms_warm": warm and warm["mean_ms"], "stopped_by": stopped}
    out["__device__"] = doc["devices"][0] if doc.get("devices") else {}
    return out
