"""What a backend is. Subclasses live in backends/<name>/__init__.py and import no GPU library
at module level: tools are imported inside methods, in the worker process that runs them."""
from __future__ import annotations

import contextlib
import copy
import math
import importlib.machinery
import importlib.util
import os
import sys

import numpy as np

from backends import gpus as gpu


JIT_CACHES = {
    "CUDA_CACHE_PATH": "cuda-driver", "NUMBA_CACHE_DIR": "numba", "TRITON_CACHE_DIR": "triton",
    "CUPY_CACHE_DIR": "cupy", "TORCHINDUCTOR_CACHE_DIR": "torchinductor", "CUTE_DSL_CACHE_DIR": "cute-dsl",
    "CUDA_TILE_CACHE_DIR": "cuda-tile", "WARP_CACHE_PATH": "warp", "XDG_CACHE_HOME": "xdg",
}


class StreamHandle:
    """A raw CUDA stream handle in the `__cuda_stream__` protocol that CuPy, torch, numba and
    cuda.core accept."""

    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


class Unavailable(RuntimeError):
    """The tool cannot run here; the message says why."""


class Backend:
    """A tool, bound to one of its variants: `backends.get(name, variant)` gives the object the
    harness uses (`self.variant` is set there), so no method takes a variant. What a subclass
    declares comes first; the implementation files it finds are described in docs/ARCHITECTURE.md."""
    name = ""                       # the folder's name, set by discovery
    variant = ""                    # set by bind(): the object stands for `name[variant]`
    variants: tuple[str, ...] = ("",)
    # a variant that exists for some problems only: variant -> those problems (else it exists for all)
    variant_problems: dict[str, tuple[str, ...]] = {}  # noqa: RUF012
    # variants a run includes only where it names the backend (-b B or -b 'B[v]'): too slow for the
    # default run's ten minutes, and another variant of the same tool is in it
    opt_in_variants: tuple[str, ...] = ()
    extra = ""                      # the pyproject extra that installs the tool
    distributions: tuple[str, ...] = ()   # package names whose versions go into the results
    min_compute_capability = (7, 0)
    min_driver_cuda = (12, 0)
    site_var: str | None = None     # an environment variable naming a site of the tool's own (search_paths)
    # where that site is when the variable is unset: a folder of the environment's prefix (sys.prefix),
    # and the requirements file that install_hint() names to fill it from
    site_default: str = ""
    site_requirements: str = ""
    cache_vars: dict[str, str] = {}  # noqa: RUF012  extra JIT cache env vars -> sub-folder of the cache dir
    # False where nothing of a build is kept on disk for a later process: a warm compile-time process
    # would build it all again, so the lab measures cold ones only and says why
    builds_cached = True
    aot_target = ""                 # e.g. "sm_90": export() compiles a case for it without a GPU
    # variants that stand in on the host for the tool's GPU code where there is no GPU (CI): a machine
    # with one leaves them out, their builds would take a GPU run's cores for rows that time nothing
    stand_in_variants: tuple[str, ...] = ()
    family = ""                     # no kernel, SIMT, tile, tensor-core DSL or C++: one colour each in figures

    # -- what a subclass declares ---------------------------------------------------------
    def modules(self) -> tuple[str, ...]:
        """Import names the variant needs (checked without importing them)."""
        return ()

    def extra_for(self) -> str:
        """The pyproject extra that installs what the variant needs."""
        return self.extra

    def device(self) -> str:
        """'cuda', or 'cpu' for a variant that runs on the host."""
        return "cuda"

    def load(self):
        """Import the tool and check the device; raise Unavailable with the reason."""

    def supports(self, case) -> str | None:
        """None, or why the tool (or its CPU stand-in) cannot take the case in any problem: a dtype it
        lacks, a size its interpreter cannot run. A kernel's own limits are its file's `supports`."""
        return None

    def to_device(self, a: np.ndarray, dtype: str):
        raise NotImplementedError

    def to_host(self, x) -> np.ndarray:
        """Device array -> NumPy in storage form (bfloat16 as its uint16 bits), dtype kept."""
        raise NotImplementedError

    def overwrite(self, dst, host: np.ndarray, dtype: str) -> None:
        """Write `host` (storage form) into the existing array `dst`, in place: the harness changes
        the inputs under a built implementation to see that run() reads them on every call.
        NumPy arrays here; a backend with other arrays overrides it."""
        if not isinstance(dst, np.ndarray):
            raise NotImplementedError(f"{type(self).__name__}.overwrite() cannot write a {type(dst).__name__}")
        np.copyto(dst, host)

    def search_paths(self) -> dict[str, str]:
        """Entries to put in front of PATH-like variables (PATH, PYTHONPATH) in this backend's
        worker processes only: a toolchain that must not reach the other backends. By default the
        site (a pip --target folder) named by the environment variable `site_var`, if set, and its
        CUDA wheels' bin folder."""
        site = os.environ.get(self.site_var) if self.site_var else None
        if not site and self.site_default and os.path.isdir(os.path.join(sys.prefix, self.site_default)):
            site = os.path.join(sys.prefix, self.site_default)
        return {"PYTHONPATH": site, "PATH": os.path.join(site, "nvidia", "cu13", "bin")} if site else {}

    def install_hint(self) -> str:
        """The command that installs what the variant needs: its site's where it has one, else its extra."""
        if self.site_default:
            return (f"pip install --no-deps --target {os.path.join(sys.prefix, self.site_default)} -r "
                    f"{self.site_requirements}, or name another site with {self.site_var}")
        return f"pip install '.[{self.extra_for()}]'" if self.extra_for() else ""

    def stream(self, handle: int):
        """The tool's own object for the harness's CUDA stream (given as a raw handle)."""
        return handle

    def stream_context(self, stream):
        """Entered around build() and run(): makes `stream` current for libraries that use one."""
        return contextlib.nullcontext()

    def release(self) -> None:
        """Give cached device memory back between cases (caching allocators keep it)."""

    def known_cause(self, problem: str, case) -> str:
        """Where this variant's output on `case` is outside the bound by its library's own arithmetic
        (not the lab's code), that cause in a few words: a wrong row shows it in every view."""
        return ""

    def first_build_s(self, problem: str) -> float:
        """About how long a first build takes, seconds (measured on the H100): `ways run --jobs`
        starts the slowest builders first, since each worker builds its cases one after another."""
        return 1.0

    def build_key(self, problem: str, case) -> object:
        """Cases with one key reuse one build within a process (most kernels are compiled per
        dtype): `ways run --jobs` gives a slow builder one worker per key."""
        return case.dtype

    def build_times_kernels(self, problem: str) -> bool:
        """Whether build() times kernels (an autotuner): with several workers on one GPU
        (`ways run --jobs`) it then needs the GPU alone, as the harness's own timing does."""
        return False

    def workspace_bytes(self, problem: str, case) -> int:
        """GPU memory a call takes beyond the case's own arrays (a library's temporaries), so that
        `ways run --jobs` starts no more workers than the GPU holds."""
        return 0

    # -- shared ---------------------------------------------------------------------------
    def bind(self, variant: str) -> Backend:
        """This backend as `name[variant]`."""
        bound = copy.copy(self)
        bound.variant = variant
        return bound

    def label(self) -> str:
        from backends import label
        return label(self.name, self.variant)

    def variants_of(self, problem: str) -> tuple[str, ...]:
        """The variants that exist for one problem (`variant_problems`)."""
        return tuple(v for v in self.variants if problem in self.variant_problems.get(v, (problem,)))

    def module(self, problem: str):
        """The implementation file of `problem` (importing it imports the tool)."""
        from backends import implementation
        return implementation(self.name, problem)

    def why_not(self, problem: str, case) -> str | None:
        """None, or why this implementation cannot take the case: the tool's reason, else its file's."""
        reason = self.supports(case)
        if reason:
            return reason
        supports = getattr(self.module(problem), "supports", None)
        return supports(case, self.variant) if supports else None

    def build(self, problem: str, case, inputs: dict, outputs: dict, stream, **options):
        """The implementation file's build() for this variant: its run()."""
        return self.module(problem).build(case, inputs, outputs, stream, variant=self.variant, **options)

    def available(self) -> tuple[bool, str]:
        """Cheap check, no import of the tool: packages present, GPU new enough. Never raises."""
        try:
            site = self.search_paths().get("PYTHONPATH")   # only this backend's workers get it
            missing = [m for m in self.modules() if not _installed(m, site)]
            if missing:
                hint = self.install_hint()
                return False, f"missing {', '.join(missing)}" + (f" ({hint})" if hint else "")
            if self.variant in self.stand_in_variants and gpu.gpus():
                return False, f"a CUDA device is here: the {self.variant} variant is for machines without one"
            if self.device() != "cuda":
                return True, ""
            found = gpu.gpus()
            if not found:
                return False, "no NVIDIA GPU (nvidia-smi lists none)"
            cc = gpu.version_tuple(found[0]["compute_capability"])
            if cc < self.min_compute_capability:
                need = ".".join(map(str, self.min_compute_capability))
                return False, f"compute capability {found[0]['compute_capability']} < {need}"
            driver = gpu.version_tuple(found[0]["driver_cuda"])
            if driver and driver < self.min_driver_cuda:
                need = ".".join(map(str, self.min_driver_cuda))
                return False, f"driver supports CUDA {found[0]['driver_cuda']} < {need}"
            return True, ""
        except Exception as exc:   # never raise from here: report it as the reason
            return False, f"availability check failed: {exc!r}"

    def aot_modules(self) -> tuple[str, ...]:
        """Import names export() needs (by default all the variant needs)."""
        return self.modules()

    def exports(self) -> bool:
        """Whether this variant can compile its kernels ahead of time here, without a GPU."""
        site = self.search_paths().get("PYTHONPATH")       # a toolchain in a site of its own
        return bool(self.aot_target) and all(_installed(m, site) for m in self.aot_modules())

    def aot_environment(self) -> dict[str, str]:
        """Environment variables export() needs set before the tool is imported."""
        return {}

    def export(self, problem: str, case) -> bytes:
        """The case's kernel compiled ahead of time for aot_target (a cubin); needs no GPU. By default
        the implementation file's export(case, variant, target)."""
        return self.module(problem).export(case, self.variant, self.aot_target)

    def cache_env(self, tmpdir: str) -> dict[str, str]:
        """Every JIT cache the lab knows of, and the backend's own, pointed into `tmpdir`: a worker
        with a fresh `tmpdir` compiles from nothing (the CUDA driver's PTX cache included)."""
        return {var: os.path.join(tmpdir, sub) for var, sub in {**JIT_CACHES, **self.cache_vars}.items()}


