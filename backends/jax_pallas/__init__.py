"""JAX Pallas on GPU: kernels written with `pl.pallas_call`, compiled by XLA. Two lowerings: the
default variant is Pallas's Triton lowering (jaxlib's own Triton, not the `triton` package;
deprecated since JAX 0.11.2 in favour of Mosaic GPU); `mosaic_gpu` writes the kernels with
`jax.experimental.pallas.mosaic_gpu` (warpgroup programs, TMA, wgmma; Hopper and newer).

JAX arrays are immutable and XLA launches on streams of its own, so the lab's arrays are torch
tensors (the `TorchArrays` mixin) and every run() hands them to the jitted kernel through DLPack
(zero-copy): JAX's side makes its stream wait for torch's current stream (the lab's, through
`stream_context`), and the result comes back with `torch.from_dlpack`, which makes the lab's stream
wait for the kernel. run() returns that output (a buffer XLA allocated) instead of writing the
poisoned one, as the array-API rows do. Without a GPU, WAYS_PALLAS_INTERPRET=1 runs the small test
cases through Pallas's interpreters on the CPU (Triton lowering: `interpret=True`; Mosaic GPU:
`plgpu.InterpretGPUParams()`, which simulates SMEM, barriers and TMA)."""
import math
import os

from backends.base import Backend, TorchArrays, TorchStream, Unavailable

INTERPRETED_WORK = 2**30       # the interpreters run the grid as XLA ops on the CPU: GEMM 1000^3 in seconds


def interpreted() -> bool:
    return os.environ.get("WAYS_PALLAS_INTERPRET", "0") == "1"


def interpret_param(variant: str):
    """What pallas_call's `interpret` takes for the variant: False on a GPU."""
    if not interpreted():
        return False
    if variant == "mosaic_gpu":
        from jax.experimental.pallas import mosaic_gpu as plgpu
        if hasattr(plgpu, "InterpretGPUParams"):          # public from JAX 0.11
            return plgpu.InterpretGPUParams()
        from jax._src.pallas.mosaic_gpu.interpret.params import InterpretGPUParams   # JAX 0.10 (CI on 3.11)
        return InterpretGPUParams()
    return True


class JaxPallas(TorchArrays, TorchStream, Backend):
    family = "tile"
    extra = "pallas"
    variants = ("", "mosaic_gpu")
    variant_problems = {"": ("elementwise", "gemm", "segreduce", "attention", "scan"),   # noqa: RUF012
                        "mosaic_gpu": ("elementwise", "gemm", "segreduce", "attention", "gemm_fp8")}
    distributions = ("jax", "jaxlib", "jax-cuda13-plugin", "jax-cuda13-pjrt", "torch")
    min_compute_capability = (8, 0)
    min_driver_cuda = (13, 0)      # the jax-cuda13 plugin (the node's); its docs ask for driver >= 580
    cache_vars = {"JAX_COMPILATION_CACHE_DIR": "jax"}   # noqa: RUF012  the persistent compilation cache
    aot_target = "sm_90 (lowered to Triton IR / Mosaic GPU MLIR; no cubin)"

    def modules(self):
        return ("jax", "jax.experimental.pallas", "torch")

    def device(self):
        return "cpu" if interpreted() else "cuda"

    def load(self):
        # before jax is imported: XLA must not take 75% of the GPU (torch holds the lab's arrays),
        # and every compiled kernel goes to the persistent cache (warm compile times), however fast
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
        if interpreted():
            os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import torch
        if interpreted():
            return
        try:
            gpus = jax.devices("gpu")
        except RuntimeError as exc:
            raise Unavailable(f"jax {jax.__version__} sees no GPU: {exc}") from None
        if not torch.cuda.is_available():
            raise Unavailable(f"torch {torch.__version__} sees no CUDA device")
        cc = tuple(int(c) for c in gpus[0].compute_capability.split("."))
        if self.variant == "mosaic_gpu" and cc < (9, 0):
            raise Unavailable(f"Mosaic GPU needs compute capability 9.0 (sm_90a), not {gpus[0].compute_capability}")

    def supports(self, case):
        if interpreted() and (case.kind != "test" or math.prod(case.shape.values()) > INTERPRETED_WORK):
            return "Pallas interpreter: small test cases only"
        if self.variant == "mosaic_gpu" and interpreted() and _jax_version() < (0, 11):
            return "Mosaic GPU interpreter: JAX < 0.11 does not simulate TMA bounds (JAX 0.11 needs Python 3.12)"
        return None

    def aot_modules(self):
        return ("jax", "jax.experimental.pallas")

    def aot_environment(self):
        return {"JAX_PLATFORMS": "cpu"}

    def export(self, problem, case):
        """Lowered, not compiled: the StableHLO module (with the kernel's Triton IR or Mosaic GPU
        MLIR inside) for an H100, as bytes. No cubin: that step is XLA's, on a GPU."""
        return lower_for_h100(problem, case, self.variant).as_text().encode()



def _jax_version() -> tuple[int, ...]:
    from importlib.metadata import version
    return tuple(int(p) for p in version("jax").split(".")[:2])


def jax_dtype(name: str):
    import jax.numpy as jnp
    return {"float32": jnp.float32, "float16": jnp.float16, "bfloat16": jnp.bfloat16}[name]


H100 = ("NVIDIA H100 80GB HBM3", 132)      # what export() lowers for: device kind, SM count


def lower_for_h100(problem: str, case, variant: str, **options):
    """The case's jitted function (given `options`, a build's keywords) lowered for an abstract H100 on
    a machine without one: Pallas runs its whole lowering (Triton IR for the default variant, Mosaic
    GPU's MLIR for mosaic_gpu) into a StableHLO module. XLA's compile of that module to a cubin needs
    the CUDA plugin and a GPU."""
    import functools
    import importlib

    import jax
    from jax.sharding import AbstractDevice, AbstractMesh
    fn, specs = importlib.import_module(f"{__name__}.{problem}").specs(case)
    mesh = AbstractMesh((), (), abstract_device=AbstractDevice(device_kind=H100[0], num_cores=H100[1], platform="gpu"))
    with jax.sharding.use_abstract_mesh(mesh):
        traced = jax.jit(functools.partial(fn, variant=variant, **options)).trace(*specs)
        return traced.lower(lowering_platforms=("cuda",))


BACKEND = JaxPallas()


def compiled_call(fn, output: str, *tensors, static=()):
    """run(): `fn` (a function of JAX arrays, jitted and compiled here, in build) called on the torch
    tensors `tensors` through DLPack on every call, its result returned as {output: torch tensor}.
    `static` are extra JAX arrays made once (e.g. alpha on the device)."""
    import jax
    import torch

    def as_jax(t):
        return jax.dlpack.from_dlpack(t)

    compiled = jax.jit(fn).lower(*(as_jax(t) for t in tensors), *static).compile()

    def run():
        return {output: torch.from_dlpack(compiled(*(as_jax(t) for t in tensors), *static))}

    return run
