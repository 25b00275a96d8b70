"""Inclusive prefix sum with Warp: wp.utils.array_scan, Warp's own device-wide scan (CUB's on a CUDA
device), no kernel written. Warp 1.19 has no scan of a tile inside a kernel (tile_sum reduces, nothing
scans), so this is the tool's answer, as cuda.compute's is. array_scan takes one dtype in and out:
float32 only (16-bit inputs would need a widening pass of their own before it)."""
import contextlib

import warp as wp


def supports(case, variant=""):
    if case.dtype != "float32":
        return "wp.utils.array_scan writes the input's dtype: the problem's float32 sums take float32 inputs only"
    return None


def build(case, inputs, outputs, stream, variant=""):
    x, y = inputs["x"], outputs["y"]
    on_stream = contextlib.nullcontext() if stream is None else wp.ScopedStream(stream)   # None: Warp's CPU device

    def run():
        with on_stream:
            wp.utils.array_scan(x, y, inclusive=True)

    return run
