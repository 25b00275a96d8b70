"""Per-row sum in cuTile, the way its LayerNorm sample walks a row: a block owns `rows` rows and
adds (rows x cols) tiles, widened to float32, into a float32 tile; one ct.sum over the columns at
the end. Short rows share a block; a long row walks its columns tile by tile."""
import cuda.tile as ct
import torch

from backends.cutile import array_param, compile_on_scratch, cubin
from backends.gpus import tuned

TILE_ELEMENTS = 4096
# short rows' tile per GPU kind where its sweep differs: on the H200, 8192 elements reach 99.7% of the copy
# on 2^20 rows of 256 float32, 4096 89.8 (reports/evidence/h200-tuning/sweeps/cutile-segreduce.json); a long
# row's tile (TILE_ELEMENTS columns) is at its case's best there
BY_GPU = {"H200": 8192}


@ct.kernel(occupancy=4)     # 4 blocks per SM: 108% of torch.sum on 2^20 x 256 (47.6% without)
def row_sum(x, y, rows: ct.Constant[int], cols: ct.Constant[int]):
    bid = ct.bid(0)
    acc = ct.full((rows, cols), 0, dtype=ct.float32)
    for j in range(ct.num_tiles(x, axis=1, shape=(rows, cols))):
        t = ct.load(x, index=(bid, j), shape=(rows, cols), padding_mode=ct.PaddingMode.ZERO)
        acc += t.astype(ct.float32)
    ct.store(y, index=(bid,), tile=ct.sum(acc, axis=1))


def tile_shape(n_cols, elements=TILE_ELEMENTS):
    """Columns: the power of two covering a row, up to `elements`; rows: the rest of the tile."""
    cols = min(elements, 1 << max(n_cols - 1, 0).bit_length())
    return elements // cols, cols


def build(case, inputs, outputs, stream, variant="", tile_elements=None):
    x, y = inputs["x"], outputs["y"]
    if tile_elements is None:
        short = x.shape[1] < TILE_ELEMENTS
        tile_elements = tuned(BY_GPU, TILE_ELEMENTS) if short else TILE_ELEMENTS
    rows, cols = tile_shape(x.shape[1], tile_elements)
    grid = (ct.cdiv(x.shape[0], rows),)
    compile_on_scratch(stream, grid, row_sum, (x, torch.empty_like(y), rows, cols))

    def run():
        ct.launch(stream, grid, row_sum, (x, y, rows, cols))

    return run


def export(case, variant, target, tile_elements=TILE_ELEMENTS):
    """The kernel compiled ahead of time for `target` (no GPU), as the JIT would specialise it."""
    rows, cols = tile_shape(case.shape["cols"], tile_elements)
    x = array_param(case.dtype, (case.shape["rows"], case.shape["cols"]))
    return cubin(row_sum, [x, array_param("float32", (case.shape["rows"],)), rows, cols], target)
