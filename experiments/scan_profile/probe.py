"""One implementation's kernel, built by the lab's Session on a bench case, checked against the float64
reference, then called CALLS times more, for Nsight Compute to profile: where does a one-pass scan at
80% of the copy lose to one at 97% with the same look-back?

    ncu --kernel-name regex:scan --launch-skip 1 --launch-count 1 --section SpeedOfLight ... \
        python -m experiments.scan_profile.probe BACKEND [--variant V] [--case C] [--calls N]
"""
from __future__ import annotations

import argparse

import problems

PROBLEM, CASE = "scan", "268435456-float32"


def main(argv=None) -> int:
    from harness.run.session import Session
    from tools.sweep import build_and_check
    ap = argparse.ArgumentParser(prog="python -m experiments.scan_profile.probe", description=__doc__.splitlines()[0])
    ap.add_argument("backend")
    ap.add_argument("--variant", default="")
    ap.add_argument("--problem", default=PROBLEM)
    ap.add_argument("--case", default=CASE)
    ap.add_argument("--calls", type=int, default=2)
    args = ap.parse_args(argv)
    prob = problems.get(args.problem)
    case, s = prob.case(args.case), Session(args.backend, args.variant)
    run, build_s = build_and_check(s, args.problem, case, s.arrays(prob, case, 0), {})
    with s.backend.stream_context(s.stream):
        for _ in range(args.calls):
            run()
        s.device.sync()
    name = f"{args.backend}[{args.variant}]" if args.variant else args.backend
    print(f"{name} {args.case}: checked, built in {build_s:.1f} s, called {args.calls} more times")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
