"""Array-API libraries as "no kernel at all": NumPy (CPU), CuPy, PyTorch, JAX and Dask through
array-api-compat. Each problem's file is one function of the case's arrays written with the
standard's functions only; `library_call` makes it a run():
- numpy, cupy, torch: the function called on the lab's arrays (NumPy's on the host).
- jax: jitted and compiled once in build(); the lab's arrays are torch tensors handed to it by DLPack
  on every call (zero-copy, JAX's stream waiting for the lab's), the result handed back the same way.
- dask: dask.array over CuPy chunks (NumPy's without a GPU) of about CHUNK_BYTES each; every call wraps
  the lab's arrays, builds the graph and computes it (Dask copies NumPy chunks into its graph, so a
  graph built once would not see the inputs change). On a GPU the synchronous scheduler runs the
  chunks' kernels in the calling thread, on the lab's stream (CuPy's current stream is per thread).
JAX and Dask run on the GPU where there is one, else on the CPU (as CI runs them)."""
import contextlib
import functools
import importlib
import math
import os

import numpy as np

import problems
from backends import gpus
from backends.base import (Backend, StreamHandle, TorchArrays, Unavailable, cupy_overwrite, torch_stream,
                           torch_stream_context, torch_to_device, torch_to_host)

_TOOL = {"numpy": "numpy", "cupy": "cupy", "torch": "torch", "jax": "jax", "dask": "dask"}
CHUNK_BYTES = 256 * 2**20      # Dask's chunks: large enough that one GPU kernel per chunk fills the GPU
NUMPY_FP16_MACS = 2**25      # beyond it a NumPy float16 product takes minutes
# beyond it NumPy's materialised attention takes tens of seconds a call (30 s at 4x32x4096x128 on the
# H100 node's CPU: two float32 products of B*H*S*S*D each, and the S*S scores written out in between)
NUMPY_ATTENTION_MACS = 2**32
CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16      # cublasMath_t (cublas_api.h); CuPy has no name for it


