"""Inclusive prefix sum with cuda.coop, in one pass: CUB's decoupled look-back scan (AgentScan) put
together from cuda.coop's block primitives, with the look-back written in numba as the block scan's
prefix callback.

A block takes its tile from a ticket counter (cuda.atomic.add), so every tile it waits on belongs to a
block already running. coop.block.load (warp-transposed: coalesced reads, then ITEMS consecutive
elements a thread) fills the tile; coop.block.make_inclusive_sum with a prefix callback (CUB's
BlockScan::InclusiveSum(items, items, prefix_op)) scans it; coop.block.store (warp-transposed) writes it.
BlockScan calls the callback from its first warp with the tile's aggregate and adds lane 0's answer to
every item. The callback (LookBack, passed as a coop.StatefulFunction over a numba struct holding the
tile words and the tile) is CUB's TilePrefixCallbackOp: lane 0 publishes the aggregate; the warp reads
the 32 predecessors' words at once (lane i: tile - 1 - i), reads again while any is unpublished, keeps
the lanes up to the nearest inclusive prefix (ballot), sums them (shuffles), steps 32 further back if
there was none; lane 0 publishes the inclusive prefix. A tile's word packs its status (high 32 bits)
and a float32 (low 32) in one uint64: cuda.atomic.exch publishes both at once, an atomic or-with-0 reads
it. The counter and the words are zeroed by a kernel before each scan.

The last tile, when partial, is read and written by hand (0.0 past n): cuda.coop's block load and store
take no valid-item count. float32 only: cuda.coop 1.1.1 builds CUB without bfloat16 (the backend says so)
and its block load does not compile for __half."""
import numba
import numpy as np
from numba import cuda
from numba.cuda import cgutils, types
from numba.cuda.extending import core_models, lower_builtin, make_attribute_wrapper, register_model, type_callable

import cuda.coop._experimental as coop

from backends.base import compiling

THREADS, ITEMS = 128, 24           # CUB's sm90 tile for float scans (cub/device/dispatch/tuning/tuning_scan.cuh)
TILE = THREADS * ITEMS
MOVE = "warp_transpose"            # block load and store: CUB's sm90 choice for float scans
AGGREGATE, PREFIX = 1, 2           # a tile's status: its own sum is out / the sum up to and with it is out
STATUS_SHIFT = 32
FULL_MASK = 0xFFFFFFFF
CLEAR_THREADS = 256
STATE = types.Array(types.uint64, 1, "C")      # the ticket counter, then a word per tile

f32, u32, u64 = numba.float32, numba.uint32, numba.uint64


@cuda.jit(device=True, inline=True)
def publish(state, tile, status, value):
    bits = u64(cuda.libdevice.float_as_int(value)) & u64(0xFFFFFFFF)
    cuda.atomic.exch(state, 1 + tile, (u64(status) << u64(STATUS_SHIFT)) | bits)


@cuda.jit(device=True, inline=True)
def word_of(state, tile):
    """Tile's word; before tile 0, an inclusive prefix of 0.0."""
    if tile < 0:
        return u64(PREFIX) << u64(STATUS_SHIFT)
    return cuda.atomic.or_(state, 1 + tile, u64(0))


@cuda.jit(device=True, inline=True)
def value_of(word):
    return cuda.libdevice.int_as_float(numba.int32(u32(word & u64(0xFFFFFFFF))))


class LookBack:
    """The prefix callback's state: the tile words and this block's tile."""

    def __init__(self, state, tile):
        self.state, self.tile = state, tile

    def __call__(self_ptr, aggregate):     # cuda.coop passes a pointer to the struct
        """Warp 0, every lane: publishes, looks back; lane 0's result is the sum of the tiles before."""
        state, tile = self_ptr[0].state, self_ptr[0].tile
        lane = cuda.laneid
        if tile == 0:
            if lane == 0:
                publish(state, 0, PREFIX, aggregate)
            return f32(0.0)
        if lane == 0:
            publish(state, tile, AGGREGATE, aggregate)
        exclusive = f32(0.0)
        end = tile                            # the predecessors before `end` are not added yet
        while end > 0:
            word = word_of(state, end - 1 - lane)
            while cuda.any_sync(FULL_MASK, (word >> u64(STATUS_SHIFT)) == u64(0)):
                if (word >> u64(STATUS_SHIFT)) == u64(0):
                    word = word_of(state, end - 1 - lane)
            prefixes = cuda.ballot_sync(FULL_MASK, (word >> u64(STATUS_SHIFT)) == u64(PREFIX))
            nearer = prefixes & ((1 << lane) - 1)           # prefixes in lanes nearer than this one
            v = value_of(word) if nearer == 0 else f32(0.0)
            d = 16
            while d > 0:
                v += cuda.shfl_xor_sync(FULL_MASK, v, d)
                d //= 2
            exclusive += v
            end = 0 if prefixes != 0 else end - 32
        if lane == 0:
            publish(state, tile, PREFIX, exclusive + aggregate)
        return exclusive


