"""C = dequant(A) @ dequant(B)^T in Pallas's Mosaic GPU (variant mosaic_gpu; Hopper's e4m3 wgmma), as
the lab's bf16 Mosaic GEMM (gemm.py, JAX's Mosaic GPU quickstart) is written, with the promotion FP8
tensor cores need (problems/gemm_fp8.py).

Works as follows:
1. A block per (TILE_M x TILE_N) tile of C; a plgpu.emit_pipeline over K in steps of one scale block
   (128) brings A's and B's e4m3 tiles into swizzled SMEM by TMA, and the step's scales with them, as
   rows TMA can copy (16-byte multiples): A's scales transposed, (K / 128, M), and B's block scales
   repeated over its rows and transposed, (K / 128, N); both made by XLA before the kernel.
2. Each step's wgmma (B's K-major tile transposed in place: e4m3 wgmma takes both operands K-major)
   sums into a fresh float32 accumulator (a scoped ACC), which is scaled by A's row scales and B's
   block scale and added into the float32 sum carried through the pipeline.
3. The sum, rounded to bfloat16, goes SMEM -> GMEM by TMA.

Constraints: whole TMA tiles, no edges (Mosaic GPU's swizzled tiles round nothing up): M a multiple of
TILE_M, N of TILE_N, K of 128; e4m3 only; tensorwise cases through the same path (their one scale
broadcast to the blockwise shapes)."""
import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from backends.jax_pallas import compiled_call, interpret_param

BLOCK = 128              # a scale block of K, and of B's rows
SWIZZLE = 128            # bytes: one K block of e4m3
TILE_M, TILE_N = 64, 128     # one warpgroup: the sum and a step's partial sum, 64 fp32 registers each
STAGES = 4


def supports(case, variant="mosaic_gpu"):
    m, n = case.shape["M"], case.shape["N"]
    if m % TILE_M or n % TILE_N:
        return f"Mosaic GPU: whole TMA tiles only, M a multiple of {TILE_M} and N of {TILE_N}"
    return None


def gemm_fp8_mgpu(a_gmem, b_gmem, as_gmem, bs_gmem, c_gmem, c_smem):
    from jax.experimental.pallas import mosaic_gpu as plgpu
    pm, pn = lax.axis_index("m"), lax.axis_index("n")
    k = a_gmem.shape[1]
    transforms = (plgpu.TilingTransform((8, SWIZZLE)), plgpu.SwizzleTransform(SWIZZLE))

    def step(_, a_smem, b_smem, as_smem, bs_smem, acc):
        def block(part):
            plgpu.wgmma(part, a_smem, plgpu.transpose_ref(b_smem, (1, 0)))
            return part[...]
        part = pl.run_scoped(block, plgpu.ACC((TILE_M, TILE_N), jnp.float32))
        rows = plgpu.load(as_smem, (0,), layout=plgpu.Layout.WGMMA.reduce(1))
        cols = plgpu.load(bs_smem, (0,), layout=plgpu.Layout.WGMMA.reduce(0))
        scale = lax.broadcast_in_dim(rows, part.shape, [0]) * lax.broadcast_in_dim(cols, part.shape, [1])
        return acc + part * scale

    zero = plgpu.layout_cast(jnp.zeros((TILE_M, TILE_N), jnp.float32), plgpu.Layout.WGMMA)
    acc = plgpu.emit_pipeline(
        step, grid=(k // BLOCK,), max_concurrent_steps=STAGES, init_carry=zero,
        in_specs=[plgpu.BlockSpec((TILE_M, BLOCK), lambda kk: (pm, kk), transforms=transforms),
                  plgpu.BlockSpec((TILE_N, BLOCK), lambda kk: (pn, kk), transforms=transforms),
                  plgpu.BlockSpec((1, TILE_M), lambda kk: (kk, pm)),
                  plgpu.BlockSpec((1, TILE_N), lambda kk: (kk, pn))],
    )(a_gmem, b_gmem, as_gmem, bs_gmem)
    c_smem[...] = acc.astype(c_smem.dtype)
    plgpu.commit_smem()
    plgpu.copy_smem_to_gmem(c_smem, c_gmem.at[pl.ds(pm * TILE_M, TILE_M), pl.ds(pn * TILE_N, TILE_N)])
    plgpu.wait_smem_to_gmem(0)


def gemm_fp8(a, b, a_scale, b_scale, *, variant):
    """a, b: e4m3 bits (uint8); the scales float32, blockwise or (1, 1)."""
    from jax.experimental.pallas import mosaic_gpu as plgpu
    (m, k), n = a.shape, b.shape[0]
    e4m3 = functools.partial(lax.bitcast_convert_type, new_dtype=jnp.float8_e4m3fn)
    a_scale = jnp.broadcast_to(a_scale, (m, k // BLOCK)).T
    b_scale = jnp.repeat(jnp.broadcast_to(b_scale, (pl.cdiv(n, BLOCK), k // BLOCK)), BLOCK, axis=0)[:n].T
    return plgpu.kernel(
        gemm_fp8_mgpu, out_type=jax.ShapeDtypeStruct((m, n), jnp.bfloat16),
        grid=(m // TILE_M, n // TILE_N), grid_names=("m", "n"),
        scratch_types=[plgpu.SMEM((TILE_M, TILE_N), jnp.bfloat16)],
        interpret=interpret_param(variant) or None)(e4m3(a), e4m3(b), a_scale, b_scale)


def specs(case):
    import problems
    shapes = problems.get("gemm_fp8").input_shapes(case)
    return gemm_fp8, [jax.ShapeDtypeStruct(shapes[name], jnp.uint8 if name in ("a", "b") else jnp.float32)
                      for name in ("a", "b", "a_scale", "b_scale")]


def build(case, inputs, outputs, stream, variant=""):
    return compiled_call(functools.partial(gemm_fp8, variant=variant), "c", inputs["a"], inputs["b"],
                         inputs["a_scale"], inputs["b_scale"])
