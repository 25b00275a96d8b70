"""PyTorch's fused attention, torch.nn.functional.scaled_dot_product_attention, one CUDA backend a
variant (flash: FlashAttention-2; cudnn: cuDNN's fused attention; efficient: the memory-efficient
kernel), each pinned with torch.nn.attention.sdpa_kernel: the vendor rows attention is judged against
(the fastest that takes a case is 100%). Arrays are torch tensors on torch's current stream."""
from backends.base import Backend, TorchArrays, TorchCuda, TorchStream


class TorchSdpa(TorchArrays, TorchStream, TorchCuda, Backend):
    family = "no kernel"
    variants = ("flash", "cudnn", "efficient")
    extra = "torch"
    distributions = ("torch",)
    min_compute_capability = (8, 0)

    def modules(self):
        return ("torch",)


BACKEND = TorchSdpa()
