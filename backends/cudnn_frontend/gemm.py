"""C = A @ B as cuDNN's matmul graph (a batch of one: the backend builds no 2-D matmul), fp32 compute;
heuristics A, then the fallback."""
import cudnn
import torch

DTYPES = {"bfloat16": cudnn.data_type.BFLOAT16, "float16": cudnn.data_type.HALF}


def supports(case, variant=""):
    return None if case.dtype in DTYPES else f"not written for {case.dtype}: cuDNN's matmul graph here is fp16 / bf16"


def build(case, inputs, outputs, stream, variant=""):
    a_t, b_t, c_t = inputs["a"].unsqueeze(0), inputs["b"].unsqueeze(0), outputs["c"].unsqueeze(0)
    handle = cudnn.create_handle()
    cudnn.set_stream(handle, torch.cuda.current_stream().cuda_stream)
    graph = cudnn.pygraph(io_data_type=DTYPES[case.dtype], intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT, handle=handle)
    a, b = graph.tensor_like(a_t), graph.tensor_like(b_t)
    c = graph.matmul(name="matmul", A=a, B=b, compute_data_type=cudnn.data_type.FLOAT)
    c.set_output(True).set_data_type(DTYPES[case.dtype])
    graph.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    workspace = torch.empty(graph.get_workspace_size(), device="cuda", dtype=torch.uint8)
    pack = {a: a_t, b: b_t, c: c_t}

    def run():
        graph.execute(pack, workspace, handle=handle)

    return run
