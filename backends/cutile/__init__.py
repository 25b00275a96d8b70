"""cuTile (cuda-tile): tile kernels in Python compiled by tileiras to TMA / tensor-core code;
arrays are torch tensors, launched on the lab's stream (cuTile takes a raw handle).

cuTile needs tileiras with the ptxas and libNVVM of the same CUDA release (13.4 here). Those must
not become the NVVM that numba-cuda and the others load (a CUDA 13.0 driver cannot JIT their PTX),
so they may live in a site of their own: WAYS_CUTILE_SITE names it, and only cuTile's workers get
it on their PYTHONPATH and PATH.

Variant "tf32x3" (GEMM): float32 as three TF32 tensor-core products (backends/cutile/gemm.py)."""

from backends.base import Backend, TorchArrays, TorchCuda
from problems.base import DTYPES

class CuTile(TorchArrays, TorchCuda, Backend):
    family = "tile"
    site_var = "WAYS_CUTILE_SITE"     # its compiler's own site (see above)
    extra = "cutile"
    aot_target = "sm_90"          # without a GPU (CI) each test case is still compiled, for the H100
    distributions = ("cuda-tile", "nvidia-cuda-tileiras", "nvidia-cuda-nvcc", "nvidia-nvvm", "torch")
    min_compute_capability = (8, 0)

    def modules(self):
        return ("cuda.tile", "torch")

    variants = ("", "tf32x3")
    variant_problems = {"tf32x3": ("gemm",)}   # noqa: RUF012

    def supports(self, case):
        if self.variant == "tf32x3" and case.dtype != "float32":
            return "tf32x3 is a float32 product; 16-bit inputs take the default kernel"
        return None

    def stream(self, handle):
        return handle or 0           # ct.launch takes a raw CUstream; 0 is the legacy default stream


def cubin(kernel, params: list, gpu_code: str) -> bytes:
    """`kernel` compiled ahead of time for `gpu_code` (e.g. "sm_90") with these parameters."""
    import io

    from cuda.tile.compilation import CallingConvention, KernelSignature, export_kernel
    out = io.BytesIO()
    export_kernel(kernel, [KernelSignature(params, CallingConvention.cutile_python_v1())], out,
                  gpu_code=gpu_code, output_format="cubin")
    return out.getvalue()


def compile_on_scratch(stream, grid, kernel, args):
    """cuTile compiles at the first launch: launch once in build, writing a scratch output of the
    same shape and alignment (so the same specialization), and leave the real outputs poisoned."""
    import cuda.tile as ct
    ct.launch(stream, grid, kernel, args)


def torch_stream(stream, device):
    """torch's handle of the raw stream ct.launch takes (0: the legacy default stream), for torch work
    between a kernel's launches."""
    import torch
    return torch.cuda.ExternalStream(stream) if stream else torch.cuda.default_stream(device)


def array_param(dtype: str, shape: tuple[int, ...]):
    """A contiguous row-major array of this shape, with the facts cuTile's JIT infers from a real one
    (16-byte aligned base; which strides and extents divide by 16 bytes / 16 elements)."""
    import cuda.tile as ct
    import numpy as np
    from cuda.tile.compilation import ArrayConstraint
    itemsize = DTYPES[dtype].itemsize if dtype in DTYPES else np.dtype(dtype).itemsize    # (int64: state words)
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    per_16_bytes = 16 // itemsize
    return ArrayConstraint(getattr(ct, dtype), len(shape), index_dtype=ct.int32, stride_lower_bound_incl=0,
                           alias_groups=(), may_alias_internally=False,
                           stride_constant=(None,) * (len(shape) - 1) + (1,),
                           stride_divisible_by=tuple(per_16_bytes if s % per_16_bytes == 0 else 1 for s in strides),
                           shape_divisible_by=tuple(16 if n % 16 == 0 else 1 for n in shape),
                           base_addr_divisible_by=16)


BACKEND = CuTile()

