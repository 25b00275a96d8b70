"""O = softmax(Q K^T / sqrt(D)) V as cuDNN's SDPA graph, inference (no softmax stats), causal as a
diagonal band from the top left; heuristics A, then the fallback."""
import math

import cudnn
import torch

DTYPES = {"bfloat16": cudnn.data_type.BFLOAT16, "float16": cudnn.data_type.HALF}
MAX_HEAD_DIM, HEAD_DIM_MULTIPLE = 256, 8


def supports(case, variant=""):
    d = case.shape["D"]
    if case.dtype not in DTYPES or d > MAX_HEAD_DIM or d % HEAD_DIM_MULTIPLE:
        return f"cuDNN's SDPA takes fp16 / bf16 with a head dim a multiple of 8 up to 256 (got {case.dtype}, D={d})"
    return None


def build(case, inputs, outputs, stream, variant=""):
    q_t, k_t, v_t, o_t = inputs["q"], inputs["k"], inputs["v"], outputs["o"]
    handle = cudnn.create_handle()
    cudnn.set_stream(handle, torch.cuda.current_stream().cuda_stream)
    graph = cudnn.pygraph(io_data_type=DTYPES[case.dtype], intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT, handle=handle)
    q, k, v = graph.tensor_like(q_t), graph.tensor_like(k_t), graph.tensor_like(v_t)
    mask = dict(diagonal_alignment=cudnn.diagonal_alignment.TOP_LEFT,
                diagonal_band_right_bound=0) if case.shape["causal"] else {}
    o, _ = graph.sdpa(name="sdpa", q=q, k=k, v=v, generate_stats=False,
                      attn_scale=1.0 / math.sqrt(case.shape["D"]), **mask)
    o.set_output(True).set_dim(list(o_t.shape)).set_stride(list(o_t.stride()))
    graph.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    workspace = torch.empty(graph.get_workspace_size(), device="cuda", dtype=torch.uint8)
    pack = {q: q_t, k: k_t, v: v_t, o: o_t}

    def run():
        graph.execute(pack, workspace, handle=handle)

    return run
