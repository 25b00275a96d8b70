"""Per-row sum in Warp tiles: each block loads (rows x columns) tiles of its rows, sums them along
the rows with tile_sum(axis=1) in float32 and walks the columns tile by tile; short rows share a
block (ROWS_PER_TILE of them), long rows get one block each."""
import functools

import warp as wp

from backends.warp_tiles import warp_dtype

TILE_ELEMENTS = 4096           # elements one block loads at a time: 16 per thread
BLOCK_DIM = 256


@functools.cache
def row_sum_kernel(dtype, tile_rows, tile_cols):
    @wp.kernel(enable_backward=False, module="unique")
    def row_sum(x: wp.array2d[dtype], y: wp.array[wp.float32]):
        i = wp.tid()
        total = wp.tile_zeros(shape=tile_rows, dtype=wp.float32)
        for col in range(0, x.shape[1], tile_cols):
            t = wp.tile_load(x, shape=(tile_rows, tile_cols), offset=(i * tile_rows, col))
            total += wp.tile_sum(wp.tile_astype(t, wp.float32), axis=1)
        wp.tile_store(y, total, offset=i * tile_rows)

    return row_sum


def build(case, inputs, outputs, stream, variant=""):
    x, y = inputs["x"], outputs["y"]
    rows, cols = x.shape
    # a power of two of columns covering the row (up to TILE_ELEMENTS), the rest of the tile in rows
    tile_cols = min(TILE_ELEMENTS, 1 << max(cols - 1, 0).bit_length())
    tile_rows = TILE_ELEMENTS // tile_cols
    kernel = row_sum_kernel(warp_dtype(case.dtype), tile_rows, tile_cols)
    launch = wp.launch_tiled(kernel, dim=-(-rows // tile_rows), inputs=[x, y], block_dim=BLOCK_DIM,
                             device=x.device, record_cmd=True)
    wp.load_module(kernel.module, device=x.device)

    def run():
        launch.launch(stream=stream)

    return run
