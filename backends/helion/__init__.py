"""Helion (PyTorch's tile DSL, compiled to Triton): kernels over torch tensors, launched on torch's
current stream. Two variants: the default one autotunes each case in build() (Helion's own search,
`autotune_effort` quick by default: WAYS_HELION_EFFORT), and that share of build time is reported
apart (`autotune_s`); it runs where a run names it (-b helion, -b 'helion[]'), not in the default
run, whose ten minutes its search alone would take twice over; `fixed` runs one hand-picked
helion.Config per kernel and dtype (no search), so its build is Helion's code generation plus
Triton's compile. Without a GPU, TRITON_INTERPRET=1
runs the generated Triton code (fixed configs) in Triton's interpreter on CPU tensors. (Helion's
own HELION_INTERPRET=1 eager mode runs elementwise and segreduce on the CPU too, but not the GEMM:
torch has no CPU kernel for `aten::mm.dtype`.)"""
import math
import os

from backends.base import Backend, TorchArrays, TorchStream, Unavailable, require_torch_cuda, timing_kernels

INTERPRETED_WORK = 2**24


def interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


class Helion(TorchArrays, TorchStream, Backend):
    family = "tile"
    extra = "helion"
    variants = ("", "fixed")
    opt_in_variants = ("",)     # its search holds the GPU 25-57 s a test case (H100): ~20 min over its cases
    distributions = ("helion", "triton", "torch")
    min_compute_capability = (8, 0)
    cache_vars = {"HELION_CACHE_DIR": "helion"}   # noqa: RUF012  autotune results (best configs)

    def modules(self):
        return ("helion", "triton", "torch")

    def device(self):
        return "cpu" if interpreted() else "cuda"

    def load(self):
        import torch
        if not interpreted():
            require_torch_cuda()
        try:
            import helion  # noqa: F401
        except ImportError as exc:          # e.g. helion 1.5.1 on torch 2.11 (IntelGPUError)
            raise Unavailable(f"helion does not import with torch {torch.__version__}: {exc}") from None
        if interpreted():
            interpreter_stand_ins()

    def first_build_s(self, problem):
        return 40.0 if self.variant == "" else 1.0       # the autotuner's search (effort quick): 25-57 s (H100)

    def build_times_kernels(self, problem):
        return self.variant == ""               # Helion's autotuner times its candidates in build()

    def supports(self, case):
        if not interpreted():
            return None
        if case.kind != "test" or math.prod(case.shape.values()) > INTERPRETED_WORK:
            return "Triton interpreter: small test cases only"
        return None



BACKEND = Helion()


def interpreter_stand_ins():
    """Two calls in Helion's generated Triton code that Triton's interpreter runs wrong or slowly, sent
    to what it runs well (TRITON_INTERPRET=1 only, looked up at each call, where the interpreter has
    patched triton.language):
    - libdevice.exp2 (Helion lowers torch.exp2 as Inductor does): the interpreter leaves
      triton.language.extra.libdevice's stubs as they are, so it returns None
      (triton-lang/triton#8825); tl.math.exp2 instead.
    - helion_triton_helpers.max_propagate_nan (torch.amax): a tl.reduce with a combine function of
      its own, which the interpreter calls once per element in Python (minutes for attention's S = 1000);
      tl.max instead, a NumPy reduction there (NaN ignored rather than propagated)."""
    import triton.language as tl
    from helion.runtime.triton import helpers
    from triton.language.extra import libdevice

    libdevice.exp2 = lambda x: tl.math.exp2(x)
    helpers.max_propagate_nan = lambda x, dim: tl.max(x, dim)


def prepared(kernel, args, scratch_args, fixed_config, variant):
    """Bind `kernel` to the case's arguments and settle its config here, in build: the fixed one,
    or an autotuned one (timed, on `scratch_args` so the outputs stay poisoned). Returns run()."""
    bound = kernel.bind(tuple(args))
    if variant == "fixed" or interpreted():
        bound.set_config(fixed_config)
    else:
        with timing_kernels():   # its search compiles and times candidates: the GPU alone throughout
            bound.autotune(tuple(scratch_args), force=False)   # uses HELION_CACHE_DIR's best config if there

    def run():
        bound(*args)

    return run


def effort() -> str:
    return os.environ.get("WAYS_HELION_EFFORT", "quick")
