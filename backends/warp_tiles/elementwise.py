"""z = alpha * x + y in Warp tiles, computed in float32, two ways (`Plan.cols`):
- 0: each block loads a 1-D register tile of x and of y and stores one of z (tile_load/tile_store
  bounds-check the last, partial tile);
- C > 0: the first n - n % C elements are seen as rows of C, whose 2-D shared-memory tiles Warp
  loads and stores as 16-byte vectors (it does so for 2-D tiles only); a second launch does the
  last n % C elements with 1-D tiles.
Which plan a dtype gets is measured (BEST)."""
import functools
from typing import NamedTuple

import warp as wp

from backends.base import compiling
from backends.warp_tiles import warp_dtype
from problems.base import DTYPES


class Plan(NamedTuple):
    cols: int              # 0: 1-D tiles; else the row length of the 2-D view
    tile: int              # elements a block handles
    block_dim: int


# measured on an H100 by tools/warp_tiles_sweep.py (reports/evidence/warp-tiles/README.md): 16-bit types
# need the 2-D shared-memory tiles, whose loads and stores Warp vectorizes to 16 bytes
BEST = {"float32": Plan(0, 2048, 256), "float16": Plan(256, 2048, 64), "bfloat16": Plan(256, 2048, 64)}


@functools.cache
def axpy_1d(dtype, tile):
    @wp.kernel(enable_backward=False, module="unique")
    def axpy(x: wp.array[dtype], y: wp.array[dtype], z: wp.array[dtype], alpha: wp.float32):
        i = wp.tid()
        tx = wp.tile_astype(wp.tile_load(x, shape=tile, offset=i * tile), wp.float32)
        ty = wp.tile_astype(wp.tile_load(y, shape=tile, offset=i * tile), wp.float32)
        wp.tile_store(z, wp.tile_astype(tx * alpha + ty, dtype), offset=i * tile)

    return axpy


@functools.cache
def axpy_2d(dtype, rows, cols, aligned):
    checked = not aligned      # aligned: whole tiles of 16-byte rows, so no bounds or alignment checks

    @wp.kernel(enable_backward=False, module="unique")
    def axpy(x: wp.array2d[dtype], y: wp.array2d[dtype], z: wp.array2d[dtype], alpha: wp.float32):
        i = wp.tid()
        tx = wp.tile_load(x, shape=(rows, cols), offset=(i * rows, 0), storage="shared", bounds_check=checked,
                          aligned=aligned)
        ty = wp.tile_load(y, shape=(rows, cols), offset=(i * rows, 0), storage="shared", bounds_check=checked,
                          aligned=aligned)
        tz = wp.tile_empty(shape=(rows, cols), dtype=dtype, storage="shared")
        z32 = wp.tile_astype(tx, wp.float32) * alpha + wp.tile_astype(ty, wp.float32)
        wp.tile_assign(tz, wp.tile_astype(z32, dtype))
        wp.tile_store(z, tz, offset=(i * rows, 0), bounds_check=checked, aligned=aligned)

    return axpy


def kernels(case, plan=None):
    """The (kernel, block_dim) pairs build() launches, for compiling ahead (tools/warp_tiles_sweep.py)."""
    p = plan or BEST[case.dtype]
    dtype, n = warp_dtype(case.dtype), case.shape["n"]
    body = n - n % p.cols if p.cols else 0
    rows = p.tile // p.cols if p.cols else 0
    aligned = bool(body) and (body // p.cols) % rows == 0 and p.cols * DTYPES[case.dtype].itemsize % 16 == 0
    return ([(axpy_2d(dtype, rows, p.cols, aligned), p.block_dim)] if body else []) + \
        ([(axpy_1d(dtype, p.cols or p.tile), p.block_dim)] if body < n else [])


def build(case, inputs, outputs, stream, variant="", plan=None):
    x, y, z = inputs["x"], inputs["y"], outputs["z"]
    p = plan or BEST[case.dtype]
    alpha, n = float(inputs["alpha"]), x.shape[0]
    body = n - n % p.cols if p.cols else 0
    arrays = []
    if body:
        arrays.append([a[:body].reshape((body // p.cols, p.cols)) for a in (x, y, z)])
    if body < n:
        arrays.append([a[body:] for a in (x, y, z)])
    launches = []
    for (kernel, block_dim), views in zip(kernels(case, p), arrays, strict=True):
        tile_items = p.tile // p.cols if views[0].ndim == 2 else (p.cols or p.tile)   # rows or elements
        with compiling():      # compile now (CPU work), not in launch_tiled holding the GPU nor at the first call
            wp.load_module(kernel.module, device=x.device, block_dim=block_dim)
        launch = wp.launch_tiled(kernel, dim=-(-views[0].shape[0] // tile_items), inputs=[*views, alpha],
                                 block_dim=block_dim, device=x.device, record_cmd=True)
        launches.append(launch)

    def run():
        for launch in launches:
            launch.launch(stream=stream)

    return run
