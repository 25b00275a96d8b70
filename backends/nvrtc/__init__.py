"""CUDA C++ compiled at run time with NVRTC through cuda.core (Program / ProgramOptions / launch /
LaunchConfig): the kernels are C++ templates instantiated from Python (name_expressions) and
compiled straight to a cubin for the device's architecture. Arrays are CuPy arrays (bfloat16 as its
uint16 bits, which is what __nv_bfloat16 reads); CUB comes from the CCCL headers."""
import numpy as np

from backends.base import Backend, Unavailable, compiling, cupy_overwrite


class Nvrtc(Backend):
    family = "C++"
    extra = "nvrtc"
    distributions = ("cuda-core", "cuda-bindings", "nvidia-cuda-nvrtc", "nvidia-cuda-cccl", "cupy-cuda13x",
                     "nvidia-cutlass")
    aot_target = "sm_90a"         # without a GPU (CI) each test case is still compiled, for the H100 (wgmma: "a")

    variants = ("", "cutlass")
    variant_problems = {"cutlass": ("gemm",)}   # noqa: RUF012

    def modules(self):
        return ("cuda.core", "cupy") + (("cutlass_library",) if self.variant == "cutlass" else ())

    def aot_modules(self):
        return ("cuda.core",) + (("cutlass_library",) if self.variant == "cutlass" else ())

    def first_build_s(self, problem):
        return 50.0 if self.variant == "cutlass" else 1.0      # NVRTC over CUTLASS's templates: ~50 s

    def load(self):
        from cuda.core import Device
        try:
            Device(0).set_current()
        except Exception as exc:            # no driver or no device: say which
            raise Unavailable(f"cuda.core cannot open GPU 0: {exc}") from exc

    def to_device(self, a, dtype):
        import cupy
        return cupy.asarray(np.ascontiguousarray(a))

    def to_host(self, x):
        import cupy
        return cupy.asnumpy(x)

    def overwrite(self, dst, host, dtype):
        cupy_overwrite(dst, host)

    def stream(self, handle):
        from cuda.core import Stream
        return Stream.from_handle(handle)

    def export(self, problem, case):
        if self.variant == "cutlass":       # CUTLASS's GEMM: its own include dir and -default-device
            from backends.nvrtc import _gemm_cutlass
            return _gemm_cutlass.export_cubin(case, self.aot_target)
        from backends import implementation
        module = implementation(self.name, problem)
        return bytes(compile_cubin(module.SOURCE, module.kernel_name(case), self.aot_target).code)


CXX_TYPE = {"float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16"}


def compile_cubin(source: str, name: str | tuple[str, ...], arch: str, include_path=(), default_device=False,
                  int128=False):
    """`source` compiled by NVRTC to a cubin for `arch` (e.g. "sm_90"), with the template
    instance `name` (or each of a tuple of them) made available; `include_path` (e.g. CUTLASS's
    headers) and then the CUDA runtime headers (cuda_bf16.h, ...) and the CCCL headers (CUB) on the
    include path. `default_device` (nvrtc -default-device) makes unannotated functions device
    functions: CUTLASS's headers need it under NVRTC (unannotated constexpr helpers, and its
    unannotated Params-building code must run in a kernel). `int128`: __int128 in device code, and
    CUTLASS told to use it (CUTLASS_UINT128_NATIVE): its uint128_t otherwise divides only on a host
    compiler it recognises, and under NVRTC a 128-bit divide in device code traps."""
    names = (name,) if isinstance(name, str) else tuple(name)
    key = source, names, arch, tuple(include_path), default_device, int128
    if key not in _PROGRAMS:      # each case of a problem instantiates the same templates: compile them once
        _PROGRAMS[key] = _compile(source, names, arch, list(include_path), default_device, int128)
    return _PROGRAMS[key]


_PROGRAMS = {}      # compile_cubin's arguments -> ObjectCode, for this process


def _compile(source, names, arch, include_path, default_device, int128):
    from cuda.core import Program, ProgramOptions
    from cuda.pathfinder import find_nvidia_header_directory
    headers = {lib: find_nvidia_header_directory(lib) for lib in ("cudart", "cccl")}
    missing = [lib for lib, path in headers.items() if path is None]
    if missing:
        raise Unavailable(f"no {' or '.join(missing)} headers found (pip install '.[nvrtc]', or set CUDA_HOME)")
    options = ProgramOptions(std="c++17", arch=arch, include_path=[*include_path, *headers.values()],
                             device_as_default_execution_space=default_device, device_int128=int128,
                             define_macro="CUTLASS_UINT128_NATIVE" if int128 else None)
    with compiling():          # NVRTC runs on the CPU (CUTLASS's GEMM: ~50 s)
        return Program(source, "c++", options=options).compile("cubin", name_expressions=names)


def allow_shared_memory(kernel, nbytes: int) -> None:
    """Let `kernel` (a cuda.core Kernel) use `nbytes` of dynamic shared memory on the current device
    (beyond 48 KiB the driver needs this opt-in)."""
    from cuda.bindings import driver
    from cuda.core import Device
    err, = driver.cuKernelSetAttribute(driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       nbytes, kernel.handle, Device().device_id)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuKernelSetAttribute(max dynamic shared memory = {nbytes}): {err}")


def device_arch() -> str:
    from cuda.core import Device
    return f"sm_{Device().arch}"


BACKEND = Nvrtc()
