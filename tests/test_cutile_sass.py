"""The claim behind cuTile's IEEE fp32 GEMM row (reports/evidence/cutile/), rechecked from the compiler
without a GPU: ct.mma on float32 compiles to FMUL + FADD and no FFMA, while the 16-bit GEMM and the
tf32x3 variant use the tensor cores (HGMMA). A newer cuTile that fused them would fail this test, and
the row's explanation would need another look."""
import importlib.metadata

import pytest

from experiments.cutile_sass import sass as cutile_sass


def _have_compiler() -> str | None:
    try:
        importlib.metadata.version("nvidia-cuda-tileiras")
        import cuda.tile  # noqa: F401
    except Exception as exc:
        return f"cuTile's compiler not installed (pip install '.[cutile-aot]'): {exc}"
    return None


@pytest.mark.skipif(_have_compiler() is not None, reason=str(_have_compiler()))
def test_fp32_mma_is_unfused_simt_and_16bit_uses_hgmma():
    fp32 = cutile_sass.counts(cutile_sass.cubin("float32", "", {"tile": (32, 32, 32)}, size=512))
    assert fp32["FFMA"] == 0 and fp32["FMUL"] > 0 and fp32["FADD"] > 0 and fp32["HGMMA"] == 0
    tf32x3 = cutile_sass.counts(cutile_sass.cubin("float32", "tf32x3", {}, size=512))
    bf16 = cutile_sass.counts(cutile_sass.cubin("bfloat16", "", {}, size=512))
    assert tf32x3["HGMMA"] > 0 and bf16["HGMMA"] > 0
