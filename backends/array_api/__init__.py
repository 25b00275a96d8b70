"""Array-API libraries as "no kernel at all": NumPy (CPU), CuPy and PyTorch through array-api-compat."""
import contextlib
import functools
import importlib
import math

import numpy as np

from backends.base import (Backend, StreamHandle, Unavailable, TorchArrays, cupy_overwrite, torch_stream,
                           torch_stream_context, torch_to_device, torch_to_host)

_TOOL = {"numpy": "numpy", "cupy": "cupy", "torch": "torch"}
NUMPY_FP16_MACS = 2**25      # beyond it a NumPy float16 product takes minutes
# beyond it NumPy's materialised attention takes tens of seconds a call (30 s at 4x32x4096x128 on the
# H100 node's CPU: two float32 products of B*H*S*S*D each, and the S*S scores written out in between)
NUMPY_ATTENTION_MACS = 2**32
CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16      # cublasMath_t (cublas_api.h); CuPy has no name for it


class ArrayAPI(Backend):
    family = "no kernel"
    variants = ("numpy", "cupy", "torch")
    distributions = ("array-api-compat", "numpy", "cupy-cuda13x", "cupy-cuda12x", "torch")

    def modules(self):
        return (_TOOL[self.variant], "array_api_compat")

    def device(self):
        return "cpu" if self.variant == "numpy" else "cuda"

    def extra_for(self):
        return {"numpy": "cpu"}.get(self.variant, self.variant)

    def load(self):
        tool = importlib.import_module(_TOOL[self.variant])
        if self.variant == "torch":
            if not tool.cuda.is_available():
                raise Unavailable(f"torch {tool.__version__} sees no CUDA device")
            # Every GEMM in the lab accumulates in fp32: say so rather than rely on defaults.
            tool.backends.cuda.matmul.allow_tf32 = False
            tool.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
            tool.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        if self.variant == "cupy":
            if tool.cuda.runtime.getDeviceCount() < 1:
                raise Unavailable("cupy sees no CUDA device")
            # The same for CuPy's cuBLAS: no split-K reduction in the 16-bit output type (its default)
            from cupy_backends.cuda.libs import cublas
            cublas.setMathMode(tool.cuda.device.get_cublas_handle(), CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)
        return tool

    def supports(self, case):
        if case.dtype == "bfloat16" and self.variant == "numpy":
            return "NumPy has no bfloat16"
        if case.dtype == "bfloat16" and self.variant == "cupy" and _cupy_bfloat16() is None:
            return "this CuPy has no bfloat16 dtype"
        if (self.variant == "numpy" and case.dtype == "float16" and "K" in case.shape      # a product over K
                and math.prod(case.shape.values()) > NUMPY_FP16_MACS):
            return "NumPy's float16 matmul has no BLAS path (about 0.1 GFLOP/s)"
        if self.variant == "numpy" and {"S", "D"} <= case.shape.keys():
            b, h, seq, d = (case.shape[k] for k in ("B", "H", "S", "D"))
            if b * h * seq * seq * d > NUMPY_ATTENTION_MACS:
                return "NumPy's materialised attention on the CPU: tens of seconds a call at this size"
        return None

    def to_device(self, a, dtype):
        if self.variant == "numpy":
            return np.array(a, copy=True)
        if self.variant == "torch":
            return torch_to_device(a, dtype, "cuda")
        import cupy
        dev = cupy.asarray(a)
        return dev.view(_cupy_bfloat16()) if dtype == "bfloat16" else dev

    def to_host(self, x):
        if self.variant == "numpy":
            return np.asarray(x)
        if self.variant == "torch":
            return torch_to_host(x)
        return (x.view("uint16") if x.dtype == _cupy_bfloat16() else x).get()

    def overwrite(self, dst, host, dtype):
        if self.variant == "numpy":
            np.copyto(dst, host)
        elif self.variant == "torch":
            TorchArrays.overwrite(self, dst, host, dtype)
        else:
            cupy_overwrite(dst, host)

    def release(self):
        if self.variant == "torch":
            import torch
            torch.cuda.empty_cache()
        elif self.variant == "cupy":
            import cupy
            cupy.get_default_memory_pool().free_all_blocks()

    def stream(self, handle):
        if self.variant == "torch":
            return torch_stream(handle)
        if self.variant == "cupy":
            import cupy
            return cupy.cuda.Stream.from_external(StreamHandle(handle))
        return None

    def stream_context(self, stream):
        if self.variant == "torch":
            return torch_stream_context(stream)
        return stream if self.variant == "cupy" else contextlib.nullcontext()


@functools.lru_cache(maxsize=1)
def _cupy_bfloat16():
    """CuPy's bfloat16 dtype (through ml_dtypes), or None where this CuPy has none."""
    try:
        import cupy
        import ml_dtypes
        cupy.zeros(1, dtype=ml_dtypes.bfloat16).sum()
        return ml_dtypes.bfloat16
    except Exception:
        return None


BACKEND = ArrayAPI()
