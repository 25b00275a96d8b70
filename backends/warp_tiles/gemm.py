"""C = A @ B in Warp tiles, as Warp's benchmark_tile_matmul_pipelined.py writes it: each block
owns a (TILE_M x TILE_N) float32 accumulator and walks K, loading the next A and B tiles into
registers while tile_matmul (cuBLASDx, unless the variant turns it off) works on the current ones.
tile_load reads zeros past the edges, so any shape works; bfloat16 tiles need the module's
backward pass off."""
import functools

import warp as wp

from backends.warp_tiles import warp_dtype

TILE = {"float32": (64, 64, 16, 128), "float16": (64, 64, 64, 128), "bfloat16": (64, 64, 64, 128)}


@functools.cache
def gemm_kernel(dtype, tile_m, tile_n, tile_k, mathdx):
    @wp.kernel(module="unique", module_options={"enable_backward": False, "enable_mathdx_gemm": mathdx})
    def gemm(a: wp.array2d[dtype], b: wp.array2d[dtype], c: wp.array2d[dtype]):
        i, j = wp.tid()
        acc = wp.tile_zeros(shape=(tile_m, tile_n), dtype=wp.float32)
        a_tile = wp.tile_load(a, shape=(tile_m, tile_k), offset=(i * tile_m, 0), storage="register")
        b_tile = wp.tile_load(b, shape=(tile_k, tile_n), offset=(0, j * tile_n), storage="register")
        for k in range(1, (a.shape[1] + tile_k - 1) // tile_k):
            a_next = wp.tile_load(a, shape=(tile_m, tile_k), offset=(i * tile_m, k * tile_k), storage="register")
            b_next = wp.tile_load(b, shape=(tile_k, tile_n), offset=(k * tile_k, j * tile_n), storage="register")
            wp.tile_matmul(a_tile, b_tile, acc)
            a_tile = a_next
            b_tile = b_next
        wp.tile_matmul(a_tile, b_tile, acc)
        wp.tile_store(c, wp.tile_astype(acc, dtype), offset=(i * tile_m, j * tile_n))

    return gemm


def build(case, inputs, outputs, stream, variant="", tile=None):
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    tile_m, tile_n, tile_k, block_dim = tile or TILE[case.dtype]
    kernel = gemm_kernel(warp_dtype(case.dtype), tile_m, tile_n, tile_k, variant != "no_mathdx")
    grid = (-(-c.shape[0] // tile_m), -(-c.shape[1] // tile_n))
    launch = wp.launch_tiled(kernel, dim=grid, inputs=[a, b, c], block_dim=block_dim, device=a.device,
                             record_cmd=True)
    wp.load_module(kernel.module, device=a.device)

    def run():
        launch.launch(stream=stream)

    return run
