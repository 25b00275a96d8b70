"""A tool kept in a site of its own (TileLang's, for its clashing pins) is found where `make` installs
it without any variable set, and where it is missing the reason gives the command that installs it."""
import importlib.util
import os
import sys

import pytest

import backends


def test_tilelang_finds_its_site_in_the_environment_without_a_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("WAYS_TILELANG_SITE", raising=False)
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    tilelang = backends.get("tilelang")
    assert tilelang.search_paths() == {}
    (tmp_path / "tilelang-site").mkdir()
    site = str(tmp_path / "tilelang-site")
    assert tilelang.search_paths() == {"PYTHONPATH": site, "PATH": os.path.join(site, "nvidia", "cu13", "bin")}
    monkeypatch.setenv("WAYS_TILELANG_SITE", "/elsewhere")           # a variable still names another one
    assert tilelang.search_paths()["PYTHONPATH"] == "/elsewhere"


def test_a_missing_site_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.delenv("WAYS_TILELANG_SITE", raising=False)
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    if importlib.util.find_spec("tilelang"):
        pytest.skip("tilelang is installed in this environment itself")
    ok, why = backends.get("tilelang").available()
    assert not ok and why.startswith("missing tilelang") and \
        f"pip install --no-deps --target {tmp_path / 'tilelang-site'} -r requirements/tilelang-site.txt" in why
    assert "or name another site with WAYS_TILELANG_SITE" in why
    assert backends.get("array_api", "cupy").install_hint() == "pip install '.[cupy]'"