# what compiling() and timing_kernels() enter: no-ops until the harness's worker sets its own
_COMPILING = _TIMING_KERNELS = contextlib.nullcontext


def timing_kernels():
    """Around the part of a build() that times candidate kernels (an implementation's own search):
    with several workers on one GPU (`ways run --jobs`) no other worker's kernels run meanwhile, as
    in the harness's own timing. (A build that cannot separate its search from its compiling says
    so with `Backend.build_times_kernels` and holds the GPU throughout.)"""
    return _TIMING_KERNELS()


def compiling():
    """Around the part of a build() that only compiles (no GPU work, no memory copies): the tool's own
    compile, which the lab reports beside the whole build; with several workers on one GPU (`ways run
    --jobs`) another may time its kernels meanwhile."""
    return _COMPILING()


def not_expressible(reason: str):
    """(supports, build) of a problem the tool cannot express: every case is not applicable, with the
    tool's `reason`, and a build is never reached. `supports, build = not_expressible(...)` in the
    problem's file of that tool, whose docstring says why."""
    def supports(case, variant=""):
        return reason

    def build(case, inputs, outputs, stream, variant=""):
        raise NotImplementedError(reason)

    return supports, build


def on_build_steps(compiling_, timing_kernels_) -> None:
    """The harness's side of compiling() and timing_kernels(): factories of the context managers
    they enter (the backends know nothing of how the harness shares a GPU)."""
    global _COMPILING, _TIMING_KERNELS
    _COMPILING, _TIMING_KERNELS = compiling_, timing_kernels_


