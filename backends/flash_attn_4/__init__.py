"""FlashAttention 4 (the flash-attn-4 wheel, `flash_attn.cute`): Tri Dao's attention kernels written in
the CuTe DSL, called through the library's own `flash_attn_func`, which picks the kernel for the GPU
(FlashAttentionForwardSm90 on Hopper), compiles it once per shape and keeps it for later calls. A
library row beside the lab's own `cute_dsl` attention: someone already wrote it in the same tool.
Arrays are torch tensors on torch's current stream."""
from backends.base import Backend, TorchArrays, TorchCuda, TorchStream


class FlashAttn4(TorchArrays, TorchStream, TorchCuda, Backend):
    family = "no kernel"
    extra = "flash-attn-4"
    distributions = ("flash-attn-4", "quack-kernels", "nvidia-cutlass-dsl", "torch")
    min_compute_capability = (8, 0)

    def modules(self):
        return ("flash_attn.cute", "torch")

    def first_build_s(self, problem):
        return 20.0             # a CuTe DSL compile of the forward kernel per shape family


BACKEND = FlashAttn4()
