"""Inclusive prefix sum in Triton, in one pass: tl.cumsum scans a tile inside a program, and the
programs pass their carries by decoupled look-back (the single-pass scan of Merrill and Garland, as CUB
does it), written with Triton's atomics since the language has no device-wide scan.

Each program takes its tile in launch order from a ticket counter (so every tile it waits on belongs
to a program already running), sums its tile, publishes that aggregate, then walks back over its
predecessors' published words WINDOW at a time (one load of a vector of words, as CUB's warp reads
32), adding them up to the nearest inclusive prefix, or up to a tile not yet published, where it
reads again; then it publishes its own inclusive prefix. A tile's word packs a status (0: nothing
yet, 1: aggregate, 2: inclusive prefix) with the float32 value in one int64, so one atomic exchange
publishes both. The ticket counter and the words are zeroed before every launch. 16-bit inputs are
widened to float32 on load."""
import torch
import triton
import triton.language as tl

from backends.base import compiling
from backends.triton import interpreted

AGGREGATE, PREFIX = tl.constexpr(1), tl.constexpr(2)     # a tile's published status
PREFIX_ZERO = tl.constexpr(2 << 32)      # the word of an inclusive prefix 0.0
WINDOW = tl.constexpr(32)       # predecessors' words read at once by a look-back step, as CUB's warp does
# elements a program scans, and its warps: on the H200, 4 warps scan 2^28 float32 at 63-65% of the copy
# at 4096-16384 elements, 8 warps at 37-49%, 16 at 17-37% (tools/knob_sweep.py triton scan)
BLOCK, WARPS = 8192, 4


@triton.jit
def publish(words_ptr, tile, status, value):
    bits = value.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF
    tl.atomic_xchg(words_ptr + tile, (tl.cast(status, tl.int64) << 32) | bits)


@triton.jit
def scan(x_ptr, y_ptr, n, state_ptr, BLOCK: tl.constexpr):
    tile = tl.atomic_add(state_ptr, 1)                    # ticket: tiles are taken in launch order
    words_ptr = state_ptr + 1
    offsets = tile.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0).to(tl.float32)
    local = tl.sum(x, axis=0)
    publish(words_ptr, tile, tl.where(tile == 0, PREFIX, AGGREGATE), local)
    exclusive = local * 0.0
    back = tile - 1                                      # the window's newest tile
    lanes = tl.arange(0, WINDOW)
    while back >= 0:                                     # look back a window at a time, to a prefix
        behind = back - lanes                            # newest first; lanes before tile 0 read a prefix 0
        words = tl.load(words_ptr + behind, mask=behind >= 0, other=PREFIX_ZERO, volatile=True)
        status = (words >> 32).to(tl.int32)
        values = (words & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True)
        first_prefix = tl.min(tl.where(status == PREFIX, lanes, WINDOW), axis=0)
        first_missing = tl.min(tl.where(status == 0, lanes, WINDOW), axis=0)
        # add what is published up to the nearest prefix or the first tile not yet published
        exclusive += tl.sum(tl.where(lanes < tl.minimum(first_missing, first_prefix + 1), values, 0.0), axis=0)
        back = tl.where(first_prefix < first_missing, -1, back - first_missing)
    if tile > 0:
        publish(words_ptr, tile, PREFIX, exclusive + local)
    tl.store(y_ptr + offsets, tl.cumsum(x, axis=0) + exclusive, mask=offsets < n)


def build(case, inputs, outputs, stream, variant="", block=BLOCK, warps=WARPS):
    x, y = inputs["x"], outputs["y"]
    n = x.numel()
    # the interpreter runs programs one by one: about 64 tiles of at least 64 elements
    block = min(block, max(64, triton.next_power_of_2(n // 64))) if interpreted() else block
    grid = (triton.cdiv(n, block),)
    state = torch.zeros(grid[0] + 1, dtype=torch.int64, device=x.device)    # the ticket, then a word a tile
    if not interpreted():
        with compiling():
            scan.warmup(x, y, n, state, BLOCK=block, num_warps=warps, grid=grid)

    def run():
        state.zero_()
        scan[grid](x, y, n, state, BLOCK=block, num_warps=warps)

    return run
