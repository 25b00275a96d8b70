"""PyTorch's scaled matrix multiply, torch.nn.functional.scaled_mm: cuBLASLt's FP8 GEMM with the
scaling it is given (tensorwise, or 1x128 tiles of A and 128x128 blocks of B, cuBLAS's block scaling
on sm_90 with CUDA 12.9 or later), fp32 accumulation (no fast accumulation). The vendor row the FP8
GEMM is judged against. Arrays are torch tensors on torch's current stream."""
from backends.base import Backend, TorchArrays, TorchCuda, TorchStream


class TorchScaledMm(TorchArrays, TorchStream, TorchCuda, Backend):
    family = "no kernel"
    extra = "torch"
    distributions = ("torch",)
    min_compute_capability = (9, 0)

    def modules(self):
        return ("torch",)


BACKEND = TorchScaledMm()
