"""The LOC counter: logical lines, no comments/docstrings/blanks, kernel sources line by line."""
from harness.measure.loc import count_file, count_source

SAMPLE = '''"""Module docstring."""
import numpy as np  # a comment

# a comment line

SOURCE = r"""
extern "C" __global__ void k(float* a) {

    a[threadIdx.x] = 1.0f;
}
"""


@cuda.jit
def kernel(a, b,
           c):
    """Kernel docstring."""
    a[0] = (b[0] +
            c[0])


def build(case, inputs):
    x = [1,
         2]
    return x
'''


def test_counts_logical_lines_and_kernel_sources():
    loc = count_source(SAMPLE)
    # import 1; SOURCE 1 + 3 code lines; @cuda.jit, def, body: 3; build: def, x=, return: 3
    assert (loc.total, loc.kernel, loc.host) == (11, 7, 4)


def test_decorators_that_mark_kernels():
    for deco in ("@triton.jit", "@wp.kernel", "@ct.kernel", "@cute.kernel", "@wp.func", "@cuda.jit(device=True)"):
        assert count_source(f"{deco}\ndef k(a):\n    a[0] = 1\n").kernel == 3, deco
    assert count_source("@functools.cache\ndef f():\n    return 1\n").kernel == 0


def test_array_api_files_have_no_kernel_lines():
    from backends import source_path
    for p in ("segreduce", "elementwise", "gemm"):
        loc = count_file(source_path("array_api", p))
        assert loc.kernel == 0 and 3 <= loc.total <= 10


def test_backend_private_helpers_count_in_each_file_that_imports_them():
    from backends import source_path
    from harness.measure.loc import count_implementation
    path = source_path("numba_simt", "elementwise")
    helper = count_file(path.parent / "_common.py")
    assert count_implementation(path).total == count_file(path).total + helper.total
    assert count_implementation(path).kernel >= helper.kernel > 0


def test_a_variant_with_a_module_of_its_own_counts_that_module():
    from backends import source_path
    from harness.measure.loc import count_implementation, private_imports
    path = source_path("nvrtc", "gemm")
    own = path.parent / "_gemm_cutlass.py"
    assert path.parent / "_mma_sync_gemm.py" in private_imports(path)      # `from backends.nvrtc import _x`
    assert count_implementation(path, "cutlass").total == count_file(own).total
    helper, ptx = count_file(path.parent / "_mma_sync_gemm.py"), count_file(path.parent / "_ptx.py")
    assert private_imports(path)[-1] == path.parent / "_ptx.py"                  # a helper's own helper, once
    assert count_implementation(path).total == count_file(path).total + helper.total + ptx.total
