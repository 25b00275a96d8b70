"""PyTorch's FlexAttention (torch.nn.attention.flex_attention): attention written as a score and mask
modification that torch.compile turns into one fused Triton kernel; causal through a BlockMask
(create_block_mask), as its docs and attn-gym's examples write it. Attention only; torch tensors on
torch's current stream. Variant `cpu`: the same file on CPU tensors, FlexAttention's CPU kernel
(CI runs it; small test cases only)."""
from backends.base import Backend, CompiledTorch, TorchArrays, TorchStream

CPU_WORK = 2**24          # multiply-adds of a test case the CPU variant takes


class FlexAttention(CompiledTorch, TorchArrays, TorchStream, Backend):
    family = "tile"
    extra = "torch"
    distributions = ("torch", "triton")
    variants = ("", "cpu")
    min_compute_capability = (8, 0)

    def modules(self):
        return ("torch.nn.attention.flex_attention", "triton")

    def supports(self, case):
        b, h, seq, d = (case.shape[k] for k in ("B", "H", "S", "D"))
        if self.variant == "cpu" and (case.kind != "test" or b * h * seq * seq * d > CPU_WORK):
            return "FlexAttention's CPU kernel here: small test cases only"
        return None

    def first_build_s(self, problem):
        return 20.0


BACKEND = FlexAttention()
