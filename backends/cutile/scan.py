"""Inclusive prefix sum in cuTile, reduce-then-scan: ct.sum and ct.cumsum work inside a tile, and a
whole-array scan needs the tiles' carries between them. A first kernel sums each TILE-element tile;
torch.cumsum over those few sums (on the same stream) gives each tile's carry; a second kernel scans
each tile with ct.cumsum and adds its carry. x is read twice, y written once; 16-bit inputs widened to
float32 on load; the partial last tile loads zero-padded and ct.store drops what lies past n.

A single pass (a ticket, ct.atomic_xchg to publish each tile's sum, a while loop of acquire loads to
look back one predecessor's word at a time) compiled, but on the H100 the 2^28-element case did not
finish in 90 s: reports/evidence/scan/h100/README.md. `one_pass` builds a second try, the decoupled
look-back as CUB's warp reads it: a block takes its tile from a ticket (ct.atomic_add), publishes its
tile's sum in one int64 word (the float32's bits over a status: 1 sum, 2 inclusive prefix) by
ct.atomic_xchg, then reads its predecessors' words WINDOW at a time with an atomic add of zeros (a
read that cannot be cached or hoisted), adds up to the nearest inclusive prefix (waiting where a word
after it is still empty), and publishes its own; WINDOW words of prefix 0 before tile 0 end every
look-back. tools/knob_sweep.py cutile scan sets the two ways side by side."""
import cuda.tile as ct
import torch

from backends.cutile import array_param, compile_on_scratch, cubin, torch_stream
from backends.gpus import tuned

TILE = 4096                      # elements a block sums, then scans
# per GPU kind where its sweep differs: on the H200, 16384 reaches 43.4% of the copy at 2^28 float32, 4096
# 39.9 (reports/evidence/h200-tuning/sweeps/cutile-scan.json)
BY_GPU = {"H200": 16384}
ZERO = ct.PaddingMode.ZERO
WINDOW = 32                      # one pass: predecessors' words read at once, as CUB's warp reads them
AGGREGATE, PREFIX = 1, 2         # one pass: a tile's published status


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


@ct.function
def word(status, value):
    """The float32's bits over the status: one int64, published by one atomic exchange."""
    return (ct.bitcast(value, ct.int32).astype(ct.int64) << 32) | ct.astype(status, ct.int64)


@ct.kernel
def look_back_scan(x, y, state, TILE: ct.Constant[int]):
    tile = ct.atomic_add(state, 0, 1).astype(ct.int32)            # ticket: tiles in launch order
    t = ct.load(x, index=(tile,), shape=(TILE,), padding_mode=ZERO).astype(ct.float32)
    local = ct.cumsum(t, axis=0)
    total = ct.extract(local, (TILE - 1,), shape=(1,)).item()
    own = tile + 1 + WINDOW                                         # after the ticket and the padding
    ct.atomic_xchg(state, own, word(AGGREGATE, total))
    lanes = ct.arange(WINDOW, dtype=ct.int32)
    start = tile + 1                        # words [start, start + WINDOW): the WINDOW tiles before `tile`
    carry = ct.zeros((), dtype=ct.float32)
    done = 0
    while done == 0:
        words = ct.atomic_add(state, start + lanes, 0)
        status = (words & 3).astype(ct.int32)
        nearest = ct.max(ct.where(status == PREFIX, lanes, -1), axis=0)
        waiting = ct.sum(ct.where((status == 0) & (lanes > nearest), 1, 0), axis=0)
        found = ct.sum(ct.where(lanes >= nearest, ct.bitcast((words >> 32).astype(ct.int32), ct.float32), 0.0), axis=0)
        ready = ct.where(waiting == 0, 1, 0)
        back = ct.where(nearest < 0, ready, 0)                      # all sums: the window before this one
        carry = carry + ct.where(ready == 1, found, 0.0)
        start = start - back * WINDOW
        done = ready - back
    ct.atomic_xchg(state, own, word(PREFIX, carry + total))
    ct.store(y, index=(tile,), tile=local + carry)


def build(case, inputs, outputs, stream, variant="", tile=None, one_pass=False):
    x, y = inputs["x"], outputs["y"]
    tile = tile or tuned(BY_GPU, TILE)
    grid = (ct.cdiv(x.shape[0], tile),)
    if one_pass:
        return one_pass_run(x, y, stream, grid, tile)
    sums = torch.empty(grid[0], dtype=torch.float32, device=x.device)
    carries = torch.empty_like(sums)
    on_stream = torch_stream(stream, x.device)       # the carries between the kernels go on the lab's stream too
    compile_on_scratch(stream, grid, tile_sums, (x, sums, tile))
    compile_on_scratch(stream, grid, tile_scan, (x, carries, torch.empty_like(y), tile))

    def run():
        ct.launch(stream, grid, tile_sums, (x, sums, tile))
        with torch.cuda.stream(on_stream):
            torch.cumsum(sums, 0, out=carries)
            carries.sub_(sums)                    # each tile's exclusive prefix
        ct.launch(stream, grid, tile_scan, (x, carries, y, tile))

    return run


def one_pass_run(x, y, stream, grid, tile):
    # the ticket, WINDOW words of prefix 0, then a word a tile (empty), set afresh before each launch
    initial = torch.zeros(1 + WINDOW + grid[0], dtype=torch.int64, device=x.device)
    initial[1:1 + WINDOW] = PREFIX
    state = initial.clone()
    on_stream = torch_stream(stream, x.device)
    compile_on_scratch(stream, grid, look_back_scan, (x, torch.empty_like(y), state, tile))

    def run():
        with torch.cuda.stream(on_stream):
            state.copy_(initial)
        ct.launch(stream, grid, look_back_scan, (x, y, state, tile))

    return run


def export(case, variant, target):
    """Both kernels compiled ahead of time for `target`, for arrays of the case's shapes."""
    n = case.shape["n"]
    tiles = -(-n // TILE)
    x, partial = array_param(case.dtype, (n,)), array_param("float32", (tiles,))
    return (cubin(tile_sums, [x, partial, TILE], target)
            + cubin(tile_scan, [x, partial, array_param("float32", (n,)), TILE], target))
