"""Workers' JIT caches kept across runs (harness/run/caches.py): one folder per implementation, tool
version and implementation source, which a run's workers are pointed at."""
from harness.run import caches, fingerprint
from harness.run.registry import Impl
from tests.test_cli import ran


def test_a_workers_cache_folder_follows_its_tool_version_and_source(monkeypatch, tmp_path):
    monkeypatch.setenv(caches.CACHE_VAR, str(tmp_path))
    impl = Impl("array_api", "numpy", "segreduce")
    here = caches.worker_cache(impl, {"numpy": "2.3.5"})
    assert here == caches.worker_cache(impl, {"numpy": "2.3.5"}) and here.is_relative_to(tmp_path / "jit")
    assert caches.worker_cache(impl, {"numpy": "2.4.0"}) != here                      # a new tool version
    assert caches.worker_cache(Impl("array_api", "numpy", "scan"), {"numpy": "2.3.5"}) != here   # another file
    monkeypatch.setattr(fingerprint, "digest", lambda paths: "changed")
    assert caches.worker_cache(impl, {"numpy": "2.3.5"}) != here                      # its source changed


def test_runs_point_their_workers_at_the_kept_caches(monkeypatch, tmp_path):
    monkeypatch.setenv(caches.CACHE_VAR, str(tmp_path / "caches"))
    for out in ("one", "two"):
        ran(tmp_path / out, "-b", "array_api[numpy]", "-p", "segreduce", "--case", "1x1-float32", "--no-compile")
    from harness.measure import env
    kept = list((tmp_path / "caches" / "jit" / "array_api[numpy]").iterdir())
    assert kept == [caches.worker_cache(Impl("array_api", "numpy", "segreduce"), env.versions())]  # both runs
