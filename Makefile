# bgpadv — the two newcomer commands are `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint unit bench image image-deps helm system-deps venv clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

system-deps:
	bash scripts/install-system-deps.sh all

## image-deps: only what `make image` needs (buildah, mmdebstrap)
image-deps:
	bash scripts/install-system-deps.sh image

## helm: build the pinned helm the chart tests use (Go toolchain; cached in $${BGPADV_TOOLS_CACHE:-/var/cache/bgpadv/tools})
helm:
	bash scripts/build-helm.sh

## demo: build a local lab (FRR ToR + node namespaces + embedded API), run bgpadv, migrate a VM, tear down
## (bgpadv_lab is not installed: `python -m` from the checkout root puts it on sys.path)
demo: system-deps $(STAMP)
	$(PY) -m bgpadv_lab.demo

## test: install what the tests need, lint, and run every test (unit + lab against a real FRR; the chart tests build
## the pinned helm first when it is missing: scripts/build-helm.sh, minutes the first time)
test: system-deps $(STAMP) helm
	$(VENV)/bin/ruff check bgpadv bgpadv_lab tests bench
	$(VENV)/bin/ruff format --check bgpadv bgpadv_lab tests bench
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy
	$(PY) -m pytest -q -p no:cacheprovider tests

unit: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider tests -m "not lab and not image"

## image: build the container image localhost/bgpadv:<version> with buildah (IMAGE=... to tag it otherwise)
image: image-deps $(STAMP)
	bash scripts/build-image.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check bgpadv bgpadv_lab tests bench
	$(VENV)/bin/ruff format --check bgpadv bgpadv_lab tests bench
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

## bench: speed and memory figures (printed, never asserted)
bench: system-deps $(STAMP)
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .mypy_cache
	if [ -d .cache/containers ]; then \
	  buildah --root $(CURDIR)/.cache/containers/storage --runroot $(CURDIR)/.cache/containers/run \
	    --storage-driver vfs rm --all; \
	  buildah --root $(CURDIR)/.cache/containers/storage --runroot $(CURDIR)/.cache/containers/run \
	    --storage-driver vfs rmi --all; \
	fi
	rm -rf .cache
