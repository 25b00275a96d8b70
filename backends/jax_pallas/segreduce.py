"""Per-row sum in Pallas. Default variant, Triton lowering: each program sums ROWS rows, walking
their columns in BLOCK-wide tiles (a fori_loop of masked plgpu.load) with a float32 accumulator;
short rows pack several per program, long rows take one each, as the triton backend does.
mosaic_gpu: a block per 64 rows; plgpu.emit_pipeline streams (64, BLOCK) tiles into swizzled SMEM
by TMA (zero-filled past the edges) and each step adds the tile's row sums (WGMMA layout, reduced
along axis 1) to a loop carry. Its swizzled tiles take whole tiles only: other shapes are not
applicable (supports)."""
import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from problems.base import DTYPES
from backends.jax_pallas import compiled_call, interpret_param

MGPU_ROWS = 64          # the WGMMA register layout's row tile
SWIZZLE = 128           # bytes
TMA_ROWS = 8            # Mosaic GPU's tiling transform: (8 rows, SWIZZLE bytes)


def supports(case, variant=""):
    """Mosaic GPU tiles a GMEM array only where each tiled dimension is a multiple of its tile or
    smaller than it (no rounding up: launch_context.TileTransform)."""
    swizzle_elems = SWIZZLE // DTYPES[case.dtype].itemsize
    rows, cols = case.shape["rows"], case.shape["cols"]
    if variant == "mosaic_gpu" and (cols % swizzle_elems or (rows > TMA_ROWS and rows % TMA_ROWS)):
        return f"Mosaic GPU: swizzled TMA tiles need cols % {swizzle_elems} == 0 and rows % {TMA_ROWS} == 0"
    return None


def row_sum_triton(x_ref, y_ref, *, rows_per, block):
    from jax.experimental.pallas import triton as plgpu
    rows, cols = x_ref.shape
    r0 = pl.program_id(0) * rows_per
    row_ok = r0 + jnp.arange(rows_per) < rows

    def tile(i, acc):
        c0 = i * block
        mask = row_ok[:, None] & (c0 + jnp.arange(block) < cols)[None, :]
        x = plgpu.load(x_ref.at[pl.ds(r0, rows_per), pl.ds(c0, block)], mask=mask, other=0.0)
        return acc + x.astype(jnp.float32)

    acc = lax.fori_loop(0, pl.cdiv(cols, block), tile, jnp.zeros((rows_per, block), jnp.float32))
    plgpu.store(y_ref.at[pl.ds(r0, rows_per)], acc.sum(axis=1), mask=row_ok)


def row_sum_mgpu(x_gmem, y_gmem, y_smem, *, block, transforms):
    from jax.experimental.pallas import mosaic_gpu as plgpu
    r = lax.axis_index("r")
    cols = x_gmem.shape[1]

    def step(_, x_smem, acc):
        return acc + x_smem[...].astype(jnp.float32).sum(axis=1)

    zeros = plgpu.layout_cast(jnp.zeros((MGPU_ROWS,), jnp.float32), plgpu.Layout.WGMMA.reduce(1))
    acc = plgpu.emit_pipeline(
        step, grid=(pl.cdiv(cols, block),),
        in_specs=[plgpu.BlockSpec((MGPU_ROWS, block), lambda c: (r, c), transforms=transforms)],
        max_concurrent_steps=4, init_carry=zeros)(x_gmem)
    y_smem[...] = acc
    plgpu.commit_smem()
    plgpu.copy_smem_to_gmem(y_smem, y_gmem.at[pl.ds(r * MGPU_ROWS, MGPU_ROWS)])
    plgpu.wait_smem_to_gmem(0)


def plan(rows, cols):
    block = min(4096, pl.next_power_of_2(cols))
    rows_per = max(1, min(64, 4096 // block))          # about 4096 elements in flight per program
    warps = 8 if block * rows_per >= 4096 else 4
    return block, rows_per, warps


def row_sum(x, *, variant):
    rows, cols = x.shape
    out = jax.ShapeDtypeStruct((rows,), jnp.float32)
    if variant == "mosaic_gpu":
        from jax.experimental.pallas import mosaic_gpu as plgpu
        elems = SWIZZLE // x.dtype.itemsize             # one swizzle row: 32 fp32 or 64 fp16/bf16
        block = 4 * elems                               # 16 KiB (fp16/bf16) or 32 KiB (fp32) a stage
        transforms = (plgpu.TilingTransform((8, elems)), plgpu.SwizzleTransform(SWIZZLE))
        kernel = functools.partial(row_sum_mgpu, block=block, transforms=transforms)
        return plgpu.kernel(
            kernel, out_type=out, grid=(pl.cdiv(rows, MGPU_ROWS),), grid_names=("r",),
            scratch_types=[plgpu.SMEM((MGPU_ROWS,), jnp.float32)],
            interpret=interpret_param(variant) or None)(x)
    from jax.experimental.pallas import triton as plgpu
    block, rows_per, warps = plan(rows, cols)
    kernel = functools.partial(row_sum_triton, rows_per=rows_per, block=block)
    return pl.pallas_call(
        kernel, out_shape=out, grid=(pl.cdiv(rows, rows_per),),
        compiler_params=plgpu.CompilerParams(num_warps=warps, num_stages=1),
        interpret=interpret_param(variant))(x)


def specs(case):
    from backends.jax_pallas import jax_dtype
    return row_sum, [jax.ShapeDtypeStruct((case.shape["rows"], case.shape["cols"]), jax_dtype(case.dtype))]


def build(case, inputs, outputs, stream, variant=""):
    return compiled_call(functools.partial(row_sum, variant=variant), "y", inputs["x"])
