"""Inclusive prefix sum in Triton, in one pass: tl.cumsum scans a tile inside a program, and the
programs pass their carries by decoupled look-back (the single-pass scan of Merrill and Garland, as CUB
does it), written with Triton's atomics since the language has no device-wide scan.

Each program takes its tile in launch order from a ticket counter (so every tile it waits on belongs
to a program already running), sums its tile, publishes that aggregate, then walks back over its
predecessors' published words, adding aggregates until it meets an inclusive prefix, and publishes its
own inclusive prefix. A tile's word packs a status (0: nothing yet, 1: aggregate, 2: inclusive prefix)
with the float32 value in one int64, so one atomic exchange publishes both. The ticket counter and the
words are zeroed before every launch. 16-bit inputs are widened to float32 on load."""
import torch
import triton
import triton.language as tl

from backends.base import compiling
from backends.triton import interpreted

AGGREGATE, PREFIX = tl.constexpr(1), tl.constexpr(2)     # a tile's published status
BLOCK, WARPS = 8192, 8          # elements a program scans, and its warps


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
    back = tile - 1
    while back >= 0:                                     # look back until an inclusive prefix
        word = tl.load(words_ptr + back, volatile=True)
        status = (word >> 32).to(tl.int32)
        value = (word & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True)
        exclusive += tl.where(status != 0, value, 0.0)
        back = tl.where(status == PREFIX, -1, tl.where(status == AGGREGATE, back - 1, back))
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
