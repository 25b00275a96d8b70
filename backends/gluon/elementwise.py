"""z = alpha * x + y in Gluon: one BLOCK-wide tile per program in a blocked layout that gives each
thread 16 bytes a load (4 float32 or 8 16-bit elements), float32 arithmetic, masked tail, as Gluon's
layout tutorial (02-layouts) lays out a copy."""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

BLOCK = 4096
WARPS = 8
VECTOR_BYTES = 16


@gluon.jit
def axpy(x_ptr, y_ptr, z_ptr, alpha, n, BLOCK: gl.constexpr, VEC: gl.constexpr, num_warps: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout(size_per_thread=[VEC], threads_per_warp=[32], warps_per_cta=[num_warps],
                                            order=[0])
    offs = gl.program_id(0).to(gl.int64) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    x = gl.load(x_ptr + offs, mask=mask).to(gl.float32)
    y = gl.load(y_ptr + offs, mask=mask).to(gl.float32)
    gl.store(z_ptr + offs, (alpha * x + y).to(z_ptr.dtype.element_ty), mask=mask)


def vector(dtype) -> int:
    return VECTOR_BYTES // dtype.itemsize


def build(case, inputs, outputs, stream, variant=""):
    x, y, z, alpha = inputs["x"], inputs["y"], outputs["z"], inputs["alpha"]
    n = x.shape[0]
    grid = (triton.cdiv(n, BLOCK),)
    axpy.warmup(x, y, z, alpha, n, BLOCK, vector(x.dtype), num_warps=WARPS, grid=grid)

    def run():
        axpy[grid](x, y, z, alpha, n, BLOCK, vector(x.dtype), num_warps=WARPS)

    return run


def export(case, variant, target):
    """The case's kernel compiled for `target` (sm_90a) without a GPU: its cubin."""
    from backends.gluon import cubin
    n = case.shape["n"]
    x = torch.empty(n, dtype=getattr(torch, case.dtype))
    return cubin(axpy, {"x_ptr": x, "y_ptr": x, "z_ptr": x, "alpha": 1.5, "n": n},
                 {"BLOCK": BLOCK, "VEC": vector(x.dtype), "num_warps": WARPS}, WARPS, target)
