"""z = alpha * x + y with cuda.compute.binary_transform: the operator is a Python function that
cuda.compute compiles; alpha lives in a one-element device array so a new value needs no rebuild."""
import numpy as np
from numba import cuda

from backends.base import compiling
from cuda import compute           # binds only `compute`: `cuda` stays numba.cuda


def supports(case, variant=""):
    return "cuda.compute 1.1.1 compiles no user operator on float16" if case.dtype == "float16" else None


def build(case, inputs, outputs, stream, variant=""):
    x, y, z = inputs["x"], inputs["y"], outputs["z"]
    alpha = cuda.to_device(np.array([inputs["alpha"]], dtype=np.float32))

    def axpy(a, b):
        return alpha[0] * a + b

    with compiling():      # the operator compiled and linked on the CPU (kernels load lazily, at the first call)
        transform = compute.make_binary_transform(d_in1=x, d_in2=y, d_out=z, op=axpy)
    n = x.shape[0]

    def run():
        transform(d_in1=x, d_in2=y, d_out=z, op=axpy, num_items=n, stream=stream)

    return run
