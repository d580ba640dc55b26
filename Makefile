# Two commands on a fresh machine: `make demo` and `make test` (`make demo-real`: a real model).
export REVIEWBOT_VLLM_PYTHON ?= $(CURDIR)/.venv-vllm/bin/python

.PHONY: setup demo demo-real test test-fast lint image
setup:
	./scripts/setup.sh

demo: setup
	.venv/bin/reviewbot demo

demo-real: setup
	.venv/bin/reviewbot demo --model real

test: setup
	.venv/bin/python -m pytest -q -n 2 --dist loadgroup --durations=25

# every test but those of the real 1.5B model (no 1.1 GB download, no ~11 GB server)
test-fast: setup
	.venv/bin/python -m pytest -q -n 2 --dist loadgroup -m "not realmodel"

lint: setup
	.venv/bin/ruff check .
	.venv/bin/mypy

# The review side's container image (Containerfile), with buildah or docker, whichever is here.
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
REVISION := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# the remote's URL without any user:token@ in it
SOURCE := $(shell git config --get remote.origin.url 2>/dev/null | sed -E 's#^[a-z+]+://[^@/]*@#https://#')
image:
	@if command -v buildah >/dev/null; then \
	  buildah build --layers -f Containerfile --build-arg VERSION=$(VERSION) \
	    --build-arg REVISION=$(REVISION) $(if $(SOURCE),--build-arg SOURCE=$(SOURCE)) \
	    $(IMAGE_ARGS) -t reviewbot:$(VERSION) . ; \
	elif command -v docker >/dev/null; then \
	  docker build -f Containerfile --build-arg VERSION=$(VERSION) \
	    --build-arg REVISION=$(REVISION) $(if $(SOURCE),--build-arg SOURCE=$(SOURCE)) \
	    $(IMAGE_ARGS) -t reviewbot:$(VERSION) . ; \
	else echo "make image: install buildah or docker" >&2; exit 2; fi
