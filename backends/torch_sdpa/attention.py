"""O = scaled_dot_product_attention(Q, K, V, is_causal) with one SDPA backend forced (the variant)."""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

KERNELS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
           "efficient": SDPBackend.EFFICIENT_ATTENTION}
CAN_USE = {"flash": torch.backends.cuda.can_use_flash_attention, "cudnn": torch.backends.cuda.can_use_cudnn_attention,
           "efficient": torch.backends.cuda.can_use_efficient_attention}
PROBE_SEQ = 128      # the kernels' rules depend on dtype, head_dim, mask and GPU, not on the length


def supports(case, variant=""):
    probe = torch.empty(1, 1, min(case.shape["S"], PROBE_SEQ), case.shape["D"], dtype=getattr(torch, case.dtype),
                        device="cuda")
    params = torch.backends.cuda.SDPAParams(probe, probe, probe, None, 0.0, bool(case.shape["causal"]), False)
    return None if CAN_USE[variant](params) else f"torch {torch.__version__}: no {variant} kernel for this case"


def build(case, inputs, outputs, stream, variant=""):
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    causal = bool(case.shape["causal"])

    def run():
        with sdpa_kernel(KERNELS[variant]):
            return {"o": F.scaled_dot_product_attention(q, k, v, is_causal=causal)}

    return run
