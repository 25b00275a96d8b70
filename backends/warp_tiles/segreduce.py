"""Per-row sum in Warp tiles, three ways (`Plan.kind`):
- "row": a block per row walks it in (1 x cols) tiles, adds each (as float32) into a register
  tile and reduces that once with tile_sum at the end;
- "rows": a block takes (rows x cols) tiles, several rows at a time, and sums each along its
  rows with tile_sum(axis=1);
- "loop": a block sums `rows` short rows one after another, each a single (1 x cols) tile
  reduced with tile_sum, the next row's load issued before the current row's sum.
`storage` "shared" loads tiles as 16-byte vectors through shared memory (without bounds or
alignment checks where every tile lies inside a 16-byte-aligned row), "register" loads each
thread's elements straight into registers, "prefetch" ("row" only) loads into registers the
tile after the one being added, as Warp's pipelined tile-matmul benchmark does. Which plan a
case gets is measured (BEST)."""
import functools
from typing import NamedTuple

import warp as wp

from backends.warp_tiles import warp_dtype
from problems.base import DTYPES


class Plan(NamedTuple):
    kind: str              # "row" | "rows" | "loop"
    rows: int              # rows a tile holds ("row": 1; "loop": rows a block walks)
    cols: int              # most columns a tile holds; a shorter row gets the power of two covering it
    block_dim: int
    storage: str           # "shared" | "register" | "prefetch"


# measured on an H100 by tools/warp_tiles_sweep.py (reports/h100/warp_tiles/README.md): rows of at
# least LONG columns take BEST["long", item size], shorter ones BEST["short"]. Register tiles load
# each element on its own (2 bytes a thread for 16-bit types), 2-D shared tiles as 16-byte vectors.
LONG = 4096
BEST = {("long", 4): Plan("row", 1, 4096, 256, "prefetch"), ("long", 2): Plan("row", 1, 4096, 128, "shared"),
        "short": Plan("loop", 4, LONG, 32, "register")}


@functools.cache
def row_kernel(dtype, tile_cols, shared, aligned):
    checked = not aligned      # aligned: every tile lies inside a row that starts on 16 bytes

    @wp.kernel(enable_backward=False, module="unique")
    def row_sum(x: wp.array2d[dtype], y: wp.array[wp.float32]):
        i = wp.tid()
        acc = wp.tile_zeros(shape=(1, tile_cols), dtype=wp.float32)
        for col in range(0, x.shape[1], tile_cols):
            if wp.static(shared):
                t = wp.tile_load(x, shape=(1, tile_cols), offset=(i, col), storage="shared",
                                 bounds_check=checked, aligned=aligned)
            else:
                t = wp.tile_load(x, shape=(1, tile_cols), offset=(i, col), storage="register")
            acc += wp.tile_astype(t, wp.float32)
        wp.tile_store(y, wp.tile_sum(acc), offset=i)

    return row_sum


@functools.cache
def row_prefetch_kernel(dtype, tile_cols):
    @wp.kernel(enable_backward=False, module="unique")
    def row_sum(x: wp.array2d[dtype], y: wp.array[wp.float32]):
        i = wp.tid()
        acc = wp.tile_zeros(shape=(1, tile_cols), dtype=wp.float32)
        t = wp.tile_load(x, shape=(1, tile_cols), offset=(i, 0), storage="register")
        for col in range(tile_cols, x.shape[1], tile_cols):
            nxt = wp.tile_load(x, shape=(1, tile_cols), offset=(i, col), storage="register")
            acc += wp.tile_astype(t, wp.float32)
            t = nxt
        acc += wp.tile_astype(t, wp.float32)
        wp.tile_store(y, wp.tile_sum(acc), offset=i)

    return row_sum


@functools.cache
def loop_kernel(dtype, rows, tile_cols):
    @wp.kernel(enable_backward=False, module="unique")
    def rows_loop(x: wp.array2d[dtype], y: wp.array[wp.float32]):
        first = wp.tid() * rows
        t = wp.tile_load(x, shape=(1, tile_cols), offset=(first, 0), storage="register")
        for r in range(first + 1, first + rows):      # rows past the end load as zeros, store nothing
            nxt = wp.tile_load(x, shape=(1, tile_cols), offset=(r, 0), storage="register")
            wp.tile_store(y, wp.tile_sum(wp.tile_astype(t, wp.float32)), offset=r - 1)
            t = nxt
        wp.tile_store(y, wp.tile_sum(wp.tile_astype(t, wp.float32)), offset=first + rows - 1)

    return rows_loop


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
    if p.kind == "loop":
        kernel = loop_kernel(dtype, tile_rows, tile_cols)
    elif p.kind == "rows":
        kernel = rows_kernel(dtype, tile_rows, tile_cols, shared)
    elif p.storage == "prefetch":
        kernel = row_prefetch_kernel(dtype, tile_cols)
    else:
        cols = case.shape["cols"]
        aligned = shared and cols % tile_cols == 0 and cols * DTYPES[case.dtype].itemsize % 16 == 0
        kernel = row_kernel(dtype, tile_cols, shared, aligned)
    return [(kernel, p.block_dim)]


def _shape(case, plan):
    cols = case.shape["cols"]
    p = plan or (BEST["long", DTYPES[case.dtype].itemsize] if cols >= LONG else BEST["short"])
    covering = 1 << max(cols - 1, 0).bit_length()
    if p.kind == "loop" and covering > p.cols:
        raise ValueError(f"a 'loop' plan takes each row as one tile: {cols} columns need cols >= {covering}")
    return p, 1 if p.kind == "row" else p.rows, min(p.cols, covering)


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
