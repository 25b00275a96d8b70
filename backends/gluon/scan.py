"""Inclusive prefix sum in Gluon, in one pass, the way CUB's single-pass scan lays out its data:

1. Each program takes a tile in launch order from a ticket counter (so every tile it waits on belongs
   to a program already running) and loads it in a coalesced layout, 16 bytes a thread a load.
2. gl.convert_layout moves the tile through shared memory into a layout of ITEMS consecutive elements
   a thread (CUB's warp-transposed load), so the tile's scan is a sequential one inside each thread,
   then one across the warp's lanes and one across the warps (gl.associative_scan), and its sum a
   reduction of the same layout.
3. Its aggregate is published, then the program looks back over its predecessors' words WINDOW at a
   time (one warp-wide load of a vector of words, as CUB's warp reads 32), adding them up to the
   nearest inclusive prefix, or up to a tile not yet published, where it reads again (decoupled
   look-back, Merrill and Garland); then it publishes its own inclusive prefix.
4. The scanned tile goes back to the coalesced layout for the store.

Constraints: a tile's word packs a status (0: nothing yet, 1: aggregate, 2: inclusive prefix) with the
float32 value in one int64, so one atomic exchange publishes both; the ticket and the words are zeroed
before every launch; 16-bit inputs are widened to float32 on load."""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

AGGREGATE, PREFIX = gl.constexpr(1), gl.constexpr(2)     # a tile's published status
PREFIX_ZERO = gl.constexpr(2 << 32)      # the word of an inclusive prefix 0.0
WINDOW = gl.constexpr(32)                # predecessors' words a look-back step reads, a warp's lanes
# elements a program scans and its warps: CUB's 16 items a thread on 256 threads, 89 registers a thread
# for sm_90a and no spills, two tiles resident an SM (8192 on 4 warps, the Triton row's best, takes 255
# registers and spills); not yet swept on a GPU (tools/knob_sweep.py gluon scan)
BLOCK, WARPS = 4096, 8
VECTOR_BYTES = 16


@gluon.jit
def add(a, b):
    return a + b


@gluon.jit
def publish(words_ptr, tile, status, value):
    bits = value.to(gl.int32, bitcast=True).to(gl.int64) & 0xFFFFFFFF
    gl.atomic_xchg(words_ptr + tile, (gl.cast(status, gl.int64) << 32) | bits)


@gluon.jit
def scan(x_ptr, y_ptr, n, state_ptr, BLOCK: gl.constexpr, VEC: gl.constexpr, num_warps: gl.constexpr):
    coalesced: gl.constexpr = gl.BlockedLayout([VEC], [32], [num_warps], [0])
    per_thread: gl.constexpr = gl.BlockedLayout([BLOCK // (32 * num_warps)], [32], [num_warps], [0])
    lanes_layout: gl.constexpr = gl.BlockedLayout([1], [32], [num_warps], [0])
    tile = gl.atomic_add(state_ptr, 1)                    # ticket: tiles are taken in launch order
    words_ptr = state_ptr + 1
    offsets = tile.to(gl.int64) * BLOCK + gl.arange(0, BLOCK, layout=coalesced)
    x = gl.load(x_ptr + offsets, mask=offsets < n, other=0.0).to(gl.float32)
    x = gl.convert_layout(x, per_thread)
    local = gl.sum(x, axis=0)
    publish(words_ptr, tile, gl.where(tile == 0, PREFIX, AGGREGATE), local)
    exclusive = local * 0.0
    back = tile - 1                                       # the window's newest tile
    lanes = gl.arange(0, WINDOW, layout=lanes_layout)
    while back >= 0:                                      # look back a window at a time, to a prefix
        behind = back - lanes                             # newest first; lanes before tile 0 read a prefix 0
        words = gl.load(words_ptr + behind, mask=behind >= 0, other=PREFIX_ZERO, volatile=True)
        status = (words >> 32).to(gl.int32)
        values = (words & 0xFFFFFFFF).to(gl.int32).to(gl.float32, bitcast=True)
        first_prefix = gl.min(gl.where(status == PREFIX, lanes, WINDOW), axis=0)
        first_missing = gl.min(gl.where(status == 0, lanes, WINDOW), axis=0)
        # add what is published up to the nearest prefix or the first tile not yet published
        exclusive += gl.sum(gl.where(lanes < gl.minimum(first_missing, first_prefix + 1), values, 0.0), axis=0)
        back = gl.where(first_prefix < first_missing, -1, back - first_missing)
    if tile > 0:
        publish(words_ptr, tile, PREFIX, exclusive + local)
    y = gl.convert_layout(gl.associative_scan(x, 0, add) + exclusive, coalesced)
    gl.store(y_ptr + offsets, y, mask=offsets < n)


def vector(dtype) -> int:
    return VECTOR_BYTES // dtype.itemsize


def build(case, inputs, outputs, stream, variant="", block=BLOCK, warps=WARPS):
    x, y = inputs["x"], outputs["y"]
    n = x.numel()
    grid = (triton.cdiv(n, block),)
    state = torch.zeros(grid[0] + 1, dtype=torch.int64, device=x.device)    # the ticket, then a word a tile
    scan.warmup(x, y, n, state, block, vector(x.dtype), num_warps=warps, grid=grid)

    def run():
        state.zero_()
        scan[grid](x, y, n, state, block, vector(x.dtype), num_warps=warps)

    return run


def export(case, variant, target, block=BLOCK, warps=WARPS):
    """The case's kernel compiled for `target` (sm_90a) without a GPU: its cubin."""
    from backends.gluon import cubin
    n = case.shape["n"]
    x, y = torch.empty(n, dtype=getattr(torch, case.dtype)), torch.empty(n, dtype=torch.float32)
    state = torch.empty(triton.cdiv(n, block) + 1, dtype=torch.int64)
    return cubin(scan, {"x_ptr": x, "y_ptr": y, "n": n, "state_ptr": state},
                 {"BLOCK": block, "VEC": vector(x.dtype), "num_warps": warps}, warps, target)