def _installed(module: str, site: str | None = None) -> bool:
    """Importable here, or (a package in `site`, which only the backend's workers get) from there."""
    try:
        if importlib.util.find_spec(module) is not None:
            return True
    except (ImportError, ValueError):
        pass
    return bool(site) and importlib.machinery.PathFinder.find_spec(module.split(".")[0], [site]) is not None


def cuda_simulator() -> bool:
    """True when numba's CUDA simulator stands in for the GPU (NUMBA_ENABLE_CUDASIM=1)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"


class NumbaBackend(Backend):
    """Tools whose kernels are numba-cuda kernels (or that take numba device arrays): arrays are
    numba device arrays (bfloat16 as its uint16 bits), the stream is numba's external stream.
    Under NUMBA_ENABLE_CUDASIM=1 the simulator runs the small float32 test cases on the CPU."""
    extra = "numba"
    family = "SIMT"
    distributions = ("numba", "numba-cuda")
    SIMULATED_ELEMENTS = 1 << 16       # the simulator runs each thread in Python: keep it small

    def modules(self):
        return ("numba", "numba.cuda")

    def device(self):
        return "cpu" if cuda_simulator() else "cuda"

    def load(self):
        from numba import cuda
        if not cuda.is_available():
            raise Unavailable("numba-cuda sees no CUDA device")
        return cuda

    def supports(self, case):
        small_fp32_test = case.dtype == "float32" and case.kind == "test" \
            and math.prod(case.shape.values()) <= self.SIMULATED_ELEMENTS
        if cuda_simulator() and not small_fp32_test:
            return "CUDA simulator: small float32 test cases only"
        return None

    def to_device(self, a, dtype):
        from numba import cuda
        return cuda.to_device(np.ascontiguousarray(a))

    def to_host(self, x):
        return x.copy_to_host()

    def overwrite(self, dst, host, dtype):
        dst.copy_to_device(np.ascontiguousarray(host))

    def stream(self, handle):
        from numba import cuda
        return cuda.default_stream() if handle is None else cuda.external_stream(handle)


class TorchArrays:
    """Mixin for backends whose arrays are torch tensors on the backend's device ('cuda' or 'cpu')."""

    def to_device(self, a, dtype):
        return torch_to_device(a, dtype, self.device())

    def to_host(self, x):
        return torch_to_host(x)

    def overwrite(self, dst, host, dtype):
        dst.copy_(torch_to_device(host, dtype, "cpu"))


