# Two commands on a fresh machine: `make demo` and `make test`. Each makes .venv if it is
# missing, installs the package (building the Cython core) and runs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check --quiet
CORE := $(wildcard src/tfrecnp/_core/*.pyx src/tfrecnp/_core/*.pxd src/tfrecnp/_core/*.h) setup.py pyproject.toml
LINTED := src tests benchmarks

.PHONY: demo test asan lint format bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip "setuptools>=77" wheel "Cython>=3.0" numpy

# The editable install compiles the core in place; it reruns when a .pyx changes.
$(VENV)/.built: $(CORE) | $(PY)
	$(PIP) install --no-build-isolation -e .
	touch $@

# torch first, on its own: asked for alone, `torch==2.13.0` takes the CPU build this kind of
# machine keeps on disk, but resolved together with the whole test extra pip backtracks into
# PyPI's CUDA build (7 GB in the venv); once installed, the CPU build satisfies the pin.
$(VENV)/.test-deps: pyproject.toml | $(PY)
	$(PIP) install "torch==2.13.0"
	$(PIP) install --no-build-isolation -e '.[test]'
	touch $@ $(VENV)/.built

demo: $(VENV)/.built
	$(VENV)/bin/tfrecnp demo

test: $(VENV)/.test-deps $(VENV)/.built lint
	$(PY) -m pytest

# The core built with AddressSanitizer + UBSan into build/asan/ (the in-place build untouched),
# running the tests that feed it hostile bytes; .ci/asan says how. `make asan TESTS=...` picks.
asan: $(VENV)/.test-deps $(VENV)/.built
	PY=$(PY) .ci/asan $(TESTS)

lint: $(VENV)/.test-deps
	$(PY) -m ruff check $(LINTED)
	$(PY) -m ruff format --check $(LINTED)

format: $(VENV)/.test-deps
	$(PY) -m ruff check --fix $(LINTED)
	$(PY) -m ruff format $(LINTED)

# vahidk's tfrecord is a peer in the benchmarks (run in its own process, never with TensorFlow).
bench: $(VENV)/.test-deps $(VENV)/.built
	$(PIP) install tfrecord
	$(PY) benchmarks/run.py

clean:
	rm -rf build src/tfrecnp/_core/*.c src/tfrecnp/_core/*.so $(VENV)