class LookBackType(types.Type):
    def __init__(self):
        super().__init__(name="ScanLookBack")


LOOK_BACK = LookBackType()


@register_model(LookBackType)
class LookBackModel(core_models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("state", STATE), ("tile", types.int64)])


make_attribute_wrapper(LookBackType, "state", "state")
make_attribute_wrapper(LookBackType, "tile", "tile")


@type_callable(LookBack)
def type_look_back(context):
    def typer(state, tile):
        if state == STATE and isinstance(tile, types.Integer):
            return LOOK_BACK
    return typer


@lower_builtin(LookBack, types.Array, types.Integer)
def make_look_back(context, builder, sig, args):
    op = cgutils.create_struct_proxy(LOOK_BACK)(context, builder)
    op.state = args[0]
    op.tile = context.cast(builder, args[1], sig.args[1], types.int64)
    return op._getvalue()


@cuda.jit
def clear(state):
    i = cuda.grid(1)
    if i < state.shape[0]:
        state[i] = u64(0)


def scan_kernel():
    load = coop.block.make_load(f32, THREADS, ITEMS, MOVE)
    store = coop.block.make_store(f32, THREADS, ITEMS, MOVE)
    look_back = coop.StatefulFunction(LookBack, LOOK_BACK)
    block_scan = coop.block.make_inclusive_sum(f32, THREADS, ITEMS, prefix_op=look_back, algorithm="warp_scans")

    @cuda.jit(link=load.files + block_scan.files + store.files)
    def scan(state, x, y):
        tid = cuda.threadIdx.x
        ticket = cuda.shared.array(1, numba.int64)
        if tid == 0:
            ticket[0] = numba.int64(cuda.atomic.add(state, 0, u64(1)))
        cuda.syncthreads()
        tile = ticket[0]
        start = tile * TILE
        n = x.shape[0]
        full = start + TILE <= n
        items = cuda.local.array(ITEMS, f32)
        if full:
            load(x[start:], items)
        else:                                 # blocked, as the block load: thread tid holds tid * ITEMS ...
            for i in range(ITEMS):
                e = start + tid * ITEMS + i
                items[i] = x[e] if e < n else f32(0.0)
        op = cuda.local.array(1, LOOK_BACK)
        op[0] = LookBack(state, tile)
        block_scan(items, items, op)
        if full:
            store(y[start:], items)
        else:
            for i in range(ITEMS):
                e = start + tid * ITEMS + i
                if e < n:
                    y[e] = items[i]

    return scan


def supports(case, variant=""):
    if case.dtype == "float16":
        return "cuda.coop 1.1.1: its block load does not compile for __half (NVRTC: incomplete type)"
    return None


def build(case, inputs, outputs, stream, variant=""):
    x, y = inputs["x"], outputs["y"]
    tiles = -(-x.shape[0] // TILE)
    state = cuda.device_array(1 + tiles, dtype=np.uint64)
    with compiling():          # NVRTC for the primitives, then numba: CPU work, others may time meanwhile
        kernel = scan_kernel()
        kernel.compile((numba.typeof(state), numba.typeof(x), numba.typeof(y)))
        clear.compile((numba.typeof(state),))
    clear_blocks = -(-(1 + tiles) // CLEAR_THREADS)

    def run():
        clear[clear_blocks, CLEAR_THREADS, stream](state)
        kernel[tiles, THREADS, stream](state, x, y)

    return run
