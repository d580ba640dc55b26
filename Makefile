# Two commands on a fresh machine: `make demo` and `make test`.
export REVIEWBOT_VLLM_PYTHON ?= $(CURDIR)/.venv-vllm/bin/python

.PHONY: setup demo test lint
setup:
	./scripts/setup.sh

demo: setup
	.venv/bin/reviewbot demo

test: setup
	.venv/bin/python -m pytest -q

lint: setup
	.venv/bin/ruff check .
	.venv/bin/mypy
