"""CuTe DSL (nvidia-cutlass-dsl): CUTLASS's layouts, copies and MMAs as Python, compiled once per case
with cute.compile and launched through the compiled object. Arrays are torch tensors.

Two calling paths, as variants: "" hands the compiled function CuTe tensors made once from the torch
tensors (from_dlpack) and a CUstream; "tvm_ffi" compiles with --enable-tvm-ffi and then takes the
torch tensors themselves, checked by compiled code at each call.

Without a GPU the DSL targets sm_100a unless CUTE_DSL_ARCH is set before `import cutlass`; the
compile-only workers set it to aot_target, so CI compiles every test case for the H100, and point
CUTE_DSL_DUMP_DIR (also read at import) at a temporary directory for the cubins it keeps."""
import atexit
import shutil
import tempfile

from backends.base import Backend, TorchArrays, TorchCuda, compiling, torch_to_device


class CuteDsl(TorchArrays, TorchCuda, Backend):
    family = "tensor-core DSL"
    variants = ("", "tvm_ffi", "overlap")
    # the FP8 GEMM's e4m3 operands enter as torch's uint8 bits retyped (DLPack has no e4m3): not a call
    # whose torch tensors TVM-FFI checks against the kernel's types; `overlap` is the FP8 GEMM's schedule
    variant_problems = {"tvm_ffi": ("attention", "elementwise", "gemm", "scan", "segreduce"),  # noqa: RUF012
                        "overlap": ("gemm_fp8",)}
    extra = "cute"
    distributions = ("nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-base", "apache-tvm-ffi", "torch")
    min_compute_capability = (8, 0)
    aot_target = "sm_90a"          # the warpgroup-MMA GEMM and attention need the "a" (arch-specific) target

    def modules(self):
        return ("cutlass", "torch") + (("tvm_ffi",) if self.variant == "tvm_ffi" else ())

    def stream(self, handle):
        return handle or 0

    def aot_environment(self):
        # both read once, at `import cutlass`; export's --keep-cubin writes every cubin to the dump
        # directory, which would otherwise be the current one
        dump = tempfile.mkdtemp(prefix="ways-cute-dsl-")
        atexit.register(shutil.rmtree, dump, ignore_errors=True)
        return {"CUTE_DSL_ARCH": self.aot_target, "CUTE_DSL_DUMP_DIR": dump}

    def export(self, problem, case, **knobs):
        """The case's kernel (with an implementation's build knobs, if given) compiled for aot_target from
        CPU tensors of the case's shapes."""
        import numpy as np

        import problems
        from backends import implementation
        from problems.base import poison
        module, spec = implementation(self.name, problem), problems.get(problem)
        inputs = {k: torch_to_device(v, case.dtype, "cpu") if isinstance(v, np.ndarray) else v
                  for k, v in spec.make_inputs(case, 0).items()}
        outputs = {k: torch_to_device(poison(shape, dt), dt, "cpu")
                   for k, (shape, dt) in spec.output_spec(case).items()}
        compiled, _ = module.compile_case(case, inputs, outputs, self.variant, options="--keep-cubin", **knobs)
        return bytes(compiled.__cubin__)


def device_arch() -> str:
    """sm_XXa of GPU 0 as the DSL names it, or "" without one."""
    from backends.gpus import gpus
    found = gpus()
    return f"sm_{found[0]['compute_capability'].replace('.', '')}a" if found else ""


def launcher(compiled, cute_args, torch_args, stream, variant):
    """run() for the harness: the compiled function on the lab's stream, given CuTe tensors made
    once ("") or the torch tensors themselves ("tvm_ffi")."""
    if variant == "tvm_ffi":
        def run():
            compiled(*torch_args, stream)
    else:
        import cuda.bindings.driver as cuda
        cu_stream = cuda.CUstream(stream)      # a bare int would be packed as a 32-bit value

        def run():
            compiled(*cute_args, cu_stream)
    return run


def compile_once(jit_function, cute_args, variant, options="", **constants):
    """cute.compile on the given CuTe tensors (for the TVM-FFI path, the call's ABI is then torch's)."""
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_stream
    options = " ".join(filter(None, [options, "--enable-tvm-ffi" if variant == "tvm_ffi" else ""]))
    with compiling():          # CuTe DSL's JIT on the CPU (a fake stream: nothing launched)
        return cute.compile(jit_function, *cute_args, make_fake_stream(), **constants, options=options)


def as_cute(t, variant):
    """A torch tensor as a CuTe tensor: 16-byte aligned base; its shape and strides are compiled in
    (static), which is what lets the copies prove 16-byte vectors."""
    from cutlass.cute.runtime import from_dlpack
    return from_dlpack(t, assumed_align=16, enable_tvm_ffi=variant == "tvm_ffi")


BACKEND = CuteDsl()
