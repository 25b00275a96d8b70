"""z = alpha * x + y in TileLang: a BLOCK-element slice per program, copied into registers (T.copy
vectorizes it and zero-fills past the end), computed in float32 in T.Parallel, copied back."""
import tilelang.language as T

from backends.tilelang import compile_program

BLOCK, THREADS = 4096, 256
DTYPE = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16"}


def program(case):
    n, dtype = case.shape["n"], DTYPE[case.dtype]

    @T.prim_func
    def axpy(x: T.Tensor((n,), dtype), y: T.Tensor((n,), dtype), alpha: T.Tensor((1,), "float32"),
             z: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=THREADS) as bx:
            xs = T.alloc_fragment((BLOCK,), dtype)
            ys = T.alloc_fragment((BLOCK,), dtype)
            T.copy(x[bx * BLOCK], xs)
            T.copy(y[bx * BLOCK], ys)
            for i in T.Parallel(BLOCK):
                xs[i] = (alpha[0] * xs[i].astype("float32") + ys[i].astype("float32")).astype(dtype)
            T.copy(xs, z[bx * BLOCK])

    return axpy


def build(case, inputs, outputs, stream, variant=""):
    import torch
    kernel = compile_program(program(case))
    x, y, z = inputs["x"], inputs["y"], outputs["z"]
    alpha = torch.full((1,), inputs["alpha"], dtype=torch.float32, device=x.device)

    def run():
        kernel(x, y, alpha, z)

    return run
