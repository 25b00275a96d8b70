"""Inclusive prefix sum in numba-cuda SIMT, in one pass: the decoupled look-back scan (Merrill and
Garland; CUB's DeviceScan) written with numba's atomics and warp shuffles.

A block takes its tile from a ticket counter (cuda.atomic.add), so every tile it waits on belongs to a
block already running. A warp scans its own stretch of the tile row by row: a row is LANE_ITEMS
consecutive elements per lane (one 16-byte load of float32, one 8-byte word of 16-bit inputs: _common's
packed access, coalesced), summed in the lane's registers, then across the warp with shfl_up_sync
(5 steps), each row carried into the next. The warps' totals meet in shared memory; the first warp
publishes the tile's aggregate, looks back for the sum of the tiles before it and publishes its
inclusive prefix; then every thread adds its offsets and writes 16 bytes a row. The last tile, when partial, is read and
written element by element (0.0 past n). 16-bit inputs are widened on load; sums and output are float32.

A tile's word packs its status (high 32 bits) and a float32 (low 32) in one uint64: cuda.atomic.exch
publishes both at once (no fence needed) and an atomic or-with-0 reads it (coherent in L2: a plain load
could be hoisted out of the wait). The counter and the words are zeroed by a kernel before each scan.

The look-back is CUB's (TilePrefixCallbackOp), by the tile's first warp: lane 0 publishes the aggregate;
the warp reads the 32 predecessors' words at once (lane i: tile - 1 - i), reads again while any is
unpublished, keeps the lanes up to the nearest inclusive prefix (ballot), sums them (xor shuffles),
steps 32 further back if there was none; lane 0 publishes the inclusive prefix. (One thread reading
four words at a time: 84.2% of the copy on the H100 at 2^28 float32, the warp 96.2;
reports/evidence/scan/h100.)

CUDA simulator (no shuffles there): shfl_up / shfl_idx pass values through shared memory between two
barriers, every thread of the block calling them together, and tiles are SIM_THREADS x SIM_ROWS rows so
the small test cases span several tiles; its look-back is lane 0's alone, reading one predecessor at a
time (no ballot there). It runs blocks one at a time in launch order, so a look-back there always finds
its predecessor's prefix published and never waits."""
import numba
import numpy as np
from numba import cuda

from backends.base import cuda_simulator
from backends.numba_simt._common import (LOAD, PACK, compile_for, load2, pack_f32, store2, u64, unpack_f32,
                                         words_of)

LANE_ITEMS = 4                     # consecutive elements a lane holds in a row: one 16-byte float32 store (fixed)
SIM_THREADS, SIM_ROWS = 64, 2      # the simulator's tile: 512 elements
# 128 x 24 elements: CUB's sm90 tile for float scans; 69 registers a thread (ptxas 13.4 for sm_90), 7 blocks an SM
THREADS, ROWS = (SIM_THREADS, SIM_ROWS) if cuda_simulator() else (128, 6)
WARPS = THREADS // 32
TOTALS = WARPS + 1                 # shared: the warps' sums, then the sum of the tiles before
WARP_ROW = 32 * LANE_ITEMS         # elements in one row of a warp
ITEMS = ROWS * LANE_ITEMS          # elements per thread
TILE = THREADS * ITEMS
AGGREGATE, PREFIX = 1, 2           # a tile's status: its own sum is out / the sum up to and with it is out
STATUS_SHIFT = 32
FULL_MASK = 0xFFFFFFFF
CLEAR_THREADS = 256

f32 = numba.float32

if cuda_simulator():
    @cuda.jit(device=True)
    def shfl_up(v, delta, lane, scratch):
        """v of lane - delta (v itself in lanes below delta); every thread of the block calls it."""
        tid = cuda.threadIdx.x
        scratch[tid] = v
        cuda.syncthreads()
        r = scratch[tid - delta] if lane >= delta else v
        cuda.syncthreads()
        return r

    @cuda.jit(device=True)
    def shfl_idx(v, src, lane, scratch):
        tid = cuda.threadIdx.x
        scratch[tid] = v
        cuda.syncthreads()
        r = scratch[tid - lane + src]
        cuda.syncthreads()
        return r
