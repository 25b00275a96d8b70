"""PyTorch's FlexAttention (torch.nn.attention.flex_attention): attention written as a score and mask
modification that torch.compile turns into one fused Triton kernel; causal through a BlockMask
(create_block_mask), as its docs and attn-gym's examples write it. Attention only; torch tensors on
torch's current stream."""
from backends.base import Backend, TorchArrays, TorchStream, Unavailable


RECOMPILE_LIMIT = 64


class FlexAttention(TorchArrays, TorchStream, Backend):
    family = "tile"
    extra = "torch"
    distributions = ("torch", "triton")
    min_compute_capability = (8, 0)

    def modules(self):
        return ("torch.nn.attention.flex_attention", "triton")

    def load(self):
        import torch
        if not torch.cuda.is_available():
            raise Unavailable(f"torch {torch.__version__} sees no CUDA device")
        # one graph a case (dynamic=False): a worker compiles one function for more cases than
        # Dynamo's default of 8 recompiles, after which fullgraph=True fails the build
        torch._dynamo.config.recompile_limit = RECOMPILE_LIMIT

    def first_build_s(self, problem):
        return 20.0


BACKEND = FlexAttention()
