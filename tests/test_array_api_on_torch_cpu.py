"""The array-API implementation files are plain array-API code: run them on torch's CPU tensors
(bfloat16 included), which CI has, against the same references and checks."""
import numpy as np
import pytest

import backends
import problems
from problems.base import poison

torch = pytest.importorskip("torch", reason="torch (CPU build) not installed")
pytest.importorskip("array_api_compat", reason="array-api-compat not installed")


def to_torch(a, dtype):
    a = np.ascontiguousarray(a)
    return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16) if dtype == "bfloat16" else torch.from_numpy(a)


def to_numpy(t):
    return t.view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16 else t.numpy()


CASES = [(p, c) for p in problems.names() for c in problems.get(p).cases()
         if c.kind == "test" and np.prod(list(c.shape.values())) <= 2**21]


@pytest.mark.parametrize("name,case", [pytest.param(p, c, id=f"{p}-{c.name}") for p, c in CASES])
def test_array_api_file_on_torch_cpu(name, case):
    problem = problems.get(name)
    impl = backends.implementation("array_api", name)
    host = problem.make_inputs(case, case.seed)
    inputs = {k: to_torch(v, case.dtype) if isinstance(v, np.ndarray) else v for k, v in host.items()}
    outputs = {k: to_torch(poison(s, dt), dt) for k, (s, dt) in problem.output_spec(case).items()}
    got = impl.build(case, inputs, outputs, None)() or outputs
    problem.check({k: to_numpy(v) for k, v in got.items()}, problem.reference(case, host), case)
