"""cuDNN's graph API through its Python frontend (nvidia-cudnn-frontend, `import cudnn`): an operation
graph built once per case (SDPA, matmul), its execution plan chosen by cuDNN's heuristics, executed
on torch's current stream with its own workspace. A vendor row beside PyTorch's cuDNN path, which
reaches the same library through ATen. Arrays are torch tensors; cuDNN is the one PyTorch ships."""
from backends.base import Backend, TorchArrays, TorchStream, Unavailable, require_torch_cuda


class CudnnFrontend(TorchArrays, TorchStream, Backend):
    family = "no kernel"
    extra = "cudnn-frontend"
    distributions = ("nvidia-cudnn-frontend",)
    min_compute_capability = (8, 0)

    def modules(self):
        return ("torch", "cudnn")

    def load(self):
        import cudnn
        require_torch_cuda()
        try:
            cudnn.backend_version()
        except RuntimeError as e:             # the frontend imports without the library; it fails here
            raise Unavailable(f"cudnn-frontend finds no libcudnn: {e}") from e


BACKEND = CudnnFrontend()
