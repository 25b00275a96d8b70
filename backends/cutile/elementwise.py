"""z = alpha * x + y in cuTile, as its VectorAddition sample writes it: one TILE-element tile per
block, computed in float32; the last, partial tile reads zeros and its store is clipped."""
import cuda.tile as ct
import torch

from backends.cutile import array_param, compile_on_scratch, cubin

TILE = 1024


@ct.kernel
def axpy(x, y, z, alpha: float, tile: ct.Constant[int]):
    bid = ct.bid(0)
    tx = ct.load(x, index=(bid,), shape=(tile,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    ty = ct.load(y, index=(bid,), shape=(tile,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    ct.store(z, index=(bid,), tile=(alpha * tx + ty).astype(z.dtype))


def build(case, inputs, outputs, stream, variant=""):
    x, y, z = inputs["x"], inputs["y"], outputs["z"]
    grid = (ct.cdiv(x.shape[0], TILE),)
    compile_on_scratch(stream, grid, axpy, (x, y, torch.empty_like(z), float(inputs["alpha"]), TILE))

    def run():
        ct.launch(stream, grid, axpy, (x, y, z, float(inputs["alpha"]), TILE))

    return run


def export(case, variant, target):
    """The kernel compiled ahead of time for `target` (no GPU), as the JIT would specialise it."""
    from cuda.tile.compilation import ScalarConstraint
    x = array_param(case.dtype, (case.shape["n"],))
    return cubin(axpy, [x, x, x, ScalarConstraint(ct.float32), TILE], target)
