# Every target uses a local virtualenv (.venv) that it creates on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv envtest test lint bench bench-compare demo clean

venv: $(STAMP)

$(STAMP): pyproject.toml setup.cfg
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -e '.[test]'
	touch $(STAMP)

# Build (once; cached in ~/.cache/client_cache/envtest) the real kube-apiserver and etcd
# that the conformance suite runs against. Needs Go and the Go module proxy.
envtest: $(STAMP)
	$(PY) -m client_cache.testing.envtest build

test: $(STAMP)
	$(PY) -m pytest

# The workqueue controller on the embedded API server with a live view; with
# `make demo KUBECONFIG=path` it watches that cluster instead (read-only, no workload).
ifeq ($(origin KUBECONFIG),command line)
DEMO_ARGS := --kubeconfig $(KUBECONFIG)
endif
demo: $(STAMP)
	$(PY) examples/demo.py $(DEMO_ARGS)

lint: $(STAMP)
	$(PY) -m ruff check client_cache tests examples bench docs
	$(PY) -m mypy --strict client_cache

bench: $(STAMP)
	$(PY) -m bench.bench_queues
	$(PY) -m bench.bench_workqueue
	$(PY) -m bench.bench_wire
	$(PY) -m bench.bench_reflector
	$(PY) -m bench.bench_informer

# client_cache vs the kubernetes package's informer and Watch loops vs client-go (needs Go)
bench-compare: $(STAMP)
	$(PY) -m bench.bench_compare

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
