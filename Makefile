# `make test`: set up .venv and run the tests.  `make demo`: set up .venv and run the quick
# comparison (`ways run --quick`) on whatever hardware is here, writing reports/latest/ and its page.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HAS_GPU := $(shell nvidia-smi -L >/dev/null 2>&1 && echo yes)
# Without a GPU only the CPU pieces (and the cuTile / NVRTC / CuTe DSL ahead-of-time compilers) install;
# torch comes first as a pinned CPU-capable build so no unpinned requirement pulls gigabytes of
# CUDA wheels.
EXTRAS := $(if $(HAS_GPU),all,cpu,report,test,cutile-aot,nvrtc-aot,cute,ray,pallas-cpu,dask,helion,cutlass-ops)

TILELANG_SITE := $(abspath $(VENV))/tilelang-site
TILELANG_PINS := $(shell sed 's/\#.*//' requirements/tilelang-site.txt)

.PHONY: test demo clean

$(VENV)/.installed: pyproject.toml Makefile requirements/tilelang-site.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	# nvrtc[cutlass]: CUTLASS's C++ headers only; the wheel's Python deps (cuda-python, scipy, ...) are
	# not used and would move cuda-bindings back a release
	$(PY) -m pip install -q --no-deps nvidia-cutlass==4.2.0.0
	# TileLang in a site of its own, where the lab looks by default (or where WAYS_TILELANG_SITE says): its
	# apache-tvm-ffi < 0.1.13 clashes with the cute extra's, and its nvcc must come with the NVVM and crt of its
	# own CUDA release (pip takes newer ones)
	$(PY) -m pip install -q --no-deps --target $(TILELANG_SITE) $(TILELANG_PINS)
	touch $@

# the tests side by side, one a core (kernel builds and simulations take minutes of one core each), then
# those that time what they run, wait on timeouts or send signals, one at a time (tests/conftest.py)
test: $(VENV)/.installed
	$(PY) -m pytest -m "not alone" -n auto --dist worksteal; side=$$?; \
	$(PY) -m pytest -m alone; alone=$$?; \
	exit $$(( side || alone ))

# on a GPU, six implementations' workers at once (ways run --jobs: the GPU is one's alone while it times)
DEMO_JOBS ?= $(if $(HAS_GPU),6,1)

demo: $(VENV)/.installed
	$(VENV)/bin/ways run --quick --jobs $(DEMO_JOBS) --out reports/latest --html

clean:
	rm -rf $(VENV) reports/latest .pytest_cache .benchmarks
