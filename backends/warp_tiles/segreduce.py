"""Per-row sum in Warp tiles, two ways (`Plan.kind`):
- "row": a block per row walks it in (1 x cols) tiles, adds each (as float32) into a register
  tile and reduces that once with tile_sum at the end;
- "rows": a block takes (rows x cols) tiles, several rows at a time, and sums each along its
  rows with tile_sum(axis=1).
`storage` "shared" loads tiles as 16-byte vectors through shared memory, "register" loads each
thread's elements straight into registers. Which plan a case gets is measured (BEST)."""
import functools
from typing import NamedTuple

import warp as wp

from backends.warp_tiles import warp_dtype


class Plan(NamedTuple):
    kind: str              # "row" | "rows"
    rows: int              # rows a tile holds ("row": 1)
    cols: int              # most columns a tile holds; a shorter row gets the power of two covering it
    block_dim: int
    storage: str           # "shared" | "register"


# measured on an H100 by tools/warp_tiles_sweep.py (reports/h100/warp_tiles/README.md):
# rows of at least LONG columns take BEST["long"], shorter ones BEST["short"]
LONG = 4096
BEST = {"long": Plan("row", 1, 4096, 256, "register"), "short": Plan("rows", 16, 256, 256, "register")}


@functools.cache
def row_kernel(dtype, tile_cols, shared):
    @wp.kernel(enable_backward=False, module="unique")
    def row_sum(x: wp.array2d[dtype], y: wp.array[wp.float32]):
        i = wp.tid()
        acc = wp.tile_zeros(shape=(1, tile_cols), dtype=wp.float32)
        for col in range(0, x.shape[1], tile_cols):
            if wp.static(shared):
                t = wp.tile_load(x, shape=(1, tile_cols), offset=(i, col), storage="shared")
            else:
                t = wp.tile_load(x, shape=(1, tile_cols), offset=(i, col), storage="register")
            acc += wp.tile_astype(t, wp.float32)
        wp.tile_store(y, wp.tile_sum(acc), offset=i)

    return row_sum


@functools.cache
def rows_kernel(dtype, tile_rows, tile_cols, shared):
    @wp.kernel(enable_backward=False, module="unique")
    def rows_sum(x: wp.array2d[dtype], y: wp.array[wp.float32]):
        i = wp.tid()
        total = wp.tile_zeros(shape=tile_rows, dtype=wp.float32)
        for col in range(0, x.shape[1], tile_cols):
            if wp.static(shared):
                t = wp.tile_load(x, shape=(tile_rows, tile_cols), offset=(i * tile_rows, col), storage="shared")
            else:
                t = wp.tile_load(x, shape=(tile_rows, tile_cols), offset=(i * tile_rows, col), storage="register")
            total += wp.tile_sum(wp.tile_astype(t, wp.float32), axis=1)
        wp.tile_store(y, total, offset=i * tile_rows)

    return rows_sum


def kernels(case, plan=None):
    """The (kernel, block_dim) pairs build() launches, for compiling ahead (tools/warp_tiles_sweep.py)."""
    p, tile_rows, tile_cols = _shape(case, plan)
    dtype, shared = warp_dtype(case.dtype), p.storage == "shared"
    kernel = row_kernel(dtype, tile_cols, shared) if p.kind == "row" else rows_kernel(dtype, tile_rows, tile_cols, shared)
    return [(kernel, p.block_dim)]


def _shape(case, plan):
    cols = case.shape["cols"]
    p = plan or BEST["long" if cols >= LONG else "short"]
    return p, 1 if p.kind == "row" else p.rows, min(p.cols, 1 << max(cols - 1, 0).bit_length())


def build(case, inputs, outputs, stream, variant="", plan=None):
    x, y = inputs["x"], outputs["y"]
    p, tile_rows, _ = _shape(case, plan)
    [(kernel, _)] = kernels(case, p)
    launch = wp.launch_tiled(kernel, dim=-(-x.shape[0] // tile_rows), inputs=[x, y], block_dim=p.block_dim,
                             device=x.device, record_cmd=True)
    wp.load_module(kernel.module, device=x.device, block_dim=p.block_dim)   # compile now, not at the first call

    def run():
        launch.launch(stream=stream)

    return run
