"""Array-API libraries as "no kernel at all": NumPy (CPU), CuPy and PyTorch through array-api-compat."""
import contextlib
import functools
import importlib

import numpy as np

from backends.base import (Backend, StreamHandle, Unavailable, TorchArrays, cupy_overwrite, torch_stream,
                           torch_stream_context, torch_to_device, torch_to_host)

_TOOL = {"numpy": "numpy", "cupy": "cupy", "torch": "torch"}


class ArrayAPI(Backend):
    family = "no kernel"
    variants = ("numpy", "cupy", "torch")
    distributions = ("array-api-compat", "numpy", "cupy-cuda13x", "cupy-cuda12x", "torch")

    def modules(self, variant):
        return (_TOOL[variant], "array_api_compat")

    def device(self, variant):
        return "cpu" if variant == "numpy" else "cuda"

    def extra_for(self, variant):
        return {"numpy": "cpu"}.get(variant, variant)

    def load(self, variant):
        tool = importlib.import_module(_TOOL[variant])
        if variant == "torch":
            if not tool.cuda.is_available():
                raise Unavailable(f"torch {tool.__version__} sees no CUDA device")
            # Every GEMM in the lab accumulates in fp32: say so rather than rely on defaults.
            tool.backends.cuda.matmul.allow_tf32 = False
            tool.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
            tool.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        if variant == "cupy" and tool.cuda.runtime.getDeviceCount() < 1:
            raise Unavailable("cupy sees no CUDA device")
        return tool

    def supports(self, problem, case, variant):
        if case.dtype == "bfloat16" and variant == "numpy":
            return "NumPy has no bfloat16"
        if case.dtype == "bfloat16" and variant == "cupy" and _cupy_bfloat16() is None:
            return "this CuPy has no bfloat16 dtype"
        if (variant == "numpy" and problem == "gemm" and case.dtype == "float16"
                and case.shape["M"] * case.shape["N"] * case.shape["K"] > 2**25):
            return "NumPy's float16 matmul has no BLAS path (about 0.1 GFLOP/s)"
        return None

    def to_device(self, a, dtype, variant):
        if variant == "numpy":
            return np.array(a, copy=True)
        if variant == "torch":
            return torch_to_device(a, dtype, "cuda")
        import cupy
        dev = cupy.asarray(a)
        return dev.view(_cupy_bfloat16()) if dtype == "bfloat16" else dev

    def to_host(self, x, variant):
        if variant == "numpy":
            return np.asarray(x)
        if variant == "torch":
            return torch_to_host(x)
        return (x.view("uint16") if x.dtype == _cupy_bfloat16() else x).get()

    def overwrite(self, dst, host, dtype, variant):
        if variant == "numpy":
            np.copyto(dst, host)
        elif variant == "torch":
            TorchArrays.overwrite(self, dst, host, dtype, variant)
        else:
            cupy_overwrite(dst, host)

    def release(self, variant):
        if variant == "torch":
            import torch
            torch.cuda.empty_cache()
        elif variant == "cupy":
            import cupy
            cupy.get_default_memory_pool().free_all_blocks()

    def stream(self, handle, variant):
        if variant == "torch":
            return torch_stream(handle)
        if variant == "cupy":
            import cupy
            return cupy.cuda.Stream.from_external(StreamHandle(handle))
        return None

    def stream_context(self, stream, variant):
        if variant == "torch":
            return torch_stream_context(stream)
        return stream if variant == "cupy" else contextlib.nullcontext()


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
