#!/usr/bin/env bash
# The main job: sets up .venv and the op, then runs the end-to-end demo (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"  # keep TensorFlow's C++ info/warning lines out of the demo
exec .venv/bin/memgraph-tf demo "$@"
