"""Inclusive prefix sum in cuTile, reduce-then-scan: ct.sum and ct.cumsum work inside a tile, and a
whole-array scan needs the tiles' carries between them. A first kernel sums each TILE-element tile;
torch.cumsum over those few sums (on the same stream) gives each tile's carry; a second kernel scans
each tile with ct.cumsum and adds its carry. x is read twice, y written once; 16-bit inputs widened to
float32 on load; the partial last tile loads zero-padded and ct.store drops what lies past n.

A single pass (a ticket, ct.atomic_xchg to publish each tile's sum, a while loop of acquire loads to
look back over the predecessors' words) compiles, but on the H100 the 2^28-element case did not finish
in 90 s: reports/evidence/scan/h100/README.md."""
import cuda.tile as ct
import torch

from backends.cutile import array_param, compile_on_scratch, cubin

TILE = 4096                      # elements a block sums, then scans
ZERO = ct.PaddingMode.ZERO


@ct.kernel
def tile_sums(x, sums, TILE: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(TILE,), padding_mode=ZERO).astype(ct.float32)
    ct.store(sums, index=(b,), tile=ct.sum(t, axis=0, keepdims=True))


@ct.kernel
def tile_scan(x, carries, y, TILE: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(TILE,), padding_mode=ZERO).astype(ct.float32)
    carry = ct.load(carries, index=(b,), shape=(1,))
    ct.store(y, index=(b,), tile=ct.cumsum(t, axis=0) + carry)


def build(case, inputs, outputs, stream, variant="", tile=TILE):
    x, y = inputs["x"], outputs["y"]
    grid = (ct.cdiv(x.shape[0], tile),)
    sums = torch.empty(grid[0], dtype=torch.float32, device=x.device)
    carries = torch.empty_like(sums)
    # ct.launch takes the lab's raw stream: the carries between the kernels go on it too
    on_stream = torch.cuda.ExternalStream(stream) if stream else torch.cuda.default_stream(x.device)
    compile_on_scratch(stream, grid, tile_sums, (x, sums, tile))
    compile_on_scratch(stream, grid, tile_scan, (x, carries, torch.empty_like(y), tile))

    def run():
        ct.launch(stream, grid, tile_sums, (x, sums, tile))
        with torch.cuda.stream(on_stream):
            torch.cumsum(sums, 0, out=carries)
            carries.sub_(sums)                    # each tile's exclusive prefix
        ct.launch(stream, grid, tile_scan, (x, carries, y, tile))

    return run


def export(case, variant, target):
    """Both kernels compiled ahead of time for `target`, for arrays of the case's shapes."""
    n = case.shape["n"]
    tiles = -(-n // TILE)
    x, partial = array_param(case.dtype, (n,)), array_param("float32", (tiles,))
    return (cubin(tile_sums, [x, partial, TILE], target)
            + cubin(tile_scan, [x, partial, array_param("float32", (n,)), TILE], target))