else:
    @cuda.jit(device=True, inline=True)
    def shfl_up(v, delta, lane, scratch):
        return cuda.shfl_up_sync(FULL_MASK, v, delta)

    @cuda.jit(device=True, inline=True)
    def shfl_idx(v, src, lane, scratch):
        return cuda.shfl_sync(FULL_MASK, v, src)


@cuda.jit(device=True, inline=True)
def publish(state, tile, status, value):
    cuda.atomic.exch(state, 1 + tile, (u64(status) << u64(STATUS_SHIFT)) | pack_f32(value))


@cuda.jit(device=True, inline=True)
def word_of(state, tile):
    """Tile's word; before tile 0, an inclusive prefix of 0.0."""
    if tile < 0:
        return u64(PREFIX) << u64(STATUS_SHIFT)
    return cuda.atomic.or_(state, 1 + tile, u64(0))


if cuda_simulator():
    @cuda.jit(device=True)
    def look_back(state, tile, lane):
        """The sum of the tiles before `tile` (> 0), by lane 0 alone, nearest first."""
        exclusive = f32(0.0)
        if lane == 0:
            j = tile - 1
            while j >= 0:
                word = word_of(state, j)
                status = word >> u64(STATUS_SHIFT)
                if status != u64(0):
                    exclusive += unpack_f32(word)
                    j = -1 if status == u64(PREFIX) else j - 1
        return exclusive
else:
    @cuda.jit(device=True, inline=True)
    def look_back(state, tile, lane):
        """The sum of the tiles before `tile` (> 0), by a whole warp, 32 predecessors a step."""
        exclusive = f32(0.0)
        end = tile                             # the predecessors before `end` are not added yet
        while end > 0:
            word = word_of(state, end - 1 - lane)
            while cuda.any_sync(FULL_MASK, (word >> u64(STATUS_SHIFT)) == u64(0)):
                if (word >> u64(STATUS_SHIFT)) == u64(0):
                    word = word_of(state, end - 1 - lane)
            prefixes = cuda.ballot_sync(FULL_MASK, (word >> u64(STATUS_SHIFT)) == u64(PREFIX))
            nearer = prefixes & ((1 << lane) - 1)       # prefixes in lanes nearer than this one
            v = unpack_f32(word) if nearer == 0 else f32(0.0)
            d = 16
            while d > 0:
                v += cuda.shfl_xor_sync(FULL_MASK, v, d)
                d //= 2
            exclusive += v
            end = 0 if prefixes != 0 else end - 32
        return exclusive


@cuda.jit
def clear(state):
    i = cuda.grid(1)
    if i < state.shape[0]:
        state[i] = u64(0)


