"""TileLang (tile-ai): tile programs in a Python DSL on TVM, lowered to CUDA C++ (TMA, wgmma on Hopper)
and built with nvcc; torch tensors, launched on torch's current stream (the lab's, through
stream_context).

TileLang 0.1.15 needs apache-tvm-ffi < 0.1.13 (the cute extra pins >= 0.1.15) and an nvcc whose NVVM
and crt are of the same CUDA release as the driver's (13.0 here: pip would take newer ones). So it may
live in a site of its own, `tilelang-site` in the environment's prefix (`make` installs it there) or
where WAYS_TILELANG_SITE names it, and only TileLang's workers get it on their
PYTHONPATH and PATH (as cuTile's site). Without a GPU, each test case is still compiled for sm_90a."""
import os

from backends.base import Backend, TorchArrays, TorchCuda, TorchStream, compiling

def target(arch: str | None = None) -> dict:
    """TileLang's target for `arch` ("sm_90a"), or for the current device (sm_90 needs the "a" for wgmma)."""
    if arch is None:
        import torch
        major, minor = torch.cuda.get_device_capability()
        arch = f"sm_{major}{minor}{'a' if major == 9 else ''}"
    return {"kind": "cuda", "arch": arch}


def compile_program(program, arch: str | None = None, pass_configs: dict | None = None):
    """`program` built for `arch`; `pass_configs`: TileLang's compile options (an implementation file's
    PASS_CONFIGS, its export's too)."""
    import tilelang
    with compiling():          # TVM's codegen and nvcc on the CPU: another worker may time meanwhile
        return tilelang.compile(program, target=target(arch), pass_configs=pass_configs)


class TileLang(TorchArrays, TorchStream, TorchCuda, Backend):
    family = "tile"
    site_var = "WAYS_TILELANG_SITE"     # its compiler's own site (see above), by default the environment's
    site_default = "tilelang-site"
    site_requirements = "requirements/tilelang-site.txt"
    extra = "tilelang"
    aot_target = "sm_90a"
    distributions = ("tilelang", "apache-tvm-ffi", "nvidia-cuda-nvcc", "torch")
    min_compute_capability = (8, 0)
    cache_vars = {"TILELANG_CACHE_DIR": "tilelang"}   # noqa: RUF012  its kernel cache
    variants = ("", "m128")
    variant_problems = {"m128": ("gemm_fp8",)}        # noqa: RUF012  the DeepGEMM example's first 128-row tile

    def modules(self):
        return ("tilelang", "torch")

    def aot_modules(self):
        return ("tilelang",)

    def export(self, problem, case):
        """The case's kernel compiled ahead of time for aot_target: the shared library TileLang builds
        (nvcc: the kernel's cubin and its host launcher)."""
        import tempfile

        from backends import implementation
        module = implementation(self.name, problem)
        program = module.program(case, self.variant) if self.variant else module.program(case)
        kernel = compile_program(program, self.aot_target, getattr(module, "PASS_CONFIGS", None))
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kernel.so")
            kernel.export_library(path)
            with open(path, "rb") as f:
                return f.read()



BACKEND = TileLang()