class CompiledTorch:
    """Mixin for backends whose build() is torch.compile's first call, with a `cpu` variant on CPU
    tensors: one graph a case (dynamic=False), so a worker compiles one function for more cases
    than Dynamo's default of 8 recompiles, after which fullgraph=True fails the build."""
    recompile_limit = 64
    stand_in_variants = ("cpu",)

    def device(self):
        return "cpu" if self.variant == "cpu" else "cuda"

    def load(self):
        import torch
        if self.variant != "cpu" and not torch.cuda.is_available():
            raise Unavailable(f"torch {torch.__version__} sees no CUDA device")
        torch._dynamo.config.recompile_limit = self.recompile_limit


def require_torch_cuda() -> None:
    """Raise Unavailable where torch sees no CUDA device (a tool whose arrays or launches are torch's)."""
    import torch
    if not torch.cuda.is_available():
        raise Unavailable(f"torch {torch.__version__} sees no CUDA device")


class TorchCuda:
    """Mixin for backends that load only where torch sees a CUDA device."""

    def load(self):
        require_torch_cuda()


class TorchStream:
    """Mixin for backends that launch on torch's current stream: the harness's stream becomes it
    around build() and run() (no stream: the CPU interpreters' runs)."""

    def stream(self, handle):
        return None if handle is None else torch_stream(handle)

    def stream_context(self, stream):
        return contextlib.nullcontext() if stream is None else torch_stream_context(stream)


def torch_to_device(a: np.ndarray, dtype: str, device: str):
    """A torch tensor on `device` holding `a` (bfloat16 reinterpreted from its uint16 bits)."""
    import torch
    a = np.ascontiguousarray(a)
    host = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16) if dtype == "bfloat16" else torch.from_numpy(a)
    return host.to(device)


def torch_to_host(x) -> np.ndarray:
    """A torch tensor -> NumPy in storage form (bfloat16 as its uint16 bits)."""
    import torch
    if x.dtype == torch.bfloat16:
        return x.view(torch.int16).cpu().numpy().view(np.uint16)
    return x.cpu().numpy()


def cupy_overwrite(dst, host: np.ndarray) -> None:
    """Copy `host` into the CuPy array `dst` in place (bfloat16 through its uint16 bits)."""
    dst.view(host.dtype).set(np.ascontiguousarray(host))


def torch_stream(handle: int):
    import torch
    return torch.cuda.ExternalStream(handle)


def torch_stream_context(stream):
    import torch
    return torch.cuda.stream(stream)
