"""The scan problem's check: a scan computed as parallel scans compute it (float32, a scan inside each
tile, a chain of tile carries) passes on every test case; the same scan with a usual mistake fails on
every case where the mistake changes the answer."""
import numpy as np
import pytest

import problems
from problems.base import CheckError, decode, poison

SCAN = problems.get("scan")
TESTS = [c for c in SCAN.cases() if c.kind == "test"]
TILE = 256


def tiled_scan(case, inputs, mistake=""):
    """y in float32, tile by tile: each tile's own scan plus the carry of the tiles before it."""
    x = decode(inputs["x"], case.dtype, np.float32)
    y = np.empty_like(x)
    carry = np.float32(0)
    for start in range(0, x.size, TILE):
        tile = x[start:start + TILE]
        local = np.cumsum(tile, dtype=np.float32)
        if mistake == "exclusive":
            local = local - tile
        y[start:start + TILE] = local + (np.float32(0) if mistake == "no carry" else carry)
        if not (mistake == "drops one carry" and start == TILE):
            carry = np.float32(carry + local[-1] + (tile[-1] if mistake == "exclusive" else 0))
    if mistake == "lost tail" and x.size % TILE:
        y[x.size - x.size % TILE:] = poison((x.size % TILE,), "float32")
    return {"y": y}


def inputs_and_reference(case):
    inputs = SCAN.make_inputs(case, case.seed)
    return inputs, SCAN.reference(case, inputs)


@pytest.mark.parametrize("case", TESTS, ids=lambda c: c.name)
def test_a_tiled_float32_scan_passes(case):
    inputs, ref = inputs_and_reference(case)
    SCAN.check(tiled_scan(case, inputs), ref, case)


@pytest.mark.parametrize("case", TESTS, ids=lambda c: c.name)
def test_a_sequential_float32_scan_passes(case):
    """The deepest chain of additions a scan may take: one after another."""
    inputs, ref = inputs_and_reference(case)
    x = decode(inputs["x"], case.dtype, np.float32)
    SCAN.check({"y": np.cumsum(x, dtype=np.float32)}, ref, case)


@pytest.mark.parametrize("mistake,min_n", [("exclusive", 1), ("no carry", TILE + 1), ("drops one carry", 2 * TILE + 1),
                                           ("lost tail", 1)])
@pytest.mark.parametrize("case", TESTS, ids=lambda c: c.name)
def test_a_scan_with_a_mistake_fails(case, mistake, min_n):
    n = case.shape["n"]
    if n < min_n or (mistake == "lost tail" and n % TILE == 0):
        pytest.skip(f"{mistake} does not change a scan of {n}")
    inputs, ref = inputs_and_reference(case)
    with pytest.raises(CheckError):
        SCAN.check(tiled_scan(case, inputs, mistake), ref, case)


def test_the_bound_grows_with_depth_and_the_prefix():
    case = SCAN.case("4097-float32")
    _, ref = inputs_and_reference(case)
    bound = np.broadcast_to(ref["y"].bound, ref["y"].value.shape)
    assert (np.diff(bound) >= 0).all()
    assert bound[-1] < 1e-3 * abs(ref["y"].value[-1])      # tight: a lost tile's sum is far beyond it


LOOK_BACK = r"""
import sys
import torch
from backends.triton import scan
prefix_at, tile, block = int(sys.argv[1]), 70, 64
x = torch.rand((tile + 1) * block, dtype=torch.float32)
y = torch.full_like(x, float("nan"))
aggregates = torch.rand(tile, dtype=torch.float32)
prefixes = torch.rand(tile, dtype=torch.float32) * 100
status = torch.full((tile,), int(scan.AGGREGATE))
status[prefix_at] = int(scan.PREFIX)
status[:prefix_at // 2] = int(scan.PREFIX)           # older prefixes: never reached
values = torch.where(status == int(scan.PREFIX), prefixes, aggregates)
words = (status.to(torch.int64) << 32) | (values.view(torch.int32).to(torch.int64) & 0xFFFFFFFF)
state = torch.cat([torch.tensor([tile]), words, torch.zeros(1, dtype=torch.int64)])
scan.scan[(1,)](x, y, x.numel(), state, BLOCK=block)
mine = slice(tile * block, None)
expect = torch.cumsum(x[mine].double(), 0) + values[prefix_at:].double().sum()
assert torch.allclose(y[mine].double(), expect, rtol=1e-5), (y[mine][:4], expect[:4])
assert torch.isnan(y[:tile * block]).all()           # the other tiles: not this program's
assert state[1 + tile] >> 32 == int(scan.PREFIX)     # its own inclusive prefix published
"""


@pytest.mark.parametrize("prefix_at", [0, 5, 40, 69])
def test_tritons_look_back_adds_aggregates_back_to_the_nearest_prefix(prefix_at):
    """The one-pass Triton scan's look-back, in Triton's interpreter (which runs programs one at a time,
    so a full launch only ever meets its predecessor's prefix): one program given tile 70 by the ticket,
    its predecessors' words published by hand (aggregates, older prefixes, and the nearest prefix at
    `prefix_at`) so that its look-back crosses windows; it must add every word back to that prefix.
    In a process of its own: the interpreter is chosen when Triton's kernels are defined."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    out = subprocess.run([sys.executable, "-c", LOOK_BACK, str(prefix_at)], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]


NUMBA_WARP_LOOK_BACK = r"""
import numba
from numba import cuda
from backends.numba_simt import scan
u64 = numba.uint64[::1]
for dtype, x in (("float32", numba.float32[::1]), ("bfloat16", numba.uint16[::1])):
    sig = (u64, u64, x, u64, numba.float32[::1], numba.int64)
    ptx, _ = cuda.compile_ptx(scan.KERNELS[dtype].py_func, sig, cc=(9, 0))
    assert "vote.sync.any" in ptx and "vote.sync.ballot" in ptx and "shfl.sync.bfly" in ptx, dtype
print("compiled")
"""


def test_numba_simts_scan_compiles_its_warp_look_back_for_sm90():
    """The numba_simt scan's GPU look-back (a warp reading 32 predecessors at once: vote and xor
    shuffles, which the simulator lacks) compiles for sm_90 without a GPU. In a process of its own,
    outside the simulator: the kernels' look-back is chosen at import."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT
    pytest.importorskip("numba.cuda")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-c", NUMBA_WARP_LOOK_BACK], cwd=ROOT, capture_output=True, text=True,
                         env=env, timeout=600)
    if out.returncode != 0 and "NVVM" in out.stderr and "compiled" not in out.stdout:
        pytest.skip(f"numba-cuda finds no NVVM to compile with: {out.stderr.strip().splitlines()[-1][:200]}")
    assert out.returncode == 0 and "compiled" in out.stdout, out.stderr[-3000:]


def test_the_scan_profile_probe_checks_then_calls_again(capsys):
    """experiments/scan_profile builds an implementation by the lab's Session, checks it against the
    float64 reference and calls it again (what Nsight Compute profiles); NumPy's scan on the CPU here."""
    from experiments.scan_profile import probe
    assert probe.main(["array_api", "--variant", "numpy", "--case", "4097-float32", "--calls", "3"]) == 0
    out = capsys.readouterr().out
    assert "4097-float32: checked" in out and "called 3 more times" in out