class ArrayAPI(Backend):
    family = "no kernel"
    variants = ("numpy", "cupy", "torch", "jax", "dask")
    distributions = ("array-api-compat", "numpy", "cupy-cuda13x", "cupy-cuda12x", "torch", "jax", "jaxlib", "dask")
    cache_vars = {"JAX_COMPILATION_CACHE_DIR": "jax"}   # noqa: RUF012  JAX's persistent compilation cache

    def modules(self):
        stored_in = (self.storage(),) if self.storage() != self.variant else ()
        return (_TOOL[self.variant], "array_api_compat", *stored_in)

    def device(self):
        if self.variant in ("jax", "dask"):
            return "cuda" if gpus.gpus() else "cpu"
        return "cpu" if self.variant == "numpy" else "cuda"

    def storage(self) -> str:
        """The library that holds the lab's arrays: the variant's own, torch's for JAX (its arrays are
        immutable), CuPy's or NumPy's for Dask's chunks."""
        if self.variant == "jax":
            return "torch"
        if self.variant == "dask":
            return "cupy" if self.device() == "cuda" else "numpy"
        return self.variant

    def extra_for(self):
        jax = "pallas" if self.device() == "cuda" else "pallas-cpu"
        return {"numpy": "cpu", "jax": jax, "dask": "dask"}.get(self.variant, self.variant)

    def load(self):
        if self.variant == "jax":
            # before jax is imported: XLA must not take 75% of the GPU (torch holds the lab's arrays),
            # and every compiled function goes to the persistent cache (warm compile times)
            os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
            os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
            if self.device() == "cpu":
                os.environ.setdefault("JAX_PLATFORMS", "cpu")
        tool = importlib.import_module(_TOOL[self.variant])
        if self.variant == "jax":
            # float32 products in float32 (XLA's default on a GPU is TF32), as every GEMM in the lab
            tool.config.update("jax_default_matmul_precision", "highest")
            if self.device() == "cuda":
                try:
                    tool.devices("gpu")
                except RuntimeError as exc:
                    raise Unavailable(f"jax {tool.__version__} sees no GPU: {exc}") from None
        if self.variant == "dask":
            import dask.array  # noqa: F401  (dask.array registers itself with array-api-compat)
            tool.config.set({"array.chunk-size": f"{CHUNK_BYTES // 2**20}MiB"})
        if self.storage() != self.variant and self.device() == "cuda":
            tool = importlib.import_module(self.storage())
        if self.storage() == "torch" and self.device() == "cuda":
            if not tool.cuda.is_available():
                raise Unavailable(f"torch {tool.__version__} sees no CUDA device")
            # Every GEMM in the lab accumulates in fp32: say so rather than rely on defaults.
            tool.backends.cuda.matmul.allow_tf32 = False
            tool.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
            tool.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        if self.storage() == "cupy":
            if tool.cuda.runtime.getDeviceCount() < 1:
                raise Unavailable("cupy sees no CUDA device")
            # The same for CuPy's cuBLAS: no split-K reduction in the 16-bit output type (its default)
            from cupy_backends.cuda.libs import cublas
            cublas.setMathMode(tool.cuda.device.get_cublas_handle(), CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)
        return tool

    def supports(self, case):
        if case.dtype == "bfloat16" and self.storage() == "numpy":
            return "NumPy has no bfloat16"
        if case.dtype == "bfloat16" and self.storage() == "cupy" and _cupy_bfloat16() is None:
            return "this CuPy has no bfloat16 dtype"
        if (self.storage() == "numpy" and case.dtype == "float16" and "K" in case.shape      # a product over K
                and math.prod(case.shape.values()) > NUMPY_FP16_MACS):
            return "NumPy's float16 matmul has no BLAS path (about 0.1 GFLOP/s)"
        if self.device() == "cpu" and {"S", "D"} <= case.shape.keys():
            b, h, seq, d = (case.shape[k] for k in ("B", "H", "S", "D"))
            if b * h * seq * seq * d > NUMPY_ATTENTION_MACS:
                library = {"numpy": "NumPy", "jax": "JAX", "dask": "Dask"}[self.variant]
                return f"{library}'s materialised attention on the CPU: tens of seconds a call at this size"
        return None

    def workspace_bytes(self, problem, case):
        """A library's temporaries: for attention the float32 S matrix three times over (S, its
        exponent, P), for the others about the case's own arrays again."""
        if problem == "attention":
            b, h, n = (case.shape[d] for d in ("B", "H", "S"))
            return 3 * b * h * n * n * 4
        return problems.get(problem).footprint(case)

    def known_cause(self, problem, case):
        if problem == "scan" and self.storage() == "numpy" and case.dtype == "float32":
            return "the library's float32 sequential sum"       # np.cumsum: one running float32 sum
        if (problem == "gemm" and self.variant == "jax" and self.device() == "cuda" and case.dtype == "bfloat16"
                and case.shape["M"] == 1):
            return "XLA's one-row product multiplies in bfloat16"     # experiments/jax_gemv
        return ""

    def to_device(self, a, dtype):
        if self.storage() == "numpy":
            return np.array(a, copy=True)
        if self.storage() == "torch":
            return torch_to_device(a, dtype, self.device())
        import cupy
        dev = cupy.asarray(a)
        return dev.view(_cupy_bfloat16()) if dtype == "bfloat16" else dev

    def to_host(self, x):
        if self.storage() == "numpy":
            return np.asarray(x)
        if self.storage() == "torch":
            return torch_to_host(x)
        return (x.view("uint16") if x.dtype == _cupy_bfloat16() else x).get()

    def overwrite(self, dst, host, dtype):
        if self.storage() == "numpy":
            np.copyto(dst, host)
        elif self.storage() == "torch":
            TorchArrays.overwrite(self, dst, host, dtype)
        else:
            cupy_overwrite(dst, host)

    def release(self):
        if self.device() == "cpu":
            return
        if self.storage() == "torch":
            import torch
            torch.cuda.empty_cache()
        elif self.storage() == "cupy":
            import cupy
            cupy.get_default_memory_pool().free_all_blocks()

    def stream(self, handle):
        if handle is None:
            return None
        if self.storage() == "torch":
            return torch_stream(handle)
        if self.storage() == "cupy":
            import cupy
            return cupy.cuda.Stream.from_external(StreamHandle(handle))
        return None

    def stream_context(self, stream):
        if stream is None:
            return contextlib.nullcontext()
        return torch_stream_context(stream) if self.storage() == "torch" else stream


def library_call(fn, inputs: dict, variant: str):
    """run() for `fn`, a function of the case's inputs (keyword arguments) returning {name: array},
    on the variant's library (see the module's docstring)."""
    arrays = {k: v for k, v in inputs.items() if hasattr(v, "shape")}
    fn = functools.partial(fn, **{k: v for k, v in inputs.items() if k not in arrays})   # scalars: constants
    if variant == "jax":
        import jax
        import torch

        def as_jax():
            return {k: jax.dlpack.from_dlpack(v) for k, v in arrays.items()}

        compiled = jax.jit(fn).lower(**as_jax()).compile()
        return lambda: {k: torch.from_dlpack(v) for k, v in compiled(**as_jax()).items()}
    if variant == "dask":
        import dask
        import dask.array as da
        on_gpu = not isinstance(next(iter(arrays.values())), np.ndarray)
        scheduler = "synchronous" if on_gpu else "threads"
        # name=False: no token hashed from the data (for CuPy arrays, a copy to the host every call)
        return lambda: dask.compute(fn(**{k: da.from_array(v, chunks="auto", name=False) for k, v in arrays.items()}),
                                    scheduler=scheduler)[0]
    return lambda: fn(**arrays)


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
