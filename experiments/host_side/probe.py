"""What the host side of one bench case costs on this machine, piece by piece (the phase
profile sums them per run; this splits them): inputs, float64 reference, the case-data store's
round trip (harness/run/case_store.py), the poisoned output, uploads and downloads through torch,
and the check.

    python -m experiments.host_side.probe [--problem elementwise] [--case 268435456-float32] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

import problems
from harness.run import case_store
from problems.base import poison


def probe(problem_name: str, case_name: str) -> dict:
    import torch
    problem = problems.get(problem_name)
    case = problem.case(case_name)
    seconds: dict[str, float] = {}

    def timed(name, fn):
        t0 = time.perf_counter()
        out = fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        seconds[name] = round(time.perf_counter() - t0, 4)
        return out

    inputs = timed("make_inputs", lambda: problem.make_inputs(case, case.seed))
    ref = timed("reference (float64)", lambda: problem.reference(case, inputs))
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "case"
        timed("case store: save", lambda: case_store.save(store, (inputs, ref)))
        loaded = timed("case store: load (mapped)", lambda: case_store.load(store))
        timed("case store: read every byte of the mapped inputs",
              lambda got=loaded: [np.asarray(v).view(np.uint8).sum() for v in got[0].values() if hasattr(v, "nbytes")])
        loaded = None
    spec = problem.output_spec(case)
    host_out = timed("poisoned outputs", lambda: {k: poison(shape, dt) for k, (shape, dt) in spec.items()})
    arrays = {k: v for k, v in inputs.items() if hasattr(v, "nbytes")}
    if not torch.cuda.is_available():
        return {"problem": problem_name, "case": case_name, "seconds": seconds, "note": "no GPU: host pieces only"}
    dev = timed("upload inputs (pageable)", lambda: {k: torch.from_numpy(v).cuda() for k, v in arrays.items()})
    timed("upload inputs (pinned, pinning included)",
          lambda: {k: torch.from_numpy(v).pin_memory().cuda(non_blocking=True) for k, v in arrays.items()})
    out = timed("upload poisoned outputs", lambda: {k: torch.from_numpy(v).cuda() for k, v in host_out.items()})
    back = timed("download outputs", lambda: {k: v.cpu().numpy() for k, v in out.items()})
    got = {k: arrays.get("y", v) if problem_name == "elementwise" else v for k, v in back.items()}
    try:
        timed("check", lambda: problem.check(got, ref, case))
    except Exception as exc:          # poisoned or stand-in outputs: the check's cost is what counts
        seconds["check failed as expected"] = type(exc).__name__
    del dev
    return {"problem": problem_name, "case": case_name, "seconds": seconds,
            "bytes": {k: int(v.nbytes) for k, v in arrays.items()}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", default="elementwise")
    ap.add_argument("--case", default="268435456-float32")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    result = probe(args.problem, args.case)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
