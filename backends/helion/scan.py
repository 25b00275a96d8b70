"""Inclusive prefix sum in Helion, in one pass: torch.cumsum scans a tile inside a program (Helion
lowers it to tl.associative_scan), and the programs pass their carries by decoupled look-back (the
single-pass scan of Merrill and Garland, as CUB does it), written with Helion's atomics and a device
`while` loop since the language has no device-wide scan.

A program sums its tile, stores that aggregate, then raises its tile's flag (1: aggregate, 2: inclusive
prefix; the store before a release atomic, read back after an acquire one), walks back over its
predecessors' flags adding aggregates until it meets an inclusive prefix, and publishes its own. Tiles
are numbered by program id and wait only on lower ones, which the GPU starts first (as CUB relies on).
The flags are zeroed before every launch. 16-bit inputs are widened to float32 on load.

The tile is BLOCK elements for every config: Helion's autotuner (the default variant) times its
candidates back to back without zeroing the flags, so it searches warps and stages at that one tile
size, where a previous candidate's flags carry the same values."""
import helion
import helion.language as hl
import torch

from backends.helion import interpreted, prepared

AGGREGATE, PREFIX = 1, 2           # a tile's flag
# elements a program scans, and the fixed variant's warps: on the H200, 16384 elements in 4 warps scan
# 2^28 float32 at 61% of the copy, 8192 in 8 warps (before) at 43% (tools/knob_sweep.py helion scan)
BLOCK = 16384
WARPS = (4, 8, 16)                 # what the autotuner tries at that tile size
FIXED_WARPS = 4
INTERPRETED_N = 2**16              # the interpreter calls a scan's combine function in Python, per step


def supports(case, variant=""):
    if interpreted() and case.shape["n"] > INTERPRETED_N:
        return "Triton interpreter: tl.associative_scan runs its combine function in Python (minutes at 2^20)"
    return None


def prefix_sum(x: torch.Tensor, y: torch.Tensor, flags: torch.Tensor, aggregates: torch.Tensor,
               prefixes: torch.Tensor) -> None:
    for tile in hl.tile(x.size(0)):
        v = x[tile].to(torch.float32)
        local = v.sum(0)
        t = tile.id
        aggregates[t] = local
        if t == 0:
            prefixes[t] = local
            hl.atomic_xchg(flags, [t], PREFIX, sem="release")
        else:
            hl.atomic_xchg(flags, [t], AGGREGATE, sem="release")
        exclusive = local * 0.0
        back = hl.full([], t - 1, torch.int32)
        while back >= 0:                       # look back until an inclusive prefix
            flag = hl.atomic_add(flags, [back], 0, sem="acquire")
            exclusive = exclusive + torch.where(flag == PREFIX, prefixes[back],
                                                torch.where(flag == AGGREGATE, aggregates[back], 0.0))
            back = torch.where(flag == PREFIX, -1, torch.where(flag == AGGREGATE, back - 1, back))
        if t > 0:
            prefixes[t] = exclusive + local
            hl.atomic_xchg(flags, [t], PREFIX, sem="release")
        y[tile] = torch.cumsum(v, 0) + exclusive


def build(case, inputs, outputs, stream, variant="", block=BLOCK, warps=FIXED_WARPS):
    x, y = inputs["x"], outputs["y"]
    n = x.numel()
    # the interpreter runs programs one by one: about 64 tiles of at least 64 elements
    block = min(block, max(64, 1 << (n // 64 - 1).bit_length())) if interpreted() else block
    configs = [helion.Config(block_sizes=[block], num_warps=w) for w in WARPS]
    kernel = helion.kernel(prefix_sum, configs=configs)
    tiles = -(-n // block)
    flags = torch.zeros(tiles, dtype=torch.int32, device=x.device)
    aggregates, prefixes = (torch.empty(tiles, dtype=torch.float32, device=x.device) for _ in range(2))
    launch = prepared(kernel, (x, y, flags, aggregates, prefixes),
                      (x, torch.empty_like(y), flags, aggregates, prefixes),
                      helion.Config(block_sizes=[block], num_warps=warps), variant)

    def run():
        flags.zero_()
        launch()

    return run
