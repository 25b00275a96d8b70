"""Per-row sum in Gluon: each program sums ROWS rows, walking their columns in BLOCK-wide tiles of a
blocked layout chosen on the host (16 bytes a thread along a row, a row's tile across a warp's lanes
and then its warps, the rest of the lanes and warps on more rows), a float32 accumulator, the sum over
the columns' axis into the layout's row slice."""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

IN_FLIGHT = 4096         # elements a program has in flight
MAX_BLOCK, MAX_ROWS = 4096, 64
WARPS = 8
VECTOR_BYTES = 16


@gluon.jit
def row_sum(x_ptr, y_ptr, rows, cols, ROWS: gl.constexpr, BLOCK: gl.constexpr, layout: gl.constexpr):
    r = gl.program_id(0).to(gl.int64) * ROWS + gl.arange(0, ROWS, layout=gl.SliceLayout(1, layout))
    c = gl.arange(0, BLOCK, layout=gl.SliceLayout(0, layout))
    row = gl.expand_dims(r, 1)
    acc = gl.zeros([ROWS, BLOCK], gl.float32, layout)
    for start in range(0, cols, BLOCK):
        col = gl.expand_dims(start + c, 0)
        acc += gl.load(x_ptr + row * cols + col, mask=(row < rows) & (col < cols), other=0.0).to(gl.float32)
    gl.store(y_ptr + r, gl.sum(acc, axis=1), mask=r < rows)


def plan(rows, cols, dtype):
    """(ROWS, BLOCK, layout, warps): the tile a program sums and how its threads cover it."""
    block = min(MAX_BLOCK, triton.next_power_of_2(cols))
    per_program = max(1, min(MAX_ROWS, IN_FLIGHT // block))
    warps = WARPS if block * per_program >= IN_FLIGHT else WARPS // 2
    vec = min(block, VECTOR_BYTES // dtype.itemsize)
    lanes_c = min(32, block // vec)
    warps_c = min(warps, max(1, block // (vec * lanes_c)))
    layout = gl.BlockedLayout(size_per_thread=[1, vec], threads_per_warp=[32 // lanes_c, lanes_c],
                              warps_per_cta=[warps // warps_c, warps_c], order=[1, 0])
    return per_program, block, layout, warps


def build(case, inputs, outputs, stream, variant=""):
    x, y = inputs["x"], outputs["y"]
    rows, cols = x.shape
    per_program, block, layout, warps = plan(rows, cols, x.dtype)
    grid = (triton.cdiv(rows, per_program),)
    row_sum.warmup(x, y, rows, cols, per_program, block, layout, num_warps=warps, grid=grid)

    def run():
        row_sum[grid](x, y, rows, cols, per_program, block, layout, num_warps=warps)

    return run


def export(case, variant, target):
    """The case's kernel compiled for `target` (sm_90a) without a GPU: its cubin."""
    from backends.gluon import cubin
    rows, cols = case.shape["rows"], case.shape["cols"]
    x, y = torch.empty(rows, cols, dtype=getattr(torch, case.dtype)), torch.empty(rows, dtype=torch.float32)
    per_program, block, layout, warps = plan(rows, cols, x.dtype)
    return cubin(row_sum, {"x_ptr": x, "y_ptr": y, "rows": rows, "cols": cols},
                 {"ROWS": per_program, "BLOCK": block, "layout": layout}, warps, target)
