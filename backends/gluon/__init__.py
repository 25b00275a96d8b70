"""Triton's Gluon: the language under Triton's tiles, where a kernel states its own layouts, shared
memory, mbarriers, TMA copies and warpgroup MMAs (triton.experimental.gluon; Hopper, sm_90a). Arrays
are torch tensors on torch's current stream, as Triton's. Gluon has no interpreter: without a GPU
(CI) each test case is compiled ahead of time for sm_90a instead (`export`)."""
from backends.base import Backend, TorchArrays, TorchCuda, TorchStream


class Gluon(TorchArrays, TorchStream, TorchCuda, Backend):
    family = "tile"
    extra = "triton"
    distributions = ("triton", "torch")
    min_compute_capability = (9, 0)     # wgmma and TMA
    aot_target = "sm_90a"
    variants = ("", "persistent", "overlap")
    variant_problems = {"persistent": ("gemm",), "overlap": ("gemm_fp8",)}   # noqa: RUF012

    def modules(self):
        return ("triton", "torch")


def cubin(kernel, args: dict, constexprs: dict, num_warps: int, target: str) -> bytes:
    """`kernel` compiled for `target` (e.g. sm_90a) without a GPU, for arguments like `args` (CPU tensors,
    descriptors, numbers: their types make the signature) and the constexprs given."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type
    signature = {**{name: mangle_type(a) for name, a in args.items()}, **{name: "constexpr" for name in constexprs}}
    source = GluonASTSource(kernel, signature, constexprs)
    arch = int(target.removeprefix("sm_").rstrip("a"))
    return triton.compile(source, target=GPUTarget("cuda", arch, 32), options={"num_warps": num_warps}).asm["cubin"]


BACKEND = Gluon()
