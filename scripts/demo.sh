#!/usr/bin/env bash
# The main job: sets up .venv and the op, then runs the end-to-end demo (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/memgraph-tf demo "$@"
