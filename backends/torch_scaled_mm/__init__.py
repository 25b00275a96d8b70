"""PyTorch's scaled matrix multiply, torch.nn.functional.scaled_mm: cuBLASLt's FP8 GEMM with the
scaling it is given (tensorwise, or 1x128 tiles of A and 128x128 blocks of B, cuBLAS's block scaling
on sm_90 with CUDA 12.9 or later), fp32 accumulation (no fast accumulation). The vendor row the FP8
GEMM is judged against. Arrays are torch tensors on torch's current stream."""
from backends.base import Backend, TorchArrays, TorchStream, Unavailable


class TorchScaledMm(TorchArrays, TorchStream, Backend):
    family = "no kernel"
    extra = "torch"
    distributions = ("torch",)
    min_compute_capability = (9, 0)

    def modules(self):
        return ("torch",)

    def load(self):
        import torch
        if not torch.cuda.is_available():
            raise Unavailable(f"torch {torch.__version__} sees no CUDA device")


BACKEND = TorchScaledMm()
