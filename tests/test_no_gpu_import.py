"""`import harness, problems, backends` and `ways list` work where no GPU library is installed:
run them in a subprocess that refuses every GPU library import."""
import subprocess
import sys

from tests.conftest import ROOT

BLOCKED = ["cupy", "torch", "numba", "cuda", "triton", "warp", "nvmath", "cutlass", "cuda_tile", "jax",
           "pynvml", "array_api_compat", "ml_dtypes"]
GUARD = f"""
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {BLOCKED!r}:
            raise ImportError('blocked GPU library: ' + name)
sys.meta_path.insert(0, Block())
"""


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", GUARD + code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_import_packages_without_gpu_libraries():
    r = _run("import harness, problems, backends, importlib, pkgutil\n"
             "for m in pkgutil.walk_packages(harness.__path__, 'harness.'):\n"
             "    if m.name != 'harness.__main__': importlib.import_module(m.name)\n"
             "import backends.array_api\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in " + repr(BLOCKED) + "))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_ways_list_without_gpu_libraries():
    r = _run("from harness.cli import main\nraise SystemExit(main(['list']))")
    assert r.returncode == 0, r.stderr
    assert "array_api[numpy]" in r.stdout and "segreduce" in r.stdout
