#!/usr/bin/env bash
# The main job: sets up .venv and the op, then runs the end-to-end demo on Cora (see README).
# It leaves the bundles, training.png / confusion.png / throughput.png and report.html in
# ./memgraph-tf-demo/ (or --out DIR); other options go to `memgraph-tf demo` (--dataset, --graph, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"  # keep TensorFlow's C++ info/warning lines out of the demo
exec .venv/bin/memgraph-tf demo "$@"
