"""z = alpha * x + y in Triton: one BLOCK-wide tile per program, float32 arithmetic, masked tail."""
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def axpy(x_ptr, y_ptr, z_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(z_ptr + offs, (alpha * x + y).to(z_ptr.dtype.element_ty), mask=mask)


def build(case, inputs, outputs, stream, variant=""):
    x, y, z, alpha = inputs["x"], inputs["y"], outputs["z"], inputs["alpha"]
    n = x.shape[0]
    grid = (triton.cdiv(n, BLOCK),)
    axpy.warmup(x, y, z, alpha, n, BLOCK=BLOCK, num_warps=8, grid=grid)

    def run():
        axpy[grid](x, y, z, alpha, n, BLOCK=BLOCK, num_warps=8)

    return run
