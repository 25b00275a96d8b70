"""Per-row sum in Warp tiles, three ways (`Plan.kind`):
- "shared": a block per row walks it in (1 x cols) shared-memory tiles, which Warp loads as
  16-byte vectors (without bounds or alignment checks where every tile lies inside a row that
  starts on 16 bytes), adds each (as float32) into a register tile and reduces that once with
  tile_sum at the end;
- "prefetch": the same walk with register tiles, the next tile's load issued before the current
  one is added, as Warp's pipelined tile-matmul benchmark does (register tiles load an element a
  thread at a time: fast for float32, not for 16-bit types);
- "loop": a block sums `rows` short rows one after another, each a single (1 x cols) register
  tile reduced with tile_sum, the next row's load issued before the current row's sum.
Which plan a case gets is measured, per GPU kind where the kinds differ (BEST, BY_GPU); plans that
lost (register tiles without prefetch, several rows a tile with tile_sum(axis=1)) are in
reports/evidence/warp-tiles/README.md."""
import functools
from typing import NamedTuple

import warp as wp

from backends.base import compiling
from backends.gpus import tuned
from backends.warp_tiles import warp_dtype
from problems.base import DTYPES


class Plan(NamedTuple):
    kind: str              # "shared" | "prefetch" | "loop"
    rows: int              # rows a block walks ("loop"; 1 otherwise)
    cols: int              # most columns a tile holds; a shorter row gets the power of two covering it
    block_dim: int


# measured by tools/warp_tiles_sweep.py on an H100 (reports/evidence/warp-tiles/README.md) and an H200
# (reports/evidence/h200-tuning/): rows of at least LONG columns take BEST["long", item size], shorter
# ones BEST["short"]. 16-bit long rows: 2048-column tiles of 64 threads are 0.8 points below the H100's
# best plan and 3.5 below the H200's, where the H100's pick (4096 x 128) is 9.4 below it
LONG = 4096
BEST = {("long", 4): Plan("prefetch", 1, 4096, 256), ("long", 2): Plan("shared", 1, 2048, 64),
        "short": Plan("loop", 4, LONG, 32)}
# where one GPU kind's sweep puts another plan more than 2 points above BEST's: the H200 (% of the copy,
# reports/evidence/h200-tuning/sweeps/warp-segreduce.json): fp32 long rows 90.6 (BEST's 88.0), 16-bit
# long rows 87.2 (83.7), short rows 92.7 (89.9)
BY_GPU = {"H200": {("long", 4): Plan("prefetch", 1, 1024, 512), ("long", 2): Plan("shared", 1, 1024, 32),
                   "short": Plan("loop", 16, LONG, 32)}}


@functools.cache
def shared_kernel(dtype, tile_cols, aligned):
    checked = not aligned

    @wp.kernel(enable_backward=False, module="unique")
    def row_sum(x: wp.array2d[dtype], y: wp.array[wp.float32]):
        i = wp.tid()
        acc = wp.tile_zeros(shape=(1, tile_cols), dtype=wp.float32)
        for col in range(0, x.shape[1], tile_cols):
            t = wp.tile_load(x, shape=(1, tile_cols), offset=(i, col), storage="shared", bounds_check=checked,
                             aligned=aligned)
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


def kernels(case, plan=None):
    """The (kernel, block_dim) pairs build() launches, for compiling ahead (tools/warp_tiles_sweep.py)."""
    p, tile_cols = _shape(case, plan)
    dtype, cols = warp_dtype(case.dtype), case.shape["cols"]
    if p.kind == "loop":
        kernel = loop_kernel(dtype, p.rows, tile_cols)
    elif p.kind == "prefetch":
        kernel = row_prefetch_kernel(dtype, tile_cols)
    else:
        kernel = shared_kernel(dtype, tile_cols, cols % tile_cols == 0 and cols * DTYPES[case.dtype].itemsize % 16 == 0)
    return [(kernel, p.block_dim)]


def _shape(case, plan, on_gpu=False):
    cols, best = case.shape["cols"], tuned(BY_GPU, BEST) if on_gpu else BEST
    p = plan or (best["long", DTYPES[case.dtype].itemsize] if cols >= LONG else best["short"])
    covering = 1 << max(cols - 1, 0).bit_length()
    if p.kind == "loop" and covering > p.cols:
        raise ValueError(f"a 'loop' plan takes each row as one tile: {cols} columns need cols >= {covering}")
    return p, min(p.cols, covering)


def build(case, inputs, outputs, stream, variant="", plan=None):
    x, y = inputs["x"], outputs["y"]
    p, _ = _shape(case, plan, x.device.is_cuda)
    [(kernel, _)] = kernels(case, p)
    with compiling():          # compile now (CPU work), not in launch_tiled holding the GPU nor at the first call
        wp.load_module(kernel.module, device=x.device, block_dim=p.block_dim)
    launch = wp.launch_tiled(kernel, dim=-(-x.shape[0] // p.rows), inputs=[x, y], block_dim=p.block_dim,
                             device=x.device, record_cmd=True)

    def run():
        launch.launch(stream=stream)

    return run