def scan_kernel(dtype):
    per, bits, unpack, _ = PACK[dtype]
    load = LOAD[dtype]

    @cuda.jit(device=True, inline=True)
    def load_row(v, r, xw, x, e, n, full):
        """Elements e .. e + LANE_ITEMS - 1 into v[r * LANE_ITEMS:] as float32 (0.0 past n)."""
        i = r * LANE_ITEMS
        if full and per == 2:                  # float32: two words, one 16-byte load
            w0, w1 = load2(xw, e // 2)
            v[i] = unpack(w0)
            v[i + 1] = unpack(w0 >> u64(32))
            v[i + 2] = unpack(w1)
            v[i + 3] = unpack(w1 >> u64(32))
        elif full:                             # 16-bit: one word
            w = xw[e // per]
            for k in range(LANE_ITEMS):
                v[i + k] = unpack(w >> u64(k * bits))
        else:
            for k in range(LANE_ITEMS):
                v[i + k] = load(x[e + k]) if e + k < n else f32(0.0)

    @cuda.jit
    def scan(state, xw, x, yw, y, n):
        tid = cuda.threadIdx.x
        lane, warp = tid % 32, tid // 32
        ticket = cuda.shared.array(1, numba.int64)
        totals = cuda.shared.array(TOTALS, numba.float32)        # the warps' sums, then the tiles' before
        scratch = cuda.shared.array(THREADS, numba.float32)      # the simulator's shuffles only
        if tid == 0:
            ticket[0] = numba.int64(cuda.atomic.add(state, 0, u64(1)))
        cuda.syncthreads()
        tile = ticket[0]
        first = tile * TILE + warp * (ROWS * WARP_ROW) + lane * LANE_ITEMS     # this lane's first element
        full = (tile + 1) * TILE <= n
        v = cuda.local.array(ITEMS, numba.float32)
        row_offset = cuda.local.array(ROWS, numba.float32)      # per row: the warp's rows and lanes before
        for r in range(ROWS):
            load_row(v, r, xw, x, first + r * WARP_ROW, n, full)
        carry = f32(0.0)                       # the warp's rows before this one
        for r in range(ROWS):
            s = f32(0.0)
            for k in range(LANE_ITEMS):
                s += v[r * LANE_ITEMS + k]
                v[r * LANE_ITEMS + k] = s
            d = 1
            while d < 32:                      # inclusive scan of the lanes' sums
                up = shfl_up(s, d, lane, scratch)
                if lane >= d:
                    s += up
                d *= 2
            before = shfl_up(s, 1, lane, scratch)
            row_offset[r] = carry + (before if lane > 0 else f32(0.0))
            carry += shfl_idx(s, 31, lane, scratch)
        if lane == 0:
            totals[warp] = carry
        cuda.syncthreads()
        if warp == 0:                          # the tile's first warp publishes and looks back
            aggregate = f32(0.0)
            for w in range(WARPS):
                aggregate += totals[w]
            exclusive = f32(0.0)
            if tile == 0:
                if lane == 0:
                    publish(state, 0, PREFIX, aggregate)
            else:
                if lane == 0:
                    publish(state, tile, AGGREGATE, aggregate)
                exclusive = look_back(state, tile, lane)
                if lane == 0:
                    publish(state, tile, PREFIX, exclusive + aggregate)
            if lane == 0:
                totals[WARPS] = exclusive
        cuda.syncthreads()
        base = totals[WARPS]
        for w in range(warp):
            base += totals[w]
        for r in range(ROWS):
            off = base + row_offset[r]
            i = r * LANE_ITEMS
            e = first + r * WARP_ROW
            if full:
                lo = pack_f32(v[i] + off) | (pack_f32(v[i + 1] + off) << u64(32))
                hi = pack_f32(v[i + 2] + off) | (pack_f32(v[i + 3] + off) << u64(32))
                store2(yw, e // 2, lo, hi)
            else:
                for k in range(LANE_ITEMS):
                    if e + k < n:
                        y[e + k] = v[i + k] + off

    return scan


KERNELS = {dtype: scan_kernel(dtype) for dtype in PACK}


def build(case, inputs, outputs, stream, variant=""):
    x, y = inputs["x"], outputs["y"]
    n = x.shape[0]
    tiles = -(-n // TILE)
    state = cuda.device_array(1 + tiles, dtype=np.uint64)       # the ticket counter, then a word per tile
    none = cuda.device_array(0, dtype=np.uint64)                 # fewer elements than a word: no words
    xw = words_of(x, PACK[case.dtype][0])
    yw = words_of(y, 2)
    args = (state, none if xw is None else xw, x, none if yw is None else yw, y, np.int64(n))
    kernel = KERNELS[case.dtype]
    compile_for(clear, state)
    compile_for(kernel, *args)
    clear_blocks = -(-(1 + tiles) // CLEAR_THREADS)

    def run():
        clear[clear_blocks, CLEAR_THREADS, stream](state)
        kernel[tiles, THREADS, stream](*args)

    return run
