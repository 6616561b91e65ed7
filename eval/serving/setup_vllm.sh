#!/usr/bin/env bash
# Make the virtual environment for the vLLM backend's tests: vllm==0.33.0 (with its own CUDA
# torch; it installs and imports on a CPU-only machine) and greatgramma editable from this
# checkout. Never into the core python, whose CPU torch the rest of the suite uses.
# About 3.5 minutes and 9.4 GB on the 2-core machine. Usage:
#   bash eval/serving/setup_vllm.sh [VENV]        (default: /work/venvs/vllm)
#   VENV/bin/python -m pytest -q tests/test_vllm_backend.py
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${1:-/work/venvs/vllm}"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q vllm==0.33.0 "pytest>=7" hypothesis
"$venv/bin/python" -m pip install -q -e "$repo"
"$venv/bin/python" -c "import vllm, greatgramma; print('vllm', vllm.__version__, '| greatgramma from', greatgramma.__file__)"
echo "run: $venv/bin/python -m pytest -q $repo/tests/test_vllm_backend.py"
