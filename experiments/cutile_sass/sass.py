"""What cuTile's compiler makes of the GEMM's ct.mma per dtype and tile, read from the SASS of
the sm_90 cubin (no GPU needed): tensor-core instructions (HGMMA, HMMA) against SIMT ones (FFMA, FMUL,
FADD) and local-memory traffic (spills: STL / LDL). The kernels are backends/cutile/gemm.py's, exported
as the lab's compile-only path exports them (backends.cutile.array_param: the JIT's alignment facts).

    python -m experiments.cutile_sass.sass [--out FILE.json]     (cuda-tile with its tileiras; nvdisasm: Triton's)

Prints one line per configuration.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

CONFIGS = [("float32", "", {"tile": (32, 32, 32)}), ("float32", "", {"tile": (64, 64, 16)}),
           ("float32", "", {"tile": (64, 64, 32)}), ("float32", "tf32x3", {}), ("bfloat16", "", {}),
           ("bfloat16", "", {"tile": (128, 128, 64), "hints": {"occupancy": 1}, "latency": 0})]
COUNTED = ("HGMMA", "HMMA", "FFMA", "FMUL", "FADD", "STL", "LDL")


def nvdisasm() -> str:
    found = shutil.which("nvdisasm")
    if found:
        return found
    import triton
    return str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "nvdisasm")


def cubin(dtype: str, variant: str, knobs: dict, size: int = 4096) -> bytes:
    import problems
    from backends import implementation
    case = problems.get("gemm").custom_case({"M": size, "N": size, "K": size}, dtype)
    return implementation("cutile", "gemm").export(case, variant, "sm_90", **knobs)


def counts(binary: bytes) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(binary)
        f.flush()
        sass = subprocess.run([nvdisasm(), "-c", f.name], capture_output=True, text=True, check=True).stdout
    instruction = re.compile(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", re.M)
    ops = collections.Counter(m.group(1).split(".")[0] for m in instruction.finditer(sass))
    return {op: ops.get(op, 0) for op in COUNTED}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.cutile_sass.sass", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    rows = []
    for dtype, variant, knobs in CONFIGS:
        shown = {k: list(v) if isinstance(v, tuple) else v for k, v in knobs.items()}
        row = {"dtype": dtype, "variant": variant, "knobs": shown, **counts(cubin(dtype, variant, knobs))}
        rows.append(row)
        label = f"{dtype}{f'[{variant}]' if variant else ''} {row['knobs'] or 'defaults'}"
        print(f"{label:70s} " + " ".join(f"{op} {row[op]:4d}" for op in COUNTED), flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
