"""Shared by the numba_simt kernels: loads and stores that widen every dtype to float32 (bfloat16
arrives as its uint16 bits), and compiling ahead of the first launch."""
import numba
from numba import cuda

from backends.base import cuda_simulator


def compile_for(kernel, *args):
    """Compile `kernel` for these arguments now, so build() pays for it and the first launch does
    not (the CUDA simulator interprets Python: nothing to compile)."""
    if not cuda_simulator():
        kernel.compile(tuple(numba.typeof(a) for a in args))


@cuda.jit(device=True, inline=True)
def widen(v):
    return numba.float32(v)


@cuda.jit(device=True, inline=True)
def widen_bf16(bits):
    return cuda.libdevice.int_as_float(numba.int32(bits) << 16)


@cuda.jit(device=True, inline=True)
def narrow_bf16(f):
    bits = numba.uint32(cuda.libdevice.float_as_int(f))
    bits += numba.uint32(0x7FFF) + ((bits >> 16) & numba.uint32(1))      # round to nearest even
    return numba.uint16(bits >> 16)


@cuda.jit(device=True, inline=True)
def narrow(f):
    return f


LOAD = {"float32": widen, "float16": widen, "bfloat16": widen_bf16}
STORE = {"float32": narrow, "float16": narrow, "bfloat16": narrow_bf16}
