# Two commands on a fresh machine: `make demo` and `make test`. Each makes .venv if it is
# missing, installs the package (building the Cython core) and runs.
# `make fuzz SECONDS=N` runs every fuzz target in fuzz/ for N seconds each (default 60), over
# the seed corpus in tests/fuzz_corpus/ (new inputs go to build/fuzz/corpus/, crashes to
# build/fuzz/crashes/); `make test` runs each for a few seconds (tests/test_fuzz.py).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check --quiet
CORE := $(wildcard src/tfrecnp/_core/*.pyx src/tfrecnp/_core/*.pxd src/tfrecnp/_core/*.h) setup.py pyproject.toml
LINTED := src tests benchmarks fuzz
FUZZ := build/fuzz
FUZZ_TARGETS := $(basename $(notdir $(wildcard fuzz/fuzz_*.py)))
SECONDS ?= 60

.PHONY: demo test asan lint format bench clean fuzz fuzz-core fuzz-coverage docs wheel sdist

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

test: $(VENV)/.test-deps $(VENV)/.built $(FUZZ)/.built lint
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

# The documentation site (mkdocs.yml, pages in docs/), built strictly into build/site: a
# broken link, a page missing from the nav or a name mkdocstrings cannot find fails it.
$(VENV)/.docs-deps: pyproject.toml | $(PY)
	$(PIP) install --no-build-isolation -e '.[docs]'
	touch $@ $(VENV)/.built

docs: $(VENV)/.docs-deps $(VENV)/.built
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

# `make wheel`: a manylinux wheel in $(DIST)/. `python -m build` makes the sdist, then the wheel
# from it in an isolated build environment (so the sdist is proven complete, and build/ of the
# in-place core is never touched); `auditwheel repair` (patchelf) checks the wheel needs no
# library beyond manylinux's, gives it the manylinux tag and strips the debug symbols (4.2 MB ->
# 1.0 MB). `make sdist`: the sdist alone.
DIST ?= dist
WHEEL_BUILD ?= build/wheel
$(VENV)/.release-deps: | $(PY)
	$(PIP) install "build>=1.2" "auditwheel>=6.1" "patchelf>=0.17"
	touch $@

wheel: $(VENV)/.release-deps
	rm -rf $(WHEEL_BUILD)
	$(PY) -m build --outdir $(WHEEL_BUILD) .
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m auditwheel repair --strip --wheel-dir $(DIST) \
		$(WHEEL_BUILD)/*.whl

sdist: $(VENV)/.release-deps
	$(PY) -m build --sdist --outdir $(DIST) .

# vahidk's tfrecord is a peer in the benchmarks (run in its own process, never with TensorFlow).
bench: $(VENV)/.test-deps $(VENV)/.built
	$(PIP) install tfrecord
	$(PY) benchmarks/run.py

# The core again, for the fuzz targets: compiled by clang with libFuzzer's coverage
# instrumentation (-fsanitize=fuzzer-no-link) into build/fuzz/core, and libFuzzer's runtime
# (clang's own archive) as a shared library beside it; TFRECNP_FUZZ_NATIVE=build/fuzz makes
# the targets load both, so edges of the compiled core guide the fuzzer too. clang comes
# from the system's packages when missing.
$(FUZZ)/.built: $(CORE) | $(PY)
	command -v clang >/dev/null || apt-get install -y -q clang || \
		(apt-get update -q && apt-get install -y -q clang)
	rm -rf $(FUZZ)/lib $(FUZZ)/tmp $(FUZZ)/core && mkdir -p $(FUZZ)/core
	CC=clang LDSHARED="clang -shared" CFLAGS="-fsanitize=fuzzer-no-link" \
		$(PY) setup.py -q build_ext --build-lib $(FUZZ)/lib --build-temp $(FUZZ)/tmp
	cp $(FUZZ)/lib/tfrecnp/_core/*.so $(FUZZ)/core/
	clang++ -shared -o $(FUZZ)/libfuzzer.so -Wl,--whole-archive \
		"$$(clang -print-file-name=libclang_rt.fuzzer_no_main-x86_64.a)" \
		-Wl,--no-whole-archive -lpthread
	touch $@

fuzz-core: $(FUZZ)/.built

fuzz: $(VENV)/.test-deps $(VENV)/.built $(FUZZ)/.built
	mkdir -p $(FUZZ)/crashes
	for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ)/corpus/$$t; \
		TFRECNP_FUZZ_NATIVE=$(FUZZ) $(PY) fuzz/$$t.py $(FUZZ)/corpus/$$t tests/fuzz_corpus/$$t \
			-max_total_time=$(SECONDS) -artifact_prefix=$(FUZZ)/crashes/$$t- || exit 1; \
	done

# Line coverage of the compiled core reached by the corpora (CORPUS holds a folder per
# target; the seed corpus is always added): the core built with gcc --coverage into
# build/fuzz-cov, every input replayed once, gcov's counts read back onto .pyx lines.
CORPUS ?= $(FUZZ)/corpus
fuzz-coverage: $(VENV)/.test-deps $(VENV)/.built
	rm -rf build/fuzz-cov && mkdir -p build/fuzz-cov/core
	CC=gcc LDSHARED="gcc -shared" CFLAGS="--coverage" LDFLAGS="--coverage" \
		$(PY) setup.py -q build_ext --build-lib build/fuzz-cov/lib --build-temp build/fuzz-cov/tmp
	cp build/fuzz-cov/lib/tfrecnp/_core/*.so build/fuzz-cov/core/
	for t in $(FUZZ_TARGETS); do \
		mkdir -p $(CORPUS)/$$t; \
		TFRECNP_FUZZ_NATIVE=build/fuzz-cov $(PY) fuzz/$$t.py -runs=0 \
			$(CORPUS)/$$t tests/fuzz_corpus/$$t 2>&1 | grep -E "^#[0-9]+.DONE" || exit 1; \
	done
	$(PY) fuzz/core_coverage.py build/fuzz-cov/tmp

clean:
	rm -rf build src/tfrecnp/_core/*.c src/tfrecnp/_core/*.so $(VENV)
