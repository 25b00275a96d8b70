"""C = A @ B in Warp tiles, as Warp's benchmark_gemm.py writes it: each block owns a
(TILE_M x TILE_N) float32 accumulator and walks K, tile_load-ing the A and B tiles into shared
memory (16-byte vector loads where a tile lies inside the matrix) and handing them to
tile_matmul. `mathdx` picks what tile_matmul runs: cuBLASDx (libmathdx), or Warp's own scalar
GEMM (the setting of Warp's benchmark_tile_matmul_pipelined.py, and the faster one for float32
here). tile_matmul keeps its accumulator in shared memory either way, so every K step reads and
writes the (TILE_M x TILE_N) float32 tile there. tile_load reads zeros past the edges, so any
shape works; bfloat16 tiles need the module's backward pass off. Register-prefetched tiles (the
pipelined benchmark's other kernel) and unchecked aligned loads were measured and lost
(reports/evidence/warp-tiles/README.md)."""
import functools
from typing import NamedTuple

import warp as wp

from backends.base import compiling
from backends.warp_tiles import warp_dtype


class Tiles(NamedTuple):
    m: int
    n: int
    k: int
    block_dim: int
    mathdx: bool = True    # tile_matmul through cuBLASDx, or Warp's scalar GEMM


# measured on an H100 by tools/warp_tiles_sweep.py (reports/evidence/warp-tiles/README.md): 16-bit
# GEMMs are fastest with the deepest K step that fits shared memory (fewest trips through the
# accumulator), fp32 with Warp's scalar GEMM, which beat cuBLASDx's SIMT one there
BEST = {"float32": Tiles(64, 64, 32, 128, mathdx=False),
        "float16": Tiles(128, 128, 256, 256), "bfloat16": Tiles(128, 128, 256, 256)}


@functools.cache
def gemm_kernel(dtype, t: Tiles):
    TM, TN, TK = t.m, t.n, t.k

    @wp.kernel(module="unique", module_options={"enable_backward": False, "enable_mathdx_gemm": t.mathdx})
    def gemm(a: wp.array2d[dtype], b: wp.array2d[dtype], c: wp.array2d[dtype]):
        i, j = wp.tid()
        acc = wp.tile_zeros(shape=(TM, TN), dtype=wp.float32)
        for k in range(0, a.shape[1], TK):
            a_tile = wp.tile_load(a, shape=(TM, TK), offset=(i * TM, k), storage="shared")
            b_tile = wp.tile_load(b, shape=(TK, TN), offset=(k, j * TN), storage="shared")
            wp.tile_matmul(a_tile, b_tile, acc)
        wp.tile_store(c, wp.tile_astype(acc, dtype), offset=(i * TM, j * TN))

    return gemm


def kernels(case, tiles=None, variant=""):
    """The (kernel, block_dim) pairs build() launches, for compiling ahead (tools/warp_tiles_sweep.py)."""
    t = tiles or BEST[case.dtype]
    if variant == "no_mathdx":
        t = t._replace(mathdx=False)
    return [(gemm_kernel(warp_dtype(case.dtype), t), t.block_dim)]


def build(case, inputs, outputs, stream, variant="", tiles=None):
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    t = tiles or BEST[case.dtype]
    [(kernel, _)] = kernels(case, t, variant)
    grid = (-(-c.shape[0] // t.m), -(-c.shape[1] // t.n))
    # compile now, before launch_tiled (which would compile holding the GPU): Warp's codegen, NVRTC and
    # the cuBLASDx link run on the CPU (then the module is uploaded; no kernel runs), so another worker may time
    with compiling():
        wp.load_module(kernel.module, device=a.device, block_dim=t.block_dim)
    launch = wp.launch_tiled(kernel, dim=grid, inputs=[a, b, c], block_dim=t.block_dim, device=a.device,
                             record_cmd=True)

    def run():
        launch.launch(stream=stream)

    return run
