"""What the kernels share. cuBLASDx's copies do no bounds checks: shapes that are not tile multiples
run on zero-padded copies (allocated in build, refreshed by each run, so the padding work is timed
too). Kernels beyond 48 KiB of dynamic shared memory need the opt-in set on the compiled function."""
import numba
from cuda.bindings import driver
from numba import cuda
from numba.cuda.cudadrv.devicearray import DeviceNDArray
from numba.cuda.typing.typeof import typeof

from backends.base import compiling


MAX_GRID_Y = 65535


@cuda.jit
def copy_2d(src, dst):
    j0, i0 = cuda.grid(2)              # x along a row: consecutive threads, consecutive addresses
    sj, si = cuda.gridsize(2)
    for i in range(i0, src.shape[0], si):
        for j in range(j0, src.shape[1], sj):
            dst[i, j] = src[i, j]


@cuda.jit
def copy_3d(src, dst):
    j0, i0, b0 = cuda.grid(3)          # x along a row: consecutive threads, consecutive addresses
    sj, si, sb = cuda.gridsize(3)
    for b in range(b0, src.shape[0], sb):
        for i in range(i0, src.shape[1], si):
            for j in range(j0, src.shape[2], sj):
                dst[b, i, j] = src[b, i, j]


def padded(array, tiles, least=None):
    """`array` itself when its shape is a multiple of `tiles` (and at least `least`), else a
    zero-filled larger array."""
    least = least or (0,) * array.ndim
    shape = tuple(max(-(-s // t) * t, m) for s, t, m in zip(array.shape, tiles, least, strict=True))
    if shape == array.shape:
        return array
    out = cuda.device_array(shape, dtype=array.dtype)
    out[:] = 0
    return out


def transposed(array):
    """The same bytes seen as the transpose (numba's .T launches a kernel that copies)."""
    return DeviceNDArray(array.shape[::-1], array.strides[::-1], array.dtype, gpu_data=array.gpu_data)


def copier(src, dst, stream):
    """A launcher copying src (2-D or 3-D) into the top-left of dst (compiled now), or a no-op if they
    are one."""
    if src is dst:
        return lambda: None
    kernel = copy_2d if src.ndim == 2 else copy_3d
    kernel.compile((numba.typeof(src), numba.typeof(dst)))
    # a grid's y and z extents stop at 65535 blocks (x at 2^31 - 1): the kernel loops beyond
    grid = ((src.shape[-1] + 15) // 16, *(min(g, MAX_GRID_Y) for g in ((src.shape[-2] + 15) // 16, *src.shape[:-2])))
    return lambda: kernel[grid, (16, 16, 1)[:src.ndim], stream](src, dst)


def compiled_with_smem(kernel, smem_bytes, *args):
    """Compile `kernel` for `args` now and let it use `smem_bytes` of dynamic shared memory (numba
    has no knob for the opt-in above 48 KiB: set the attribute on the compiled function)."""
    with compiling():          # numba + cuBLASDx's LTO link: minutes of CPU, no GPU work
        compiled = kernel.compile(tuple(typeof(a) for a in args))
        compiled.library.get_cubin()      # the link itself (get_cufunc below would do it holding the GPU)
    handle = compiled.library.get_cufunc().handle
    if isinstance(handle, driver.CUkernel):
        err, handle = driver.cuKernelGetFunction(handle)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuKernelGetFunction: {err}")
    err, = driver.cuFuncSetAttribute(
        handle, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem_bytes)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuFuncSetAttribute: {err}")
