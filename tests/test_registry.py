"""Discovery: folders and files make the matrix; nothing is imported to list it."""
import pytest

import backends
import problems
from harness.run import registry


def test_problems_and_backends_are_discovered_from_files():
    assert problems.names() == ["attention", "elementwise", "gemm", "gemm_fp8", "scan", "segreduce"]
    assert "array_api" in backends.names()
    assert backends.problems_of("array_api") == problems.names()


def test_pairs_exist_iff_the_file_does():
    impls = registry.implementations()
    for i in impls:
        assert backends.source_path(i.backend, i.problem).is_file()
    labels = {i.label for i in impls}
    assert {"array_api[numpy]", "array_api[cupy]", "array_api[torch]"} <= labels


def test_selection_by_backend_and_variant():
    chosen = registry.select(["gemm"], ["array_api[torch]"])
    assert [(i.label, i.problem) for i in chosen] == [("array_api[torch]", "gemm")]
    assert len(registry.select(None, ["array_api"])) == 5 * len(problems.names())    # every variant, every problem


@pytest.mark.parametrize("spec,msg", [("nope", "unknown backend 'nope'"), ("array_api[julia]", "no variant 'julia'"),
                                      ("array_api[", "unknown backend")])
def test_bad_backend_names_list_valid_ones(spec, msg):
    with pytest.raises(ValueError, match=msg):
        registry.select(None, [spec])


def test_bad_problem_names_list_valid_ones():
    with pytest.raises(ValueError, match="valid: attention, elementwise, gemm, gemm_fp8, scan, segreduce"):
        registry.select(["fft"], None)


def test_availability_never_raises_and_says_why():
    for name in backends.names():
        for v in backends.get(name).variants:
            ok, why = backends.get(name, v).available()
            assert isinstance(ok, bool) and (ok or why)


def test_cache_env_points_every_known_jit_cache_into_the_given_dir(tmp_path):
    for name in backends.names():
        env = backends.get(name).cache_env(str(tmp_path))
        for var in ("CUDA_CACHE_PATH", "NUMBA_CACHE_DIR", "TRITON_CACHE_DIR", "CUPY_CACHE_DIR",
                    "TORCHINDUCTOR_CACHE_DIR", "CUTE_DSL_CACHE_DIR", "CUDA_TILE_CACHE_DIR", "WARP_CACHE_PATH"):
            assert env[var].startswith(str(tmp_path)), (name, var)


def test_a_tool_installed_only_in_its_own_site_is_available(tmp_path, monkeypatch):
    """TileLang lives in WAYS_TILELANG_SITE, seen only by its workers: the availability check must look
    there too (it did not, and the H100 run reported 'missing tilelang' with the site unpacked)."""
    from backends.base import Backend

    class SiteTool(Backend):
        name, variants, site_var = "site_tool", ("",), "WAYS_TEST_SITE"

        def modules(self):
            return ("ways_site_only_tool",)

        def device(self):
            return "cpu"

    tool = SiteTool()
    assert tool.available() == (False, "missing ways_site_only_tool")
    (tmp_path / "ways_site_only_tool").mkdir()
    (tmp_path / "ways_site_only_tool" / "__init__.py").write_text("")
    monkeypatch.setenv("WAYS_TEST_SITE", str(tmp_path))
    assert tool.available() == (True, "")


def test_an_opt_in_variant_runs_only_where_its_backend_is_named():
    """Helion's autotuned variant (its search holds the GPU 25-57 s a case) is not in the default run."""
    labels = lambda impls: {i.label for i in impls}     # noqa: E731
    assert "helion" not in labels(registry.select()) and "helion[fixed]" in labels(registry.select())
    assert labels(registry.select(None, ["helion"])) == {"helion", "helion[fixed]"}
    assert labels(registry.select(None, ["helion[]"])) == {"helion"}


@pytest.mark.parametrize("name", ["torch_compile", "flex_attention"])
def test_a_compiled_torch_function_may_recompile_for_every_case_of_a_worker(name, monkeypatch):
    """One graph a case (dynamic=False): a worker builds one compiled function for each of its cases,
    more than Dynamo's default 8 recompiles (fullgraph=True then fails the build, as it did on the GPU)."""
    torch = pytest.importorskip("torch")
    backend = backends.get(name)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    config = torch._dynamo.config           # a config module: set and restored by hand, not monkeypatched
    before, config.recompile_limit = config.recompile_limit, 8
    try:
        backend.load()
        most = max(len(problems.get(p).cases()) for p in backends.problems_of(name))
        assert config.recompile_limit >= most > 8
    finally:
        config.recompile_limit = before


@pytest.mark.parametrize("name", ["torch_compile", "flex_attention", "warp_tiles"])
def test_a_cpu_stand_in_variant_stays_out_of_a_gpu_run(name, monkeypatch):
    """On a machine with a CUDA device a CPU stand-in variant is unavailable, without importing its tool:
    on the H200 the compile-time processes' builds of torch.compile's held the GPU's lock and kept
    timers waiting (reports/evidence/one-sitting)."""
    from backends import gpus
    cpu = backends.get(name, "cpu")
    monkeypatch.setattr(gpus, "gpus", lambda: [{"name": "NVIDIA H200", "compute_capability": "9.0",
                                                "driver_cuda": "13.0"}])
    good, why = cpu.available()
    assert not good and "cpu variant is for machines without one" in why
    monkeypatch.setattr(gpus, "gpus", lambda: [])
    assert cpu.available()[0] or "missing" in cpu.available()[1]
