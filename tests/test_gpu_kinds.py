"""Launch configurations chosen per GPU kind: the kind is read from a tool's device name, and every
choice an implementation keeps for a kind is backed by a committed sweep on that kind, where it is
within SWEEP_NOISE points of the sweep's best for the case swept."""
import importlib
import json
from pathlib import Path

import pytest

from backends.gpus import model

SWEEPS = Path(__file__).resolve().parents[1] / "reports" / "evidence" / "h200-tuning" / "sweeps"
SWEEP_NOISE = 1.0           # points of the copy: cold timings of one plan move about this much between runs


@pytest.mark.parametrize("name,kind", [("NVIDIA H200", "H200"), ("NVIDIA H100 80GB HBM3", "H100"),
                                       (b"NVIDIA H100 NVL", "H100"), ("NVIDIA A100-SXM4-80GB", "A100"),
                                       ("NVIDIA GH200 480GB", "GH200"), ("NVIDIA GeForce RTX 4090", ""),
                                       ("x86_64", ""), ("", ""), (None, "")])
def test_model_from_a_device_name(name, kind):
    assert model(name) == kind


def _nvrtc_elementwise(m):
    return {"plan": m.BY_GPU["H200"]["float32"]._asdict()}, "268435456-float32"


def _warp_segreduce(key, case):
    def choice(m):
        plan = m.BY_GPU["H200"][key]._asdict()
        return {"plan": plan | {"cols": min(plan["cols"], 256)} if key == "short" else plan}, case
    return choice


# module, the tool it imports, the H200's choice as the sweep records its knobs (and the case), the sweep
CHOICES = [
    ("backends.nvrtc.elementwise", "cuda.core", _nvrtc_elementwise, "nvrtc-elementwise.json"),
    ("backends.nvrtc.segreduce", "cuda.core",
     lambda m: ({"at_once": m.BY_GPU["H200"], "warps": m.WARPS}, "1048576x256-float32"),
     "nvrtc-segreduce.json"),
    ("backends.triton.segreduce", "triton",
     lambda m: ({"per_program": m.BY_GPU["H200"] // 256, "warps": m.WARPS}, "1048576x256-float32"),
     "triton-segreduce.json"),
    ("backends.cutile.segreduce", "cuda.tile",
     lambda m: ({"tile_elements": m.BY_GPU["H200"]}, "1048576x256-float32"), "cutile-segreduce.json"),
    ("backends.nvrtc.scan", "cuda.core",
     lambda m: (dict(zip(("threads", "items"), m.BY_GPU["H200"], strict=True)), "268435456-float32"),
     "nvrtc-scan.json"),
    ("backends.cutile.scan", "cuda.tile", lambda m: ({"tile": m.BY_GPU["H200"]}, "268435456-float32"),
     "cutile-scan.json"),
    ("backends.warp_tiles.segreduce", "warp", _warp_segreduce("short", "1048576x256-float32"), "warp-segreduce.json"),
    ("backends.warp_tiles.segreduce", "warp", _warp_segreduce(("long", 4), "8192x32768-float32"),
     "warp-segreduce.json"),
    ("backends.warp_tiles.segreduce", "warp", _warp_segreduce(("long", 2), "8192x32768-bfloat16"),
     "warp-segreduce.json"),
    ("backends.cuda_coop.segreduce", "cuda.coop",
     lambda m: ({"loads": m.BY_GPU["H200"]}, "1048576x256-float32"), "cuda-coop-segreduce.json"),
    ("backends.numba_simt.segreduce", "numba",
     lambda m: ({"vectors": m.BY_GPU["H200"]}, "1048576x256-float32"), "numba-simt-segreduce.json"),
]


def _knobs(row: dict) -> dict:
    return row.get("knobs") or {"plan": row["plan"]}


@pytest.mark.parametrize("module,tool,choice,sweep", CHOICES, ids=[f"{c[0]}-{k}" for k, c in enumerate(CHOICES)])
def test_a_kind_s_choice_is_its_sweep_s_best(module, tool, choice, sweep):
    pytest.importorskip(tool, reason=f"{module} imports {tool}")
    knobs, case = choice(importlib.import_module(module))
    rows = [r for r in json.loads((SWEEPS / sweep).read_text()) if r["case"] == case and r["status"] == "ok"]
    assert rows, f"{sweep} has no ok row for {case}"
    best = max(r["pct_of_reference"] for r in rows)
    chosen = [r for r in rows if _knobs(r) == knobs]
    assert chosen, f"{knobs} is not among {sweep}'s candidates for {case}"
    assert chosen[0]["pct_of_reference"] >= best - SWEEP_NOISE, (chosen[0]["pct_of_reference"], best)


def test_every_per_gpu_table_is_one_by_gpu_read_through_tuned():
    """One mechanism: a module-level table keyed by GPU models is named BY_GPU and read with tuned()."""
    import ast

    from tests.conftest import ROOT
    found = []
    for path in sorted((ROOT / "backends").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and any(
                    isinstance(k, ast.Constant) and isinstance(k.value, str) and model(k.value) == k.value
                    for k in node.value.keys if k is not None):
                found.append((path.relative_to(ROOT), [t.id for t in node.targets if isinstance(t, ast.Name)]))
    assert found and all(names == ["BY_GPU"] for _, names in found), found
    assert all("tuned(BY_GPU" in (ROOT / path).read_text() for path, _ in found)
