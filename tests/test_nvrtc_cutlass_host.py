"""nvrtc[cutlass]'s host side without a GPU: the TMA descriptors' encode arguments are typed as
cuda.bindings takes them (plain ints in its lists raise TypeError before the driver is reached), the
encoded descriptor's bytes read back, and the nvcc column's program is the NVRTC one plus CUTLASS's
host adapter, configured without commas on nvcc's command line (nvcc splits -D values at commas)."""
from pathlib import Path

import pytest

from backends.nvrtc import _gemm_cutlass as cutlass_gemm


def test_encode_arguments_reach_the_driver():
    drv = pytest.importorskip("cuda.bindings.driver")
    t = cutlass_gemm.Tma(offset=0, dtype=9, rank=3, swizzle=3, address=1 << 20)
    t.dims[:3], t.strides[:3] = (8192, 8192, 1), (2, 16384, 1 << 27)
    t.box[:3], t.elem_strides[:3] = (64, 128, 1), (1, 1, 1)
    args = cutlass_gemm.encode_arguments(t)
    plain = [list(map(int, a)) if isinstance(a, list) else a for a in args]
    with pytest.raises(TypeError):    # what failed on the GPU: this check would see it
        drv.cuTensorMapEncodeTiled(*plain)
    try:
        drv.cuTensorMapEncodeTiled(*args)
    except TypeError as exc:
        pytest.fail(f"encode arguments rejected by cuda.bindings: {exc}")
    except Exception:                 # no driver here (or a CUDA error on a fake address): conversion passed
        pass


def test_descriptor_bytes():
    drv = pytest.importorskip("cuda.bindings.driver")
    assert cutlass_gemm.descriptor_bytes(drv.CUtensorMap()) == bytes(128)


def test_nvcc_program_is_the_nvrtc_one_plus_the_host_adapter():
    pytest.importorskip("cutlass_library")
    from experiments.cutlass_nvcc.build import HOST, nvcc_command, source
    text = source("bfloat16", cutlass_gemm.CONFIG)
    assert text.startswith(cutlass_gemm.SOURCE) and text.endswith(HOST)
    assert "#define LAB_T cutlass::bfloat16_t" in text and "#define LAB_CONFIG 128, 256, 64, 2, 1" in text
    cmd = nvcc_command("nvcc", Path("x.cu"), Path("x.so"), device_only=False)
    assert not [a for a in cmd if a.startswith("-D") and "," in a] and "-arch=sm_90a" in cmd and "-shared" in cmd
