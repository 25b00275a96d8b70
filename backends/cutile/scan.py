"""Inclusive prefix sum in cuTile, in one pass: ct.cumsum scans a tile inside a block, and the blocks
pass their carries by decoupled look-back (Merrill and Garland's single-pass scan, as CUB does it),
written with cuTile's atomics and its ordered loads: a while loop over ct.load(memory_order=ACQUIRE)
is the spin-wait, as the LayerNorm sample's lock spins on ct.atomic_cas.

Each block takes its tile in launch order from a ticket counter (ct.atomic_add; every tile it waits
on belongs to a block already running), scans its tile widened to float32, publishes the tile's sum
(the scan's last element), then walks back over its predecessors' words, adding sums until it meets
an inclusive prefix, and publishes its own. A tile's word packs the float32's bits (high 32 bits)
over a status (low bits: 0 nothing yet, 1 sum, 2 inclusive prefix) in one int64, so one atomic
exchange publishes both. The ticket and the words are zeroed before every launch. The partial last
tile loads zero-padded, and ct.store drops what lies past n."""
import cuda.tile as ct
import torch

from backends.cutile import array_param, compile_on_scratch, cubin

TILE = 4096                      # elements a block scans
AGGREGATE, PREFIX = 1, 2         # a tile's published status
ACQUIRE, RELEASE = ct.MemoryOrder.ACQUIRE, ct.MemoryOrder.RELEASE


@ct.function
def word(status, value):
    """The float32's bits over the status: one int64."""
    return (ct.bitcast(value, ct.int32).astype(ct.int64) << 32) | ct.astype(status, ct.int64)


@ct.kernel(occupancy=4)
def scan(x, y, state, TILE: ct.Constant[int]):
    tile = ct.atomic_add(state, 0, 1).astype(ct.int32)          # ticket: tiles in launch order
    t = ct.load(x, index=(tile,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    local = ct.cumsum(t, axis=0)
    total = ct.extract(local, (TILE - 1,), shape=(1,)).item()
    ct.atomic_xchg(state, tile + 1, word(ct.where(tile == 0, PREFIX, AGGREGATE), total), memory_order=RELEASE)
    exclusive = ct.zeros((), dtype=ct.float32)
    back = tile - 1
    while back >= 0:                                             # look back until an inclusive prefix
        w = ct.load(state, index=(back + 1,), shape=(1,), memory_order=ACQUIRE,
                    memory_scope=ct.MemoryScope.DEVICE).item()
        status = w & 3
        exclusive += ct.where(status != 0, ct.bitcast((w >> 32).astype(ct.int32), ct.float32), 0.0)
        back = ct.where(status == PREFIX, -1, ct.where(status == AGGREGATE, back - 1, back))
    if tile > 0:
        ct.atomic_xchg(state, tile + 1, word(PREFIX, exclusive + total), memory_order=RELEASE)
    ct.store(y, index=(tile,), tile=local + exclusive)


def build(case, inputs, outputs, stream, variant=""):
    x, y = inputs["x"], outputs["y"]
    grid = (ct.cdiv(x.shape[0], TILE),)
    state = torch.empty(grid[0] + 1, dtype=torch.int64, device=x.device)     # the ticket, then a word a tile
    # ct.launch takes the lab's raw stream: the zeroing goes on it too, not on torch's current stream
    on_stream = torch.cuda.ExternalStream(stream) if stream else torch.cuda.default_stream(x.device)

    def zero_state():
        with torch.cuda.stream(on_stream):
            state.zero_()

    zero_state()
    compile_on_scratch(stream, grid, scan, (x, torch.empty_like(y), state, TILE))

    def run():
        zero_state()
        ct.launch(stream, grid, scan, (x, y, state, TILE))

    return run


def export(case, variant, target):
    """The kernel compiled ahead of time for `target`, for arrays of the case's shapes."""
    n = case.shape["n"]
    tiles = -(-n // TILE)
    params = [array_param(case.dtype, (n,)), array_param("float32", (n,)), array_param("int64", (tiles + 1,)), TILE]
    return cubin(scan, params, target)
