"""Where the nvmath_device row sum's time goes: its kernel beside two halves of it with
the same plan, block and grid: "loads" streams X through cuBLASDx's copy into shared memory slice by
slice and never calls MM.execute; "execute" loads one slice and runs MM.execute as many times as the
kernel has slices. Each is timed cold like the sweeps (tools/sweep.py) against the 1 GiB copy.
`--once` runs each kernel once and exits (for `ncu`).

    python -m experiments.nvmath_rowsum.probe [--case 8192x32768-float32] [--once] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import problems

CASES = ("8192x32768-float32", "1048576x256-float32")


def halves(dtype, plan):
    """(loads-only kernel, execute-only kernel) for `plan`, with the MM of the lab's kernel."""
    import numpy as np
    from numba import cuda
    from nvmath.device.common import clear, copy, copy_fragment, copy_wait, make_tensor

    from backends.nvmath_device.segreduce import gemv_matmul
    T = np.dtype(dtype).type
    tm, tk = plan.rows, plan.cols
    MM, smem_a, smem_b, rmem_c = gemv_matmul(dtype, plan)
    a_size, b_size, c_size = smem_a.cosize, smem_b.cosize, rmem_c.cosize

    @cuda.jit
    def loads(x, ones, y):
        cols, splits = x.shape[1], cuda.gridDim.y
        rows = x[cuda.blockIdx.x * tm:(cuda.blockIdx.x + 1) * tm, cuda.blockIdx.y * (cols // splits):]
        smem = cuda.shared.array(shape=(0,), dtype=T, alignment=16)
        a_tile = make_tensor(smem[0:a_size], smem_a)
        for s in range(cols // splits // tk):
            copy(make_tensor(rows[:, s * tk:(s + 1) * tk], MM.get_layout_gmem_a(cols)), a_tile, alignment=16)
            copy_wait()
        if cuda.threadIdx.x < tm:        # keeps the loads alive: one value per row
            y[cuda.blockIdx.x * tm + cuda.threadIdx.x, cuda.blockIdx.y] = smem[cuda.threadIdx.x * tk]

    @cuda.jit
    def execute(x, ones, y):
        cols, splits = x.shape[1], cuda.gridDim.y
        rows = x[cuda.blockIdx.x * tm:(cuda.blockIdx.x + 1) * tm, cuda.blockIdx.y * (cols // splits):]
        smem = cuda.shared.array(shape=(0,), dtype=T, alignment=16)
        a_tile = make_tensor(smem[0:a_size], smem_a)
        b_tile = make_tensor(smem[a_size:a_size + b_size], smem_b)
        copy(make_tensor(ones, MM.get_layout_gmem_b(1)), b_tile)
        copy(make_tensor(rows[:, 0:tk], MM.get_layout_gmem_a(cols)), a_tile, alignment=16)
        copy_wait()
        acc = make_tensor(cuda.local.array(shape=(c_size,), dtype=np.float32), rmem_c)
        clear(acc)
        for _ in range(cols // splits // tk):
            MM.execute(a_tile, b_tile, acc)
        copy_fragment(acc, make_tensor(y[cuda.blockIdx.x * tm:(cuda.blockIdx.x + 1) * tm, cuda.blockIdx.y:],
                                       MM.get_layout_gmem_c(splits)))

    return loads, execute, (a_size + b_size) * np.dtype(T).itemsize


def probe(case_name: str, once: bool) -> list[dict]:
    from backends.nvmath_device._tiles import compiled_with_smem
    from backends.nvmath_device.segreduce import operands, plan_for
    from harness.run.session import Session
    from tools.sweep import build_and_check, pct_of_reference, reference_ms, timed
    prob = problems.get("segreduce")
    case = prob.case(case_name)
    s = Session("nvmath_device", "")
    arrays = s.arrays(prob, case, 0)
    x = arrays[1]["x"]
    plan = plan_for(x.shape[1])
    ref = None if once else reference_ms("segreduce", case, s, {})[1]
    full, _ = build_and_check(s, "segreduce", case, arrays, {"plan": plan})
    loads, execute, smem = halves(case.dtype, plan)
    x_p, ones, y_p = operands(x, case.dtype, plan)
    grid = (x_p.shape[0] // plan.rows, plan.splits)
    runs = {"kernel": full}
    for name, kernel in (("loads", loads), ("execute", execute)):
        compiled_with_smem(kernel, smem, x_p, ones, y_p)
        runs[name] = (lambda k: lambda: k[grid, plan.block, s.stream, smem](x_p, ones, y_p))(kernel)
    rows = []
    for name, run in runs.items():
        if once:
            run()
            s.device.sync()
            continue
        row = timed(s, "segreduce", case, run, ref, warm_s=0.5)
        rows.append({"case": case_name, "plan": plan._asdict(), "part": name, "reference_ms": ref, **row,
                     "pct_of_copy": pct_of_reference("segreduce", case, row["cold_ms"], ref)})
        print(f"{case_name} {tuple(plan)} {name:8s} {row['cold_ms']:.4f} ms {row['gb_per_s']:6.0f} GB/s "
              f"{rows[-1]['pct_of_copy']:5.1f}% of the copy ({ref:.4f} ms)", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.nvmath_rowsum.probe", description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", choices=CASES)
    ap.add_argument("--once", action="store_true", help="run each kernel once (for ncu) instead of timing")
    ap.add_argument("--out", type=Path, help="write the rows as JSON here")
    args = ap.parse_args(argv)
    rows = [r for c in args.case or CASES for r in probe(c, args.once)]
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
