"""C = scaled_mm(A, B^T) with A's 1x128 scales and B's 128x128 ones (or one scale each), as cuBLASLt
takes them (its block-scaling rules, which PyTorch's own tests follow): A's scales outer-dim-major,
B's K blocks padded to a multiple of 4 and given K-major, M a multiple of 4 and N of 16 (a case
that is not is padded with zero rows, and C cut back)."""
import torch
import torch.nn.functional as F

M_MULTIPLE, N_MULTIPLE, K_BLOCKS_MULTIPLE = 4, 16, 4


def padded_rows(x, multiple):
    """x (rows, ...) with zero rows added up to a multiple of `multiple` (x itself where it is one)."""
    extra = -x.shape[0] % multiple
    return F.pad(x, (0, 0, 0, extra)) if extra else x


def build(case, inputs, outputs, stream, variant=""):
    a, b, a_scale, b_scale = inputs["a"], inputs["b"], inputs["a_scale"], inputs["b_scale"]
    m, n = case.shape["M"], case.shape["N"]
    if case.shape["blockwise"]:
        recipes = (F.ScalingType.BlockWise1x128, F.ScalingType.BlockWise128x128)
    else:
        recipes = (F.ScalingType.TensorWise, F.ScalingType.TensorWise)

    def scales():
        if not case.shape["blockwise"]:
            return a_scale.reshape(()), b_scale.reshape(())
        a_s = padded_rows(a_scale, M_MULTIPLE).t().contiguous().t()
        b_s = F.pad(b_scale, (0, -b_scale.shape[1] % K_BLOCKS_MULTIPLE))
        return a_s, b_s.t()

    def run():
        a8 = padded_rows(a, M_MULTIPLE).view(torch.float8_e4m3fn)       # the bits: padded as uint8
        b8 = padded_rows(b, N_MULTIPLE).view(torch.float8_e4m3fn)
        a_s, b_s = scales()
        c = F.scaled_mm(a8, b8.t(), a_s, recipes[0], b_s, recipes[1], output_dtype=torch.bfloat16)
        return {"c": c[:m, :n]}

    return run
