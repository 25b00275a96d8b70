"""The lab's sustained timing against an independent one, triton.testing.do_bench, on the lab's
own stream and implementation (`ways timer-check`): within 3% on a memory-bound and a
compute-bound case. GPU only."""
import json

import pytest

from tests.conftest import needs_gpu

pytestmark = [needs_gpu]


def test_lab_sustained_agrees_with_do_bench(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("triton.testing")
    from tests.test_cli import ways
    status = ways("timer-check", "--out", str(tmp_path)).returncode
    rows = json.loads((tmp_path / "crosscheck.json").read_text())
    print(json.dumps(rows, indent=1))
    assert status == 0, rows
