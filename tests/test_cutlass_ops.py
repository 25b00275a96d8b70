"""cutlass_ops without a GPU: the CUTLASS Operator API's discovery (get_operators, by metadata) finds
kernels for exactly the GEMM test cases the backend says it supports, and none for the others
(compile() needs the CUDA driver, so nothing is built here)."""
import importlib.util

import pytest

import problems

pytestmark = pytest.mark.skipif(importlib.util.find_spec("cutlass") is None
                                or importlib.util.find_spec("cutlass.operators") is None,
                                reason="nvidia-cutlass-operators not installed")


def test_discovery_agrees_with_supports():
    import torch

    from backends.cutlass_ops import TARGET_SM, gemm
    torch_dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
    found_any = False
    for case in problems.get("gemm").cases():
        if case.kind != "test":
            continue
        m, n, k, dt = case.shape["M"], case.shape["N"], case.shape["K"], torch_dtype[case.dtype]
        args = gemm.arguments(torch.empty(m, k, dtype=dt), torch.empty(k, n, dtype=dt), torch.empty(m, n, dtype=dt))
        found = gemm.ops.get_operators(args, target_sm=TARGET_SM)
        assert bool(found) == (gemm.supports(case) is None), (case.name, gemm.supports(case), len(found))
        found_any |= bool(found)
    assert found_any
