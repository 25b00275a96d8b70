"""C = A @ B in Pallas. Default variant, Triton lowering, as Triton's matmul tutorial writes it:
output tiles in grouped order for L2 reuse, a fori_loop over K of masked plgpu.load and jnp.dot
into a float32 accumulator; one fixed configuration per dtype (Pallas has no autotuner). fp32 asks
for Precision.HIGHEST, which the lowering turns into tl.dot's IEEE precision (DEFAULT is TF32).
mosaic_gpu (fp16/bf16), as JAX's Mosaic GPU quickstart writes it: a block per output tile, a
plgpu.emit_pipeline over K that brings swizzled A and B tiles into SMEM by TMA (zero-filled past
the edges) and issues wgmma into a register accumulator, then SMEM -> GMEM by TMA (clipped)."""
import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from problems.base import DTYPES
from backends.jax_pallas import compiled_call, interpret_param, interpreted

SWIZZLE = 128            # bytes: a K tile of 64 fp16/bf16
TMA_ROWS = 8             # Mosaic GPU's tiling transform: (8 rows, SWIZZLE bytes)


def supports(case, variant=""):
    """Mosaic GPU: swizzled tiles of whole (8, 128-byte) tiles only (no rounding up), and Hopper's
    wgmma takes fp32 only as TF32."""
    if variant != "mosaic_gpu":
        return None
    if case.dtype == "float32":
        return "Mosaic GPU: wgmma takes fp32 only as TF32, not an fp32 GEMM"
    swizzle_elems = SWIZZLE // DTYPES[case.dtype].itemsize
    m, n, k = case.shape["M"], case.shape["N"], case.shape["K"]
    if m % TMA_ROWS or n % swizzle_elems or k % swizzle_elems:
        return f"Mosaic GPU: swizzled TMA tiles need M % 8, N % {swizzle_elems}, K % {swizzle_elems} == 0"
    return None


def config(dtype):
    """Triton lowering: (BM, BN, BK, GROUP, num_warps, num_stages)."""
    if interpreted():
        return 32, 32, 32, 4, 4, 1
    if dtype == jnp.float32:
        return 128, 128, 32, 8, 8, 3
    return 128, 256, 64, 8, 8, 3


def matmul_triton(a_ref, b_ref, c_ref, *, bm, bn, bk, group, precision):
    from jax.experimental.pallas import triton as plgpu
    m, k = a_ref.shape
    n = b_ref.shape[1]
    tiles_m, tiles_n = pl.cdiv(m, bm), pl.cdiv(n, bn)
    pid = pl.program_id(0)
    first_m = pid // (group * tiles_n) * group
    size_m = jnp.minimum(tiles_m - first_m, group)
    pid_m = first_m + (pid % (group * tiles_n)) % size_m
    pid_n = (pid % (group * tiles_n)) // size_m
    rm_ok = pid_m * bm + jnp.arange(bm) < m
    rn_ok = pid_n * bn + jnp.arange(bn) < n

    def step(kk, acc):
        rk_ok = kk * bk + jnp.arange(bk) < k
        a = plgpu.load(a_ref.at[pl.ds(pid_m * bm, bm), pl.ds(kk * bk, bk)],
                       mask=rm_ok[:, None] & rk_ok[None, :], other=0.0)
        b = plgpu.load(b_ref.at[pl.ds(kk * bk, bk), pl.ds(pid_n * bn, bn)],
                       mask=rk_ok[:, None] & rn_ok[None, :], other=0.0)
        return acc + jnp.dot(a, b, precision=precision, preferred_element_type=jnp.float32)

    acc = lax.fori_loop(0, pl.cdiv(k, bk), step, jnp.zeros((bm, bn), jnp.float32))
    plgpu.store(c_ref.at[pl.ds(pid_m * bm, bm), pl.ds(pid_n * bn, bn)], acc.astype(c_ref.dtype),
                mask=rm_ok[:, None] & rn_ok[None, :])


def matmul_mgpu(a_gmem, b_gmem, c_gmem, c_smem, *, tm, tn, tk, transforms):
    from jax.experimental.pallas import mosaic_gpu as plgpu
    pm, pn = lax.axis_index("m"), lax.axis_index("n")
    k = a_gmem.shape[1]

    def step(_, a_smem, b_smem, acc):
        plgpu.wgmma(acc, a_smem, b_smem)
        plgpu.wgmma_wait(1)                 # keep one wgmma in flight (hence delay_release=1)

    @functools.partial(pl.run_scoped, acc=plgpu.ACC((tm, tn), jnp.float32))
    def _(acc):
        plgpu.emit_pipeline(
            functools.partial(step, acc=acc), grid=(pl.cdiv(k, tk),),
            in_specs=[plgpu.BlockSpec((tm, tk), lambda kk: (pm, kk), transforms=transforms, delay_release=1),
                      plgpu.BlockSpec((tk, tn), lambda kk: (kk, pn), transforms=transforms, delay_release=1)],
            max_concurrent_steps=4)(a_gmem, b_gmem)
        plgpu.wgmma_wait(0)
        c_smem[...] = acc[...].astype(c_smem.dtype)

    plgpu.commit_smem()
    plgpu.copy_smem_to_gmem(c_smem, c_gmem.at[pl.ds(pm * tm, tm), pl.ds(pn * tn, tn)])
    plgpu.wait_smem_to_gmem(0)


def matmul(a, b, *, variant):
    (m, _), n = a.shape, b.shape[1]
    out = jax.ShapeDtypeStruct((m, n), a.dtype)
    if variant == "mosaic_gpu":
        from jax.experimental.pallas import mosaic_gpu as plgpu
        tm, tn = (64, 64) if interpreted() else (128, 128)
        tk = SWIZZLE // a.dtype.itemsize
        transforms = (plgpu.TilingTransform((8, tk)), plgpu.SwizzleTransform(SWIZZLE))
        kernel = functools.partial(matmul_mgpu, tm=tm, tn=tn, tk=tk, transforms=transforms)
        return plgpu.kernel(
            kernel, out_type=out, grid=(pl.cdiv(m, tm), pl.cdiv(n, tn)), grid_names=("m", "n"),
            scratch_types=[plgpu.SMEM((tm, tn), a.dtype)],
            interpret=interpret_param(variant) or None)(a, b)
    from jax.experimental.pallas import triton as plgpu
    bm, bn, bk, group, warps, stages = config(a.dtype)
    precision = lax.Precision.HIGHEST if a.dtype == jnp.float32 else None
    kernel = functools.partial(matmul_triton, bm=bm, bn=bn, bk=bk, group=group, precision=precision)
    return pl.pallas_call(
        kernel, out_shape=out, grid=(pl.cdiv(m, bm) * pl.cdiv(n, bn),),
        compiler_params=plgpu.CompilerParams(num_warps=warps, num_stages=stages),
        interpret=interpret_param(variant))(a, b)


def specs(case):
    from backends.jax_pallas import jax_dtype
    m, n, k, dt = case.shape["M"], case.shape["N"], case.shape["K"], jax_dtype(case.dtype)
    return matmul, [jax.ShapeDtypeStruct((m, k), dt), jax.ShapeDtypeStruct((k, n), dt)]


def build(case, inputs, outputs, stream, variant=""):
    return compiled_call(functools.partial(matmul, variant=variant), "c", inputs["a"], inputs["b"])
