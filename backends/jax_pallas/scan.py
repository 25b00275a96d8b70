"""Inclusive prefix sum in Pallas (Triton lowering), reduce-then-scan: Pallas programs run
independently and share nothing (no atomics or spin-waits across programs to pass carries), so a
whole-array scan is two kernels with the tiles' carries between them: each program sums its BLOCK
tile; jnp.cumsum over those few sums (XLA, tiles of the array apart) gives each tile's carry; each
program then scans its tile (jnp.cumsum inside the kernel) and adds its carry. x is read twice, y
written once. 16-bit inputs widened to float32 on load; partial last tiles masked."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from backends.jax_pallas import compiled_call, interpret_param

BLOCK, WARPS = 4096, 8


def tile_sum(x_ref, s_ref, *, block):
    from jax.experimental.pallas import triton as plgpu
    i = pl.program_id(0)
    offsets = i * block + jnp.arange(block)
    x = plgpu.load(x_ref.at[pl.ds(i * block, block)], mask=offsets < x_ref.shape[0], other=0.0)
    s_ref[i] = x.astype(jnp.float32).sum()


def tile_scan(x_ref, carry_ref, y_ref, *, block):
    from jax.experimental.pallas import triton as plgpu
    i = pl.program_id(0)
    inside = i * block + jnp.arange(block) < x_ref.shape[0]
    x = plgpu.load(x_ref.at[pl.ds(i * block, block)], mask=inside, other=0.0)
    plgpu.store(y_ref.at[pl.ds(i * block, block)], jnp.cumsum(x.astype(jnp.float32)) + carry_ref[i], mask=inside)


def scan(x, *, variant):
    from jax.experimental.pallas import triton as plgpu
    n = x.shape[0]
    block = min(BLOCK, pl.next_power_of_2(n))
    tiles = pl.cdiv(n, block)
    params = dict(grid=(tiles,), compiler_params=plgpu.CompilerParams(num_warps=WARPS, num_stages=1),
                  interpret=interpret_param(variant))
    sums = pl.pallas_call(functools.partial(tile_sum, block=block),
                          out_shape=jax.ShapeDtypeStruct((tiles,), jnp.float32), **params)(x)
    carries = jnp.cumsum(sums) - sums                    # each tile's exclusive prefix
    return pl.pallas_call(functools.partial(tile_scan, block=block),
                          out_shape=jax.ShapeDtypeStruct((n,), jnp.float32), **params)(x, carries)


def specs(case):
    from backends.jax_pallas import jax_dtype
    return scan, [jax.ShapeDtypeStruct((case.shape["n"],), jax_dtype(case.dtype))]


def build(case, inputs, outputs, stream, variant=""):
    return compiled_call(functools.partial(scan, variant=variant), "y", inputs["x"])
