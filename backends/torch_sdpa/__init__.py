"""PyTorch's fused attention, torch.nn.functional.scaled_dot_product_attention, one CUDA backend a
variant (flash: FlashAttention-2; cudnn: cuDNN's fused attention; efficient: the memory-efficient
kernel), each pinned with torch.nn.attention.sdpa_kernel: the vendor rows attention is judged against
(the fastest that takes a case is 100%). Arrays are torch tensors on torch's current stream."""
from backends.base import Backend, TorchArrays, TorchStream, Unavailable


class TorchSdpa(TorchArrays, TorchStream, Backend):
    family = "no kernel"
    variants = ("flash", "cudnn", "efficient")
    extra = "torch"
    distributions = ("torch",)
    min_compute_capability = (8, 0)

    def modules(self):
        return ("torch",)

    def load(self):
        import torch
        if not torch.cuda.is_available():
            raise Unavailable(f"torch {torch.__version__} sees no CUDA device")


BACKEND = TorchSdpa()
