"""Implementations checked against each other: pairwise max differences of their outputs on the
same test inputs (the first seed), saved by the workers as float32 .npy files."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np


def pairwise(root: Path) -> list[dict]:
    rows = []
    if not root.is_dir():
        return rows
    for case_dir in sorted(p for p in root.glob("*/*") if p.is_dir()):
        by_output: dict[str, dict[str, Path]] = {}
        for f in sorted(case_dir.glob("*.npy")):
            label, output = f.name[:-len(".npy")].rsplit(".", 1)
            by_output.setdefault(output, {})[label] = f
        for output, files in by_output.items():
            arrays = {k: np.load(v).astype(np.float64) for k, v in files.items()}
            for a, b in itertools.combinations(sorted(arrays), 2):
                x, y = arrays[a], arrays[b]
                if x.shape != y.shape:
                    continue
                diff = float(np.max(np.abs(x - y))) if x.size else 0.0
                scale = float(max(np.max(np.abs(x)), np.max(np.abs(y)))) if x.size else 0.0
                rows.append({"problem": case_dir.parent.name, "case": case_dir.name, "output": output,
                             "a": a, "b": b, "max_abs_diff": diff,
                             "max_rel_diff": diff / scale if scale > 0 else diff})
    return rows
