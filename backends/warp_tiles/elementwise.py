"""z = alpha * x + y in Warp tiles: each block loads a tile of x and of y, computes in float32
and stores one tile of z; tile_load/tile_store bounds-check the last, partial tile."""
import functools

import warp as wp

from backends.warp_tiles import warp_dtype

TILE = 2048           # elements per block: 8 per thread
BLOCK_DIM = 256


@functools.cache
def axpy_kernel(dtype):
    @wp.kernel(enable_backward=False, module="unique")
    def axpy(x: wp.array[dtype], y: wp.array[dtype], z: wp.array[dtype], alpha: wp.float32):
        i = wp.tid()
        tx = wp.tile_astype(wp.tile_load(x, shape=TILE, offset=i * TILE), wp.float32)
        ty = wp.tile_astype(wp.tile_load(y, shape=TILE, offset=i * TILE), wp.float32)
        wp.tile_store(z, wp.tile_astype(tx * alpha + ty, dtype), offset=i * TILE)

    return axpy


def build(case, inputs, outputs, stream, variant=""):
    x, y, z = inputs["x"], inputs["y"], outputs["z"]
    kernel = axpy_kernel(warp_dtype(case.dtype))
    launch = wp.launch_tiled(kernel, dim=-(-x.shape[0] // TILE), inputs=[x, y, z, float(inputs["alpha"])],
                             block_dim=BLOCK_DIM, device=x.device, record_cmd=True)
    wp.load_module(kernel.module, device=x.device)       # compile now, not at the first launch

    def run():
        launch.launch(stream=stream)

    return run
