"""Triton: block-level programs in Python; arrays are torch tensors, launched on torch's current
stream. Under TRITON_INTERPRET=1 (CI, no GPU) the interpreter runs the small fp32/fp16 test cases
on CPU tensors."""
import math
import os

from backends.base import Backend, TorchArrays, TorchStream, require_torch_cuda

INTERPRETED_WORK = 2**27        # the interpreter runs blocks as NumPy on the CPU: keep it small


def interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


class Triton(TorchArrays, TorchStream, Backend):
    family = "tile"
    extra = "triton"
    distributions = ("triton", "torch")
    variants = ("", "tma")
    variant_problems = {"tma": ("gemm_fp8",)}   # noqa: RUF012

    def modules(self):
        return ("triton", "torch")

    def device(self):
        return "cpu" if interpreted() else "cuda"

    def load(self):
        if not interpreted():
            require_torch_cuda()

    def supports(self, case):
        if not interpreted():
            return None
        if case.dtype == "float8_e4m3":      # its C is bfloat16
            return ("Triton interpreter: it rounds float32 to bfloat16 toward zero (a GPU to nearest); "
                    "tests/test_gemm_fp8.py checks the FP8 kernel's float32 sums there")
        if case.kind != "test" or case.dtype == "bfloat16" or math.prod(case.shape.values()) > INTERPRETED_WORK:
            return "Triton interpreter: small fp32/fp16 test cases only (it mishandles bf16 tl.dot)"
        return None



BACKEND = Triton()
