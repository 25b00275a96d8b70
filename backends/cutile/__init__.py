"""cuTile (cuda-tile): tile kernels in Python compiled by tileiras to TMA / tensor-core code;
arrays are torch tensors, launched on the lab's stream (cuTile takes a raw handle).

cuTile needs tileiras with the ptxas and libNVVM of the same CUDA release (13.4 here). Those must
not become the NVVM that numba-cuda and the others load (a CUDA 13.0 driver cannot JIT their PTX),
so they may live in a site of their own: WAYS_CUTILE_SITE names it, and only cuTile's workers get
it on their PYTHONPATH and PATH."""
import os

from backends.base import Backend, Unavailable, torch_to_device, torch_to_host

SITE_VAR = "WAYS_CUTILE_SITE"


class CuTile(Backend):
    extra = "cutile"
    distributions = ("cuda-tile", "nvidia-cuda-tileiras", "nvidia-cuda-nvcc", "nvidia-nvvm", "torch")
    min_compute_capability = (8, 0)

    def modules(self, variant):
        return ("cuda.tile", "torch")

    def search_paths(self, variant):
        site = os.environ.get(SITE_VAR)
        return {"PYTHONPATH": site, "PATH": os.path.join(site, "nvidia", "cu13", "bin")} if site else {}

    def load(self, variant):
        import torch
        if not torch.cuda.is_available():
            raise Unavailable(f"torch {torch.__version__} sees no CUDA device")

    def to_device(self, a, dtype, variant):
        return torch_to_device(a, dtype, "cuda")

    def to_host(self, x, variant):
        return torch_to_host(x)

    def stream(self, handle, variant):
        return handle or 0           # ct.launch takes a raw CUstream; 0 is the legacy default stream


def compile_on_scratch(stream, grid, kernel, args):
    """cuTile compiles at the first launch: launch once in build, writing a scratch output of the
    same shape and alignment (so the same specialization), and leave the real outputs poisoned."""
    import cuda.tile as ct
    ct.launch(stream, grid, kernel, args)


BACKEND = CuTile()
