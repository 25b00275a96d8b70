"""Shared test helpers: registry pairs as parameters, and a runner for small selections."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

import backends
from harness.measure import gpu
from harness.run import registry
from harness.run.caches import CACHE_VAR
from harness.run.plan import Options
from harness.run.runner import Run

ROOT = Path(__file__).resolve().parent.parent
# each test process's runs share JIT caches of their own, not the user's (harness/run/caches.py)
os.environ.setdefault(CACHE_VAR, tempfile.mkdtemp(prefix="ways-test-caches-"))
BAD_BACKENDS = str(ROOT / "tests" / "fixtures" / "bad_backends")
HAS_GPU = bool(gpu.gpus())
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs an NVIDIA GPU (nvidia-smi lists none)")


def impl_params():
    """One pytest param per registry pair, id 'backend[variant]-problem'."""
    return [pytest.param(i, id=f"{i.label}-{i.problem}") for i in registry.implementations()]


def dtype_sample(problem: str) -> tuple[str, ...]:
    """A problem's test cases where each costs a build of seconds: every case of its first dtype and
    the last (the largest) of each other, so every dtype's kernels and every odd shape are built."""
    import problems as problems_
    tests = [c for c in problems_.get(problem).cases() if c.kind == "test"]
    last_of_dtype = {c.dtype: c.name for c in tests}
    return tuple(c.name for c in tests if c.dtype == tests[0].dtype or last_of_dtype[c.dtype] == c.name)


def run_lab(tmp_path, problems=None, backends_=None, kinds=("test",), **kw) -> dict:
    opts = Options(problems=problems or [], backends=backends_ or [], kinds=kinds,
                   out=tmp_path / "out", measure_compile=kw.pop("measure_compile", False), **kw)
    return Run(opts).execute()


@pytest.fixture
def bad_backends(monkeypatch):
    """Makes the deliberately bad implementations under tests/fixtures discoverable (here and in workers)."""
    old = os.environ.get("WAYS_BACKEND_PATH")
    monkeypatch.setenv("WAYS_BACKEND_PATH", BAD_BACKENDS + (os.pathsep + old if old else ""))
    yield
    assert "faulty" in backends.names()


# modules that time what they run, wait on timeouts or send signals: `make test` runs them with no other
# test beside them (`-m alone`), the rest side by side (`-m "not alone" -n auto`)
ALONE = {"test_benchmarks", "test_cli", "test_cluster", "test_contract", "test_cpu_load", "test_device_sync",
         "test_gpu", "test_gpu_lock", "test_hang", "test_lanes", "test_measurements", "test_negative",
         "test_phases", "test_results", "test_slots", "test_sweep", "test_timer_check", "test_timing"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.stem in ALONE:
            item.add_marker(pytest.mark.alone)
